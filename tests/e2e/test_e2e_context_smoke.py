"""Smoke test of the shim's context engine inside the real DeepSeek Harness (headless, two turns in one session via
``followup-plugin.mjs``): StrataGate's compaction row replaces ``compaction-basic``, the sidecar's ``context.plan`` is
asked at turn end, and the tool cards it returns land in DSH's session so the next turn's model request shows the
card instead of the raw tool output (the full real-host scenarios are in the host engineer's tests).

The scripted model reads ``READS`` large files with DSH's ``read`` tool in turn 1 (one tool round each), then answers;
turn 2 (the follow-up) is answered at once.

``context-session-check.mjs`` lands cards, a fold and a block with the shim's code on DSH's real ``Session``, with
DSH's real compaction seam and DSH's own session/compaction invariant checkers watching every append (folds and
blocks need a sidecar plan that asks for them; this checks the brackets themselves against DSH's rules)."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

from support.dsh import REPO, DshHome, DshInstall, Run
from support.dsh_model import DshModel, content_text, is_agent_request, messages, offered_tools
from support.model_server import ScriptedModelServer, http_error, text, tool_call

E2E_DIR = Path(__file__).resolve().parent
FOLLOWUP_PLUGIN = E2E_DIR / "followup-plugin.mjs"
SESSION_CHECK = E2E_DIR / "context-session-check.mjs"
COMMAND_PLUGIN = E2E_DIR / "command-plugin.mjs"
READS = 6
FIRST_PROMPT = "Read the build logs one by one and tell me what failed."
SECOND_PROMPT = "Thanks. Anything else worth knowing?"
CARD_TAG = "[stratagate:card"


class Reader:
    """Agent steps: in the turn of ``FIRST_PROMPT``, one ``read`` per step until ``READS`` results are in, then a
    final answer; any other turn gets a plain answer. Everything else (titles, summaries) goes to ``DshModel``."""

    def __init__(self, files: list[Path]) -> None:
        self.files = files
        self.fallback = DshModel()

    def __call__(self, body: dict[str, Any]) -> Any:
        if not is_agent_request(body):
            return self.fallback(body)
        msgs = messages(body)
        humans = [
            i
            for i, m in enumerate(msgs)
            if m.get("role") == "user" and content_text(m.get("content")) in (FIRST_PROMPT, SECOND_PROMPT)
        ]
        if not humans or content_text(msgs[humans[-1]].get("content")) != FIRST_PROMPT:
            return text("DONE: nothing else.")
        done = sum(1 for m in msgs[humans[-1] :] if m.get("role") == "tool")
        if done >= READS or "read" not in offered_tools(body):
            return text("DONE: the linker failed in log 3.")
        return tool_call("read", {"file_path": str(self.files[done])})


def big_log(i: int) -> str:
    return "".join(f"[{i}:{n:04d}] step {n} of build {i}: compiling module_{n % 37} ... ok\n" for n in range(400))


def agent_steps(server: ScriptedModelServer, run: Run) -> list[dict[str, Any]]:
    first, last = run.request_range
    return [b for b in server.requests[first:last] if is_agent_request(b)]


def test_turn_end_cards_land_in_the_real_host(
    stratagate: DshHome, model_server: ScriptedModelServer, tmp_path: Path
) -> None:
    work = tmp_path / "project"
    work.mkdir()
    files = []
    for i in range(READS):
        path = work / f"build-{i}.log"
        path.write_text(big_log(i))
        files.append(path)
    model_server.default = Reader(files)
    # The sidecar must run this tree's code, not the venv's editable install (which points at the main checkout).
    stratagate.extra_env["PYTHONPATH"] = str(REPO / "sidecar")
    patch = stratagate.logs / "followup.patch.yml"
    patch.write_text(
        "- insert:\n"
        "    - id: e2e-followup\n"
        f"      name: {json.dumps(str(FOLLOWUP_PLUGIN))}\n"
        f"      config: {json.dumps({'followups': [SECOND_PROMPT]})}\n"
        # The plan deadline (5 s) is product behaviour; on a loaded machine the first plan (the whole surface to
        # archive) must not turn into "nothing landed". The row's other options keep their defaults.
        "- id: stratagate\n"
        "  config:\n"
        "    contextTimeoutMs: 60000\n"
    )

    run = stratagate.headless(
        FIRST_PROMPT, work, patches=[patch], requests=lambda: len(model_server.requests), timeout=120
    )

    assert run.returncode == 0, run.describe()
    assert "StrataGate compaction engine active" in run.stderr, f"our compaction row did not load\n{run.describe()}"
    assert "stock compaction runs instead" not in run.stderr, run.describe()
    steps = agent_steps(model_server, run)
    second = [b for b in steps if any(content_text(m.get("content")) == SECOND_PROMPT for m in messages(b))]
    assert second, f"no request of the follow-up turn\n{run.describe()}"
    texts = [content_text(m.get("content")) for m in messages(second[0])]
    tool_texts = [content_text(m.get("content")) for m in messages(second[0]) if m.get("role") == "tool"]
    assert any(t.startswith(CARD_TAG) or t.startswith("[stratagate:fold") for t in texts), (
        f"nothing of turn 1 was replaced before turn 2: {[t[:80] for t in texts]}\n{run.describe()}"
    )
    # The older rounds' raw output is gone from the request (cards or a fold stand in); the newest round is protected
    # (the newest round always whole; here each round is > 10 % of the window, so the cap leaves only that one).
    for i in range(READS - 1):
        assert not any(f"[{i}:0200] step 200 of build {i}" in t for t in texts), f"round {i} is still raw"
    assert tool_texts and not tool_texts[-1].startswith(CARD_TAG), tool_texts
    assert f"[{READS - 1}:0200] step 200 of build {READS - 1}" in tool_texts[-1]
    # DSH's stock summary was not needed.
    assert not any("<compacted-summary>" in content_text(m.get("content")) for b in steps for m in messages(b))


def test_cards_folds_and_blocks_pass_dshs_own_session_and_compaction_invariants(dsh_install: DshInstall) -> None:
    dsh_package = dsh_install.dest / "dsh" / "node_modules" / "@deepseek-ai" / "dsh" / "package.json"
    proc = subprocess.run(
        [str(dsh_install.node), str(SESSION_CHECK), str(dsh_package)], capture_output=True, text=True, timeout=120
    )
    assert proc.returncode == 0, f"{proc.stdout}\n{proc.stderr}"
    report = json.loads(proc.stdout)
    assert report["failures"] == []
    assert report["open"] is False, "no compaction bracket left open"
    landed = {entry["ref"]: entry for entry in report["landed"]}
    assert all("replacement_seq" in landed[ref] for ref in ("c1", "f2", "blk_3")), report["landed"]
    assert "split a tool call" in landed["f9"]["error"], "a span that would split a tool round is refused"
    manual = {entry["ref"]: entry for entry in report["manual"]}
    assert "replacement_seq" in manual["f10"], "a /compact fold between turns (turn null, command id) is valid"
    assert "open turn" in manual["c11"]["error"], "no tool/result replacement between turns"
    derived = report["derived"]
    assert derived[0].startswith("user: [stratagate:fold:t1 id=f2"), derived
    assert derived[1].startswith("user: [stratagate:fold:t2 id=f10"), derived
    assert derived[-2:] == ["user: now the tests", "assistant: ok"], "the latest user message is untouched"


def test_memory_command_runs_through_dshs_command_registry(
    stratagate: DshHome, model_server: ScriptedModelServer, tmp_path: Path
) -> None:
    """``/memory status`` typed by a person: DSH's command registry finds our command and the shim asks the sidecar
    (``context.command``) with the UI language; the sidecar's answer is the command's text (kind success): memory
    first, in Chinese here (the process locale)."""
    work = tmp_path / "project"
    work.mkdir()
    stratagate.extra_env["PYTHONPATH"] = str(REPO / "sidecar")
    out = tmp_path / "commands.jsonl"
    patch = stratagate.logs / "commands.patch.yml"
    config = {"commands": ["/memory status"], "out": str(out)}
    patch.write_text(
        f"- insert:\n    - id: e2e-commands\n      name: {json.dumps(str(COMMAND_PLUGIN))}\n"
        f"      config: {json.dumps(config)}\n"
    )
    run = stratagate.headless(
        "Hello.", work, patches=[patch], env={"LANG": "zh_CN.UTF-8"}, requests=lambda: len(model_server.requests)
    )
    assert run.returncode == 0, run.describe()
    records = [json.loads(line) for line in out.read_text().splitlines()]
    assert len(records) == 1, records
    result = records[0].get("result")
    assert result is not None, records
    assert result["kind"] == "success", result
    text = result["text"]
    # In the process locale's language (LANG zh_CN), about memory: events, blocks, graph, this turn's last recall.
    assert text.startswith("StrataGate 记忆（本项目）\n事件："), text
    for word in ("记忆块：", "知识图谱：", "最近一次回忆（", "后台任务：", "上下文窗口："):
        assert f"\n{word}" in text, (word, text)


class OverflowOnce(Reader):
    """``Reader``, but the step after the ``at``-th read is first refused as a context overflow (once)."""

    def __init__(self, files: list[Path], at: int) -> None:
        super().__init__(files)
        self.at = at
        self.refused = 0

    def __call__(self, body: dict[str, Any]) -> Any:
        if is_agent_request(body) and not self.refused:
            done = sum(1 for m in messages(body) if m.get("role") == "tool")
            if done == self.at:
                self.refused += 1
                return http_error(400, "This model's maximum context length is 65536 tokens.")
        return super().__call__(body)


def test_context_overflow_is_recovered_by_the_engine_before_the_stock_summary(
    stratagate: DshHome, model_server: ScriptedModelServer, tmp_path: Path
) -> None:
    """A provider overflow mid-turn: DSH's request-error hook asks our engine (phase ``overflow``), the sidecar's
    batch lands (cards for the finished rounds), and DSH retries the request on the smaller history."""
    work = tmp_path / "project"
    work.mkdir()
    files = []
    for i in range(READS):
        path = work / f"build-{i}.log"
        path.write_text(big_log(i))
        files.append(path)
    behaviour = OverflowOnce(files, at=5)
    model_server.default = behaviour
    stratagate.extra_env["PYTHONPATH"] = str(REPO / "sidecar")
    patch = stratagate.logs / "deadline.patch.yml"
    patch.write_text("- id: stratagate\n  config:\n    contextTimeoutMs: 60000\n")

    run = stratagate.headless(
        FIRST_PROMPT, work, patches=[patch], requests=lambda: len(model_server.requests), timeout=120
    )

    assert run.returncode == 0, run.describe()
    assert behaviour.refused == 1
    shim_log = (stratagate.logs / "shim.log").read_text()
    assert "context (overflow)" in shim_log, shim_log[-3000:]
    steps = agent_steps(model_server, run)
    retried = [b for b in steps if sum(1 for m in messages(b) if m.get("role") == "tool") == 5]
    assert len(retried) >= 2, "the refused request was retried"
    tool_texts = [content_text(m.get("content")) for m in messages(retried[-1]) if m.get("role") == "tool"]
    assert any(t.startswith(CARD_TAG) for t in tool_texts), [t[:60] for t in tool_texts]
    assert not any("<compacted-summary>" in content_text(m.get("content")) for b in steps for m in messages(b))
