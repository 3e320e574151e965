"""A scripted agent for long, tool-heavy DSH sessions (the context-engine e2e test and the benchmark).

``ScriptedSession`` is a ``ScriptedModelServer`` default: each agent step finds the turn it belongs to (the newest
user message that is one of the scripted prompts), counts the tool results already in since that message, and
either calls the next scripted tool or, when the turn's plan is done, answers with text. A plan step is either a
fixed ``(tool, arguments)`` or a function of the request body (e.g. "decompress the first card you see"), which is
how a scripted model "reads" its context. Everything that is not an agent step (titles, StrataGate's block
summaries and extractions) goes to ``DshModel``.

``workspace(root)`` writes realistic files for the tools to read: pytest-style logs, Python sources and a config,
each with unique markers (``RUN-<n>-FAILURE-<code>``) so a later recall can be checked.
"""

from __future__ import annotations

import json
import re
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from support.dsh_model import DshModel, content_text, is_agent_request, messages, offered_tools
from support.model_server import Behaviour, text, tool_call

CARD_RE = re.compile(r"\[stratagate:card id=(c\d+)")
# compaction-basic's summarization call replays the conversation (same system prompt and tools) and ends with this.
STOCK_COMPACTION_HEAD = "You are now acting as a compaction engine"

StepFn = Callable[[dict[str, Any]], tuple[str, dict[str, Any]]]
PlanStep = tuple[str, dict[str, Any]] | StepFn


def bash(command: str, description: str = "Inspect project files") -> tuple[str, dict[str, Any]]:
    return "bash", {"command": command, "description": description}


@dataclass
class ScriptedTurn:
    prompt: str
    steps: list[PlanStep]
    answer: Callable[[dict[str, Any]], str] | str = "DONE."
    done_when: Callable[[dict[str, Any]], bool] | None = None  # answer early once this holds (after one step)


@dataclass
class ScriptedSession:
    turns: list[ScriptedTurn]
    fallback: DshModel = field(default_factory=DshModel)
    calls: list[tuple[int, str, dict[str, Any]]] = field(default_factory=list)  # (turn index, tool, arguments)
    stock_summaries: int = 0  # compaction-basic summarization calls answered
    answers: list[tuple[int, str]] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)

    def __post_init__(self) -> None:
        self._lock = threading.Lock()
        self._by_prompt = {t.prompt: i for i, t in enumerate(self.turns)}

    def turn_of(self, body: dict[str, Any]) -> tuple[int, int] | None:
        """(turn index, index of its user message in the request), from the newest scripted prompt."""
        msgs = messages(body)
        for i in range(len(msgs) - 1, -1, -1):
            m = msgs[i]
            if m.get("role") == "user" and content_text(m.get("content")) in self._by_prompt:
                return self._by_prompt[content_text(m.get("content"))], i
        return None

    def __call__(self, body: dict[str, Any]) -> Behaviour:
        if not is_agent_request(body):
            return self.fallback(body)
        msgs = messages(body)
        if msgs and content_text(msgs[-1].get("content")).startswith(STOCK_COMPACTION_HEAD):
            with self._lock:
                self.stock_summaries += 1
            return text(self.stock_summary(body))
        found = self.turn_of(body)
        if found is None:
            return text("DONE: no scripted turn.")
        index, at = found
        turn = self.turns[index]
        done = sum(1 for m in messages(body)[at:] if m.get("role") == "tool")
        finished = done > 0 and turn.done_when is not None and turn.done_when(body)
        if done < len(turn.steps) and not finished:
            step = turn.steps[done]
            name, args = step(body) if callable(step) else step
            if name not in offered_tools(body):
                with self._lock:
                    self.errors.append(f"turn {index}: tool {name} not offered")
                return text(f"TOOL-NOT-OFFERED {name}")
            with self._lock:
                self.calls.append((index, name, args))
            return tool_call(name, args)
        answer = turn.answer(body) if callable(turn.answer) else turn.answer
        with self._lock:
            self.answers.append((index, answer))
        return text(answer)

    def stock_summary(self, body: dict[str, Any]) -> str:
        """What a model writes for compaction-basic: the structure it asks for, with the user's requests and the
        commands run (a real summary of 100 tool outputs keeps their gist, not every detail in them)."""
        msgs = messages(body)[:-1]
        asks = [content_text(m.get("content")) for m in msgs if content_text(m.get("content")) in self._by_prompt]
        commands = []
        for m in msgs:
            for call in m.get("tool_calls") or []:
                try:
                    args = json.loads((call.get("function") or {}).get("arguments") or "{}")
                except ValueError:
                    args = {}
                commands.append(str(args.get("command") or args.get("id") or args.get("query") or ""))
        bullets = lambda items: "\n".join(f"- {i}" for i in items) or "- (none)"  # noqa: E731
        return (
            "## Primary Request and Intent\n" + bullets(asks) + "\n\n## Key Technical Concepts\n"
            "- pytest logs and Python modules of the project\n\n## Files and Code\n" + bullets(commands[-30:]) + "\n\n"
            "## Errors and Fixes\n- several test runs had failures\n\n## Pending Jobs\n- (none)\n\n"
            "## Current Work\n- reviewing test runs\n"
        )


# ----------------------------------------------------------------------------------------- reading the request


def tool_texts(body: dict[str, Any]) -> list[str]:
    return [content_text(m.get("content")) for m in messages(body) if m.get("role") == "tool"]


def card_ids(body: dict[str, Any]) -> list[str]:
    return [m.group(1) for t in tool_texts(body) for m in [CARD_RE.match(t)] if m]


def last_tool_text(body: dict[str, Any]) -> str:
    texts = tool_texts(body)
    return texts[-1] if texts else ""


def decompress_first_card(body: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    cards = card_ids(body)
    return "decompress", {"id": cards[0] if cards else "c0"}


# ----------------------------------------------------------------------------------------- workspace


def pytest_log(run: int, lines: int = 100) -> str:
    out = [f"============================= test session starts (run {run}) =============================="]
    out.append(f"platform linux -- Python 3.11.7, pytest-8.3.3, pluggy-1.5.0 -- run {run}")
    for n in range(lines):
        status = "FAILED" if n % 23 == 7 else "PASSED"
        out.append(f"tests/test_module_{n % 17}.py::test_case_{run}_{n:03d} {status} [{(n + 1) * 100 // lines:3d}%]")
    out.append(f"E   AssertionError: RUN-{run}-FAILURE-{run * 7919 % 10007:05d} expected 200, got 500")
    out.append(f"========== {lines // 23} failed, {lines - lines // 23} passed in {run * 1.7:.2f}s ==========")
    return "\n".join(out) + "\n"


def source_file(n: int, lines: int = 90) -> str:
    out = [f'"""Module {n}: request handlers (generated for the context benchmark)."""', "", "import json", ""]
    for i in range(lines // 3):
        out += [f"def handler_{n}_{i}(request):", f"    return json.dumps({{'module': {n}, 'handler': {i}}})", ""]
    return "\n".join(out) + "\n"


def workspace(root: Path, logs: int = 40, sources: int = 40) -> Path:
    """Write ``logs`` pytest logs (logs/run-<n>.log) and ``sources`` modules (src/module_<n>.py) under ``root``."""
    (root / "logs").mkdir(parents=True, exist_ok=True)
    (root / "src").mkdir(parents=True, exist_ok=True)
    for n in range(logs):
        (root / "logs" / f"run-{n}.log").write_text(pytest_log(n))
    for n in range(sources):
        (root / "src" / f"module_{n}.py").write_text(source_file(n))
    (root / "setup.cfg").write_text("[tool:pytest]\naddopts = -q\n" + json.dumps({"workspace": str(root)}) + "\n")
    return root
