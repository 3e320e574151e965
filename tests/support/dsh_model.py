"""A DSH-aware default behaviour for ``ScriptedModelServer``, and helpers to classify DSH's model requests.

DSH sends three kinds of chat requests to its model:

* **agent steps**: the DSH system prompt, the conversation, DSH's tools (``bash``, ``read``, ... plus the
  plugins' tools) and, as a user message, the "Current runtime context" snapshot;
* **title requests**: no tools, ``max_tokens`` 64, a system prompt asking for a session title (in parallel
  with the first step);
* **plugin calls** through ``ctx.llm``: for StrataGate the block summary, which forces the
  ``stratagate_summarize_block`` tool and carries a JSON payload with the block's ``transcript``.

``DshModel`` answers all three: titles get a short text; a step whose newest real message is a tool result
gets ``FINAL: <that result>``; a step that offers the test-chosen tool gets one call to it; a summary request
gets valid summary arguments derived from the transcript; anything else gets plain text.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable
from typing import Any

from support.model_server import Behaviour, Exchange, text, tool_call

SUMMARY_TOOL = "stratagate_summarize_block"
EXTRACTION_TOOL = "stratagate_extract_events"
RUNTIME_CONTEXT_HEAD = "Current runtime context."
MEMORY_ROW_HEAD = "StrataGate Memory recalled for this step:"  # the chat row's note (context/recalled.py NOTE_HEAD)
DSH_AGENT_HEAD = "You are an AI agent powered by DeepSeek Harness"
FINAL_PREFIX = "FINAL: "
NUDGE_MARK = "[StrataGate memory]"  # the shim's once-per-turn reminder (evidence.open_batches): restate the answer


def content_text(content: Any) -> str:
    """The text of an OpenAI message content (a string or a list of parts)."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(content_text(p.get("text") if isinstance(p, dict) else p) for p in content)
    return str(content)


def messages(body: dict[str, Any]) -> list[dict[str, Any]]:
    return [m for m in body.get("messages") or [] if isinstance(m, dict)]


def system_text(body: dict[str, Any]) -> str:
    return "\n".join(content_text(m.get("content")) for m in messages(body) if m.get("role") in ("system", "developer"))


def offered_tools(body: dict[str, Any]) -> list[str]:
    return [str((t.get("function") or {}).get("name")) for t in body.get("tools") or [] if isinstance(t, dict)]


def forced_tool(body: dict[str, Any]) -> str | None:
    choice = body.get("tool_choice")
    if isinstance(choice, dict):
        name = (choice.get("function") or {}).get("name") or choice.get("name")
        return str(name) if name else None
    return None


def is_runtime_context(message: dict[str, Any]) -> bool:
    return message.get("role") == "user" and content_text(message.get("content")).startswith(RUNTIME_CONTEXT_HEAD)


def is_memory_row(message: dict[str, Any]) -> bool:
    """The StrataGate Memory chat row's one-line note (it names the recalled ids; the memory is in the snapshot)."""
    return message.get("role") == "user" and content_text(message.get("content")).startswith(MEMORY_ROW_HEAD)


def is_injected(message: dict[str, Any]) -> bool:
    """Context a plugin or DSH added to the step, not something the user said: the snapshot or the memory row."""
    return is_runtime_context(message) or is_memory_row(message)


def summary_payload(body: dict[str, Any]) -> dict[str, Any] | None:
    """The block payload (``{"session", "turns", "transcript"}``) of a StrataGate summary request."""
    for message in messages(body):
        if message.get("role") != "user":
            continue
        raw = content_text(message.get("content")).strip()
        if not raw.startswith("{"):
            continue
        try:
            payload = json.loads(raw)
        except ValueError:
            continue
        if isinstance(payload, dict) and "transcript" in payload:
            return payload
    return None


def is_summary_request(body: dict[str, Any]) -> bool:
    if forced_tool(body) == SUMMARY_TOOL or offered_tools(body) == [SUMMARY_TOOL]:
        return True
    return "compress one block" in system_text(body) and summary_payload(body) is not None


def is_extraction_request(body: dict[str, Any]) -> bool:
    """StrataGate's event-extraction call (forced ``stratagate_extract_events``)."""
    return forced_tool(body) == EXTRACTION_TOOL or offered_tools(body) == [EXTRACTION_TOOL]


def is_title_request(body: dict[str, Any]) -> bool:
    return (
        not body.get("tools")
        and "title" in system_text(body).lower()
        and not is_summary_request(body)
        and not is_extraction_request(body)
    )


def is_agent_request(body: dict[str, Any]) -> bool:
    """An agent step of a DSH session (not a title request, not a plugin's own model call)."""
    if is_summary_request(body) or is_extraction_request(body) or is_title_request(body):
        return False
    return system_text(body).startswith(DSH_AGENT_HEAD) or "bash" in offered_tools(body)


def request_text(body: dict[str, Any]) -> str:
    """Every message text of a request (for "does the model see X" checks)."""
    parts = []
    for m in messages(body):
        parts.append(content_text(m.get("content")))
        for call in m.get("tool_calls") or []:
            parts.append(json.dumps(call))
    return "\n".join(parts)


def tool_messages(body: dict[str, Any]) -> list[dict[str, Any]]:
    return [m for m in messages(body) if m.get("role") == "tool"]


def summary_arguments(payload: dict[str, Any]) -> dict[str, Any]:
    """Valid ``stratagate_summarize_block`` arguments: key facts are the transcript's user lines."""
    transcript = str(payload.get("transcript") or "")
    turns = payload.get("turns") or [0, 0]
    lines = [ln.removeprefix("│ ") for ln in transcript.splitlines()]  # role lines arrive behind the quote bar
    users = [ln[len("User: ") :].strip() for ln in lines if ln.startswith("User: ")]
    users = [u[:400] for u in users if u]
    first = users[0] if users else "no user text"
    return {
        "title": f"Turns {turns[0]}-{turns[-1]}: {first}"[:120],
        "tags": ["e2e"],
        "summary": f"In turns {turns[0]}-{turns[-1]} the user said: {first}"[:2000],
        "key_facts": users[:20] or [f"turns {turns[0]}-{turns[-1]} had no user text"],
        "has_durable_facts": True,
    }


class _ThenSet:
    """Answer with ``then``, then set ``event`` (the reply has been written when it fires)."""

    def __init__(self, then: Behaviour, event: threading.Event) -> None:
        self.then = then
        self.event = event

    def respond(self, ex: Exchange) -> None:
        try:
            self.then.respond(ex)
        finally:
            self.event.set()


class DshModel:
    """Default behaviour (``server.default = DshModel(...)``) for a ScriptedModelServer behind DSH.

    ``tool``/``arguments``: the tool an agent step calls when it is offered (once per user message).
    ``before_step(body, index)``: called in the server thread before each agent step is answered; ``index`` counts
    the agent steps since ``before_step`` was assigned (0 = the first), e.g. to kill a process mid-turn.
    ``summary_answered`` is set once a block-summary request has been answered.
    """

    def __init__(
        self,
        tool: str | None = None,
        arguments: dict[str, Any] | None = None,
        *,
        answer: str = "DONE: no tool was needed.",
        title: str = "E2E session",
    ) -> None:
        self.tool = tool
        self.arguments = arguments or {}
        self.answer = answer
        self.title = title
        self._before_step: Callable[[dict[str, Any], int], None] | None = None
        self._hook_base = 0
        self._lock = threading.Lock()
        self.agent_steps = 0
        self.summaries = 0
        self.titles = 0
        self.extractions = 0
        self.errors: list[str] = []
        self.summary_answered = threading.Event()

    @property
    def before_step(self) -> Callable[[dict[str, Any], int], None] | None:
        return self._before_step

    @before_step.setter
    def before_step(self, hook: Callable[[dict[str, Any], int], None] | None) -> None:
        with self._lock:
            self._before_step = hook
            self._hook_base = self.agent_steps

    def __call__(self, body: dict[str, Any]) -> Behaviour:
        if is_summary_request(body):
            with self._lock:
                self.summaries += 1
            payload = summary_payload(body)
            if payload is None:
                self.errors.append("summary request without a JSON payload holding 'transcript'")
                return text("no payload")
            args = summary_arguments(payload)
            reply = tool_call(SUMMARY_TOOL, args) if SUMMARY_TOOL in offered_tools(body) else text(json.dumps(args))
            return _ThenSet(reply, self.summary_answered)
        if is_extraction_request(body):
            # Long-term events are not under test here: answer "nothing durable" so no job retries in the background.
            with self._lock:
                self.extractions += 1
            return tool_call(EXTRACTION_TOOL, {"events": []})
        if is_title_request(body):
            with self._lock:
                self.titles += 1
            return text(self.title)
        if not is_agent_request(body):
            return text(self.answer)
        with self._lock:
            hook, index = self._before_step, self.agent_steps - self._hook_base
            self.agent_steps += 1
        if hook is not None:
            hook(body, index)
        newest = next((m for m in reversed(messages(body)) if not is_injected(m)), {})
        if newest.get("role") == "tool":
            return text(FINAL_PREFIX + content_text(newest.get("content")))
        if newest.get("role") == "user" and NUDGE_MARK in content_text(newest.get("content")):
            said = [content_text(m.get("content")) for m in messages(body) if m.get("role") == "assistant"]
            return text(next((t for t in reversed(said) if t), self.answer))
        if newest.get("role") != "user" or not self.tool:
            return text(self.answer)
        if self.tool not in offered_tools(body):
            return text(f"TOOL-NOT-OFFERED {self.tool}; offered: {', '.join(offered_tools(body))}")
        return tool_call(self.tool, self.arguments)
