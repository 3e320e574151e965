"""The e2e harness itself, checked with a tiny test-only plugin (tests/e2e/probe-plugin) instead of StrataGate:
pinned DSH install, tarball install into a profile, a headless turn against the scripted model server, request
inspection, and the web profile. When these pass and the StrataGate scenarios fail, look at the plugin."""

from __future__ import annotations

import json
import time
from pathlib import Path

from support.dsh import DshHome, free_port, tarball_files, wait_http_json
from support.dsh_model import (
    FINAL_PREFIX,
    DshModel,
    is_agent_request,
    is_title_request,
    offered_tools,
    request_text,
    tool_messages,
)
from support.dsh_web import running_web
from support.model_server import ScriptedModelServer


def test_probe_plugin_headless_turn(
    dsh_home: DshHome, probe_tgz: Path, model: DshModel, model_server: ScriptedModelServer, tmp_path: Path
) -> None:
    assert tarball_files(probe_tgz) == ["cordis.patch.yml", "index.js", "package.json"]
    dsh_home.add_plugin(probe_tgz, "headless")
    assert "stratagate-e2e-probe" in dsh_home.profile_manifest("headless")["dsh"]["profile"]["bundles"]
    model.tool, model.arguments = "e2e_probe", {"text": "hello e2e"}

    run = dsh_home.headless("Please call e2e_probe.", tmp_path / "work", requests=lambda: len(model_server.requests))

    assert run.returncode == 0, run.describe()
    assert not run.leftovers, run.describe()
    bodies = model_server.requests[run.request_range[0] : run.request_range[1]]
    steps = [b for b in bodies if is_agent_request(b)]
    assert len(steps) == 2, [offered_tools(b) for b in bodies]
    first, second = steps
    assert "e2e_probe" in offered_tools(first)
    assert "E2E-PROBE-CONTEXT" in request_text(first)  # runtime context reaches the model
    assert "Please call e2e_probe." in request_text(first)
    (result,) = tool_messages(second)
    value = json.loads(result["content"])
    assert value["probe"] == "ok" and value["echoed"] == "hello e2e"
    assert run.stdout.strip() == FINAL_PREFIX + result["content"]
    assert any(is_title_request(b) for b in bodies)
    assert len(dsh_home.session_ids()) == 1


def test_probe_plugin_tool_error_reaches_model(
    dsh_home: DshHome, probe_tgz: Path, model: DshModel, model_server: ScriptedModelServer, tmp_path: Path
) -> None:
    dsh_home.add_plugin(probe_tgz, "headless")
    model.tool, model.arguments = "e2e_probe", {"text": "__fail__"}

    run = dsh_home.headless("Please call e2e_probe.", tmp_path / "work", requests=lambda: len(model_server.requests))

    assert run.returncode == 0, run.describe()
    steps = [b for b in model_server.requests if is_agent_request(b)]
    assert tool_messages(steps[-1])[0]["content"] == "Error: probe refused __fail__"


def test_probe_plugin_web_route(dsh_home: DshHome, probe_tgz: Path, tmp_path: Path) -> None:
    dsh_home.add_plugin(probe_tgz, "web")
    port = free_port()
    web = dsh_home.start(["web", "--no-open", "--port", str(port)], tmp_path / "work", label="web")
    try:
        status, body = wait_http_json(f"http://127.0.0.1:{port}/api/e2e-probe/status", time.monotonic() + 45, proc=web)
        assert status == 200 and body["probe"] is True, body
        assert body["pid"] in [p.pid for p in dsh_home.processes()]
    finally:
        code = dsh_home.stop(web)
    assert code == 0, dsh_home.diagnostics()
    assert dsh_home.processes() == []


def test_probe_plugin_web_session_two_turns(
    dsh_home: DshHome, probe_tgz: Path, model: DshModel, model_server: ScriptedModelServer, tmp_path: Path
) -> None:
    """Two turns in ONE session through the web API (session.create / session.prompt / session.history)."""
    dsh_home.add_plugin(probe_tgz, "web")
    model.tool, model.arguments = "e2e_probe", {"text": "hello web"}
    work = tmp_path / "work"

    with running_web(dsh_home, work) as web:
        session = web.create_session(work)
        first = session.send("First turn: call e2e_probe.", requests=lambda: len(model_server.requests))
        second = session.send("Second turn: call e2e_probe again.", requests=lambda: len(model_server.requests))
        listed = [s for s in web.sessions() if s["sessionId"] == session.id]
        log = session.history()

    assert (first.number, first.end_reason) == (1, "completed"), first.events[-5:]
    assert (second.number, second.end_reason) == (2, "completed"), second.events[-5:]
    assert [e["data"]["turn"] for e in log if e["type"] == "turn/end"] == [1, 2]
    assert listed and listed[0]["running"] is False
    assert [e["data"]["name"] for e in first.of_type("tool/call")] == ["e2e_probe"]
    assert [e["data"]["name"] for e in second.of_type("tool/call")] == ["e2e_probe"]

    steps = [b for b in model_server.requests[second.request_range[0] : second.request_range[1]] if is_agent_request(b)]
    assert len(steps) == 2, [offered_tools(b) for b in steps]
    seen = request_text(steps[0])
    # The second turn's first request carries the first turn (same session, same history) and its own prompt.
    assert "First turn: call e2e_probe." in seen and "Second turn: call e2e_probe again." in seen
    assert len(tool_messages(steps[-1])) == 2
    assert dsh_home.processes() == []
