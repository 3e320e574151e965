"""StrataGate-Py inside the real DeepSeek Harness: the plugin tarball built from this repository with
``npm pack``, installed with ``dsh plugin add``, driven by ``dsh --profile headless`` (and ``dsh web``) against a
scripted OpenAI-compatible model server. Every assertion is about what DSH, the model and the sidecar's
database actually saw.

Contract used here (the shim's side): tools ``memory_get_blocks`` / ``memory_expand_block`` /
``memory_search_raw``; per-step memory as the runtime-context entry ``stratagate:memory``; receipts
``dsh:<session>:turn:<n>``; the database at ``$DSH_HOME/stratagate/memory.db``; ``STRATAGATE_PYTHON`` names the
interpreter (one that does not exist means "Python missing"); ``GET /api/stratagate/status`` in the web profile.
"""

from __future__ import annotations

import json
import signal
import time
from pathlib import Path
from typing import Any

import psutil

from support.dsh import DshHome, Run, free_port, tarball_files, wait_http_json
from support.dsh_model import (
    FINAL_PREFIX,
    NUDGE_MARK,
    DshModel,
    content_text,
    is_agent_request,
    is_runtime_context,
    messages,
    offered_tools,
    request_text,
    tool_messages,
)
from support.model_server import ScriptedModelServer

MEMORY_TOOLS = {"memory_get_blocks", "memory_expand_block", "memory_search_raw"}
DECISION = "We decided to use pnpm instead of npm for this repository."


# ----------------------------------------------------------------------------------------- helpers


def bodies(server: ScriptedModelServer, run: Run) -> list[dict[str, Any]]:
    first, last = run.request_range
    return server.requests[first:last]


def steps(server: ScriptedModelServer, run: Run) -> list[dict[str, Any]]:
    """The agent-step requests of one run (not titles, not the plugin's own summary calls)."""
    return [b for b in bodies(server, run) if is_agent_request(b)]


def runtime_context(body: dict[str, Any]) -> str:
    return "\n".join(content_text(m.get("content")) for m in messages(body) if is_runtime_context(m))


def headless(home: DshHome, server: ScriptedModelServer, task: str, cwd: Path, **kw: Any) -> Run:
    return home.headless(task, cwd, requests=lambda: len(server.requests), **kw)


def ok(run: Run) -> None:
    assert run.returncode == 0, run.describe()
    assert not run.leftovers, f"processes outlived the headless run:\n{run.describe()}"


def turns_of(home: DshHome, session: str) -> list[dict[str, Any]]:
    rows = home.query(
        "SELECT t.id, t.seq, t.receipt, t.end_reason, n.name AS namespace FROM turns t"
        " JOIN sessions s ON s.id = t.session_id JOIN namespaces n ON n.id = t.namespace_id"
        " WHERE s.key = ? ORDER BY t.seq",
        (session,),
    )
    return [dict(r) for r in rows]


def blocks_of(home: DshHome, session: str) -> list[dict[str, Any]]:
    rows = home.query(
        "SELECT b.id, b.status, b.l0_title, b.l2 FROM blocks b JOIN sessions s ON s.id = b.session_id"
        " WHERE s.key = ? ORDER BY b.seq",
        (session,),
    )
    return [dict(r) for r in rows]


def new_session(home: DshHome, before: list[str]) -> str:
    after = home.session_ids()
    fresh = [s for s in after if s not in before]
    assert len(fresh) == 1, f"expected one new DSH session, sessions before {before}, after {after}"
    return fresh[0]


def seed(home: DshHome, server: ScriptedModelServer, cwd: Path, text: str) -> tuple[Run, str]:
    """One plain turn (no tool call) so the directory's namespace holds a captured turn."""
    before = home.session_ids()
    run = headless(home, server, text, cwd)
    ok(run)
    return run, new_session(home, before)


# ----------------------------------------------------------------------------------------- scenarios


def test_package_installs_as_a_dsh_bundle(stratagate: DshHome, stratagate_tgz: Path) -> None:
    files = tarball_files(stratagate_tgz)
    manifest = json.loads((stratagate.path / "profiles/headless/node_modules/stratagate-py/package.json").read_text())
    patch = manifest["dsh"]["bundle"]["patch"]
    assert patch.removeprefix("./") in files, (patch, files)
    assert "sidecar/stratagate/__init__.py" in files and "pyproject.toml" in files
    assert not [f for f in files if "__pycache__" in f or f.endswith(".pyc")]


def test_tool_call_reaches_sidecar_and_result_reaches_model(
    stratagate: DshHome, model: DshModel, model_server: ScriptedModelServer, tmp_path: Path
) -> None:
    """(1) memory_search_raw called by the model is answered by the sidecar, and the model gets its JSON."""
    work = tmp_path / "project"
    seed(stratagate, model_server, work, "The staging server listens on port 8443.")
    model.tool, model.arguments = "memory_search_raw", {"query": "staging port"}

    run = headless(stratagate, model_server, "Which port does staging use?", work)

    ok(run)
    first, *rest = steps(model_server, run)
    assert MEMORY_TOOLS <= set(offered_tools(first)), offered_tools(first)
    assert rest, "the model never got the tool result (no second step)"
    (result,) = tool_messages(rest[0])
    content = content_text(result["content"])
    assert not content.startswith("Error:"), content
    value = json.loads(content)
    assert value["query"] == "staging port"
    assert any("8443" in hit["text"] for hit in value["hits"]), value
    assert run.stdout.strip() == FINAL_PREFIX + content
    # The retrieval was left open (no memory_assess / memory_record_use): one turn-end reminder, then the turn ends.
    nudged = [b for b in rest if NUDGE_MARK in request_text(b)]
    assert len(rest) == 2 and nudged == rest[1:] and value["batch_id"] in request_text(rest[1]), rest


def test_memory_crosses_sessions_in_the_same_directory_only(
    stratagate: DshHome, model: DshModel, model_server: ScriptedModelServer, tmp_path: Path
) -> None:
    """(2) Session A's decision reaches session B's model in the same directory, never C's in another one."""
    x, y = tmp_path / "repo-x", tmp_path / "repo-y"

    # Session A: one turn; with STRATAGATE_BLOCK_TURNS=1 it is sealed into a block at once.
    _, session_a = seed(stratagate, model_server, x, DECISION)
    (turn_a,) = turns_of(stratagate, session_a)
    assert turn_a["receipt"] == f"dsh:{session_a}:turn:1"
    (block_a,) = blocks_of(stratagate, session_a)
    assert block_a["status"] in ("pending", "ready")

    # Session B, same directory. If A's summary job did not finish before A exited, B's sidecar runs it
    # (host.llm.complete -> DSH's model -> this server); B's first step is held until that answer went out.
    a_ready_early = block_a["status"] == "ready"

    def hold_first_step(body: dict[str, Any], index: int) -> None:
        if index == 0 and not a_ready_early:
            model.summary_answered.wait(30)

    model.before_step = hold_first_step
    before = stratagate.session_ids()
    run_b = headless(stratagate, model_server, "Which package manager should I use here?", x)
    ok(run_b)
    session_b = new_session(stratagate, before)
    assert a_ready_early or model.summary_answered.is_set(), (
        "A's block summary never reached the model (host.llm.complete through DSH's model)"
    )

    steps_b = steps(model_server, run_b)
    assert steps_b, bodies(model_server, run_b)
    assert any("pnpm" in runtime_context(b) for b in steps_b), (
        "session B's model never saw A's decision in its runtime context:\n" + runtime_context(steps_b[0])
    )
    (block_a,) = blocks_of(stratagate, session_a)
    assert block_a["status"] == "ready", block_a
    assert "pnpm" in (block_a["l2"] or ""), block_a

    # Session C, another directory: nothing of A.
    model.before_step = None
    before = stratagate.session_ids()
    run_c = headless(stratagate, model_server, "Which package manager should I use here?", y)
    ok(run_c)
    session_c = new_session(stratagate, before)
    steps_c = steps(model_server, run_c)
    assert steps_c
    for body in steps_c:
        assert "pnpm" not in request_text(body).lower(), runtime_context(body)

    # The database agrees: A and B share a namespace, C has its own.
    ns = {s: turns_of(stratagate, s)[0]["namespace"] for s in (session_a, session_b, session_c)}
    assert ns[session_a] == ns[session_b] != ns[session_c], ns
    assert [t["receipt"] for t in turns_of(stratagate, session_b)] == [f"dsh:{session_b}:turn:1"]


def test_sidecar_killed_mid_turn_is_restarted_and_turn_stored_once(
    stratagate: DshHome, model: DshModel, model_server: ScriptedModelServer, tmp_path: Path
) -> None:
    """(3) kill -9 of the sidecar while the model is thinking: the shim restarts it, the tool still works and
    the turn is in the database exactly once."""
    work = tmp_path / "project"
    seed(stratagate, model_server, work, "The release branch is called trunk-stable.")
    killed: list[int] = []
    problems: list[str] = []

    def kill_sidecar(body: dict[str, Any], index: int) -> None:
        if index != 0:
            return
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:  # the sidecar may still be starting when the first step is sent
            found = stratagate.sidecars()
            if found:
                break
            time.sleep(0.05)
        else:
            problems.append("no `stratagate serve` process found during the first step")
            return
        for proc in found:
            killed.append(proc.pid)
            proc.send_signal(signal.SIGKILL)
        psutil.wait_procs(found, timeout=10)

    model.before_step = kill_sidecar
    model.tool, model.arguments = "memory_search_raw", {"query": "release branch"}
    before = stratagate.session_ids()
    task = "Which branch do we release from? (kill test)"

    run = headless(stratagate, model_server, task, work)

    ok(run)
    assert not problems, problems
    assert killed, "no sidecar was killed"
    session = new_session(stratagate, before)
    _, *rest = steps(model_server, run)
    assert rest, "the model never got the tool result"
    content = content_text(tool_messages(rest[0])[0]["content"])
    assert not content.startswith("Error:"), f"the restarted sidecar did not serve the tool: {content}"
    assert "trunk-stable" in content
    turns = turns_of(stratagate, session)
    assert [t["receipt"] for t in turns] == [f"dsh:{session}:turn:1"], turns
    user_rows = stratagate.query("SELECT COUNT(*) FROM messages WHERE role = 'user' AND content = ?", (task,))
    assert user_rows[0][0] == 1


def test_without_python_dsh_still_works_and_tools_explain_why(
    stratagate: DshHome, model: DshModel, model_server: ScriptedModelServer, tmp_path: Path
) -> None:
    """(4) No Python: the turn completes, and a memory tool answers with a clear "Python not found" error."""
    stratagate.extra_env["STRATAGATE_PYTHON"] = str(tmp_path / "nonexistent" / "python3")
    model.tool, model.arguments = "memory_search_raw", {"query": "anything"}

    run = headless(stratagate, model_server, "Search memory please.", tmp_path / "project")

    ok(run)
    first, *rest = steps(model_server, run)
    assert "memory_search_raw" in offered_tools(first), offered_tools(first)
    assert rest, "the model never got the tool result"
    content = content_text(tool_messages(rest[0])[0]["content"])
    low = content.lower()
    assert content.startswith("Error:"), content
    assert "memory" in low and "unavailable" in low, content
    assert "python" in low and ("not found" in low or "no python" in low), content


def test_web_profile_serves_status_and_stops_cleanly(stratagate: DshHome, stratagate_tgz: Path, tmp_path: Path) -> None:
    """(5) In `dsh web` the plugin loads, GET /api/stratagate/status answers JSON (state "ready" once the
    sidecar is up, with its pid), and SIGTERM stops dsh and the sidecar cleanly."""
    stratagate.add_plugin(stratagate_tgz, "web")
    port = free_port()
    web = stratagate.start(["web", "--no-open", "--port", str(port)], tmp_path / "project", label="web")
    try:
        status, body = wait_http_json(
            f"http://127.0.0.1:{port}/api/stratagate/status",
            time.monotonic() + 45,
            proc=web,
            until=lambda _, body: isinstance(body, dict) and body.get("state") == "ready",
        )
        assert status == 200, body
        sidecars = stratagate.sidecars()
        assert [p.pid for p in sidecars] == [body["pid"]], (body, sidecars)
        assert Path(body["db_path"]) == stratagate.db_path, body
    finally:
        code = stratagate.stop(web)
    assert code == 0, stratagate.diagnostics()
    _, alive = psutil.wait_procs(sidecars, timeout=15)
    assert not alive, f"sidecars still running after dsh web exited: {alive}"
    assert stratagate.processes() == []
