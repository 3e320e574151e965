"""The DSH adapter (stratagate/dsh/): raw DSH payloads in, the sidecar decides. The fold and query cases are the
ones tests/js used to run against shim-js/fold.js, on the same fixture (tests/js/session-log.json, a realistic DSH
0.1.0-rc.8 session log)."""

from __future__ import annotations

import json
import subprocess
import sys
from typing import Any

import pytest

from stratagate.dsh.events import RawEvent, parse_arguments, text_of_blocks
from stratagate.dsh.fold import fit_capture, fold_turn
from stratagate.dsh.query import HUMAN_MAX, TOOL_ROUND_MAX, latest_human_text, step_human_text, step_query
from stratagate.dsh.query import tool_round_text as _tool_round_text
from stratagate.dsh.session import SessionNamespaceParams, session_namespace
from stratagate.dsh.status import HostState, assemble_status
from support.sidecar import REPO, RpcFailure, SidecarClient

FIXTURE = json.loads((REPO / "tests" / "js" / "session-log.json").read_text())
BASH_TEXT = "FAIL api/user.test.ts\n  ✕ creates user\n[exit code: 1]"  # as DSH words a failing command
READ_ERROR = 'Error: cannot read "/work/proj/missing.ts": not found'
# The canonical value DSH's bash tool really gives tools/result (exit 3, stdout and stderr), recorded from the pinned
# host (tests/fixtures/dsh/README.md).
RECORDED_BASH_VALUE = json.loads((REPO / "tests" / "fixtures" / "dsh" / "tools" / "bash-exit-code.json").read_text())[
    "tools_result"]["result"]["value"]


def log() -> list[dict[str, Any]]:
    return json.loads(json.dumps(FIXTURE["events"]))


def raw(events: list[dict[str, Any]]) -> list[RawEvent]:
    return [RawEvent.model_validate(e) for e in events]


def turn_events(events: list[dict[str, Any]], n: int) -> list[dict[str, Any]]:
    start = next(i for i, e in enumerate(events) if e["type"] == "turn/start" and e["data"]["turn"] == n)
    end = next(i for i, e in enumerate(events) if e["type"] == "turn/end" and e["data"]["turn"] == n)
    return events[start : end + 1]


def folded(n: int, canonical: dict[str, Any] | None = None) -> dict[str, Any]:
    out = fold_turn(raw(turn_events(log(), n)), "session-main", canonical)
    assert out is not None
    return out


def prompt(text: str, ident: str | None = None) -> dict[str, Any]:
    return {"id": ident or f"new-{len(text)}", "role": "user", "content": [{"type": "text", "text": text}],
            "source": {"kind": "user"}}


def up_to(events: list[dict[str, Any]], pred: Any) -> list[RawEvent]:
    return raw(events[: next(i for i, e in enumerate(events) if pred(e)) + 1])


def tool_round_text(events: list[RawEvent]) -> str:
    return _tool_round_text(events)


# ---- fold -------------------------------------------------------------------------------------------------------

def test_one_record_per_turn_with_the_receipt():
    assert [folded(1)["receipt"], folded(2)["receipt"]] == ["dsh:session-main:turn:1", "dsh:session-main:turn:2"]
    assert folded(1)["session"] == "session-main"


def test_user_text_is_the_human_prompt_only():
    assert folded(1)["user"] == "Run the tests please. We use pnpm, not npm."
    assert folded(2)["user"] == "Fix it."


def test_assistant_text_joins_every_step_without_reasoning():
    assert folded(1)["assistant"] == "Running the test suite.\n\nThe api user test fails."


def test_tool_calls_with_parsed_arguments_results_and_error_flag_memory_tools_skipped():
    assert folded(1)["tools"] == [
        {"name": "bash", "arguments": {"command": "pnpm test"}, "result": BASH_TEXT,
         "is_error": False, "call_id": "call_bash"},
        {"name": "read", "arguments": {"file_path": "missing.ts"}, "result": READ_ERROR,
         "is_error": True, "call_id": "call_read"},
    ]


def test_timestamps_and_end_reason():
    t = folded(1)
    assert (t["started_at"], t["ended_at"], t["end_reason"]) == (
        "2026-05-01T10:00:00.010Z", "2026-05-01T10:00:00.070Z", "completed")


def test_aborted_turn_keeps_partial_text_and_the_unfinished_call_as_an_error():
    t = folded(2)
    assert t["end_reason"] == "aborted"
    assert t["assistant"] == "Looking at api/user"
    assert len(t["tools"]) == 1 and t["tools"][0]["name"] == "edit"
    assert t["tools"][0]["arguments"] == {"raw": '{"file_path":"api/user.ts"'}
    assert t["tools"][0]["is_error"] is True
    assert "turn ended (aborted)" in t["tools"][0]["result"]


def test_canonical_value_preferred_for_successful_calls_errors_keep_their_text():
    t = folded(1, {"call_bash": RECORDED_BASH_VALUE, "call_read": {"ignored": True}})
    assert t["tools"][0]["result"] == RECORDED_BASH_VALUE
    assert t["tools"][1]["result"] == READ_ERROR


def test_a_result_without_its_call_is_kept():
    events = turn_events(log(), 1)
    events = [e for e in events if not (e["type"] == "tool/call" and e["data"]["callId"] == "call_bash")]
    t = fold_turn(raw(events), "s")
    assert t is not None
    assert t["tools"][0] == {"name": "unknown", "arguments": None, "result": BASH_TEXT,
                             "is_error": False, "call_id": "call_bash"}


def test_empty_turn_is_nothing():
    events = [{"type": "turn/start", "time": 1, "data": {"turn": 9}},
              {"type": "turn/end", "time": 2, "data": {"turn": 9, "reason": {"kind": "aborted"}}}]
    assert fold_turn(raw(events), "s") is None
    assert fold_turn(raw([{"type": "user/message", "data": prompt("hi")}]), "s") is None  # no turn number


def test_unknown_event_types_and_fields_are_ignored():
    events = turn_events(log(), 1)
    events.insert(2, {"type": "future/thing", "seq": 99, "time": "not a number", "data": {"x": [1, 2]}, "extra": 1})
    assert fold_turn(raw(events), "session-main") == folded(1)


def test_helpers():
    blocks = [{"type": "text", "text": "a"}, {"type": "reasoning", "text": "x"},
              {"type": "tool-result", "content": [{"type": "text", "text": "b"}]}, {"type": "image"}]
    assert text_of_blocks(blocks) == "a\nb\n[image]"
    assert parse_arguments("") == {}
    assert parse_arguments('{"a":1}') == {"a": 1}
    assert parse_arguments("[1]") == [1]
    assert parse_arguments("nope") == {"raw": "nope"}
    assert parse_arguments("NaN") == {"raw": "NaN"}  # not JSON for DSH either


def test_oversized_captures_are_cut_with_a_marker_and_the_input_is_not_modified():
    big = "x" * 600_000
    params = {"session": "s", "receipt": "r", "user": "u", "assistant": "a",
              "tools": [{"name": "bash", "arguments": {"c": 1}, "result": big, "is_error": False}]}
    assert fit_capture(params, 10_000_000) is params
    fitted = fit_capture(params, 100_000)
    assert len(json.dumps(fitted, ensure_ascii=False).encode()) <= 100_000
    assert "more characters cut by StrataGate" in fitted["tools"][0]["result"]
    assert len(params["tools"][0]["result"]) == 600_000


# ---- the recall query of a step -----------------------------------------------------------------------------------

def test_step0_query_is_the_newly_claimed_prompt_not_the_previous_one():
    at_assembly = up_to(log(), lambda e: e["type"] == "turn/start" and e["data"]["turn"] == 2)
    assert step_human_text(at_assembly, []) == "Run the tests please. We use pnpm, not npm."
    assert step_human_text(at_assembly, [prompt("Fix it.")]) == "Fix it."
    assert step_query(at_assembly, [prompt("Fix it.")]) == "Fix it."  # no tool round of turn 1 leaks into turn 2


def test_step0_of_a_new_session():
    fresh = up_to(log(), lambda e: e["type"] == "turn/start")
    assert step_query(fresh, []) == ""
    assert step_query(fresh, [prompt("Which port does staging use?")]) == "Which port does staging use?"


def test_claimed_messages_the_log_holds_and_non_human_input_are_ignored():
    events = log()
    logged = next(e for e in events if e["type"] == "user/message" and e["data"]["source"]["kind"] == "user")["data"]
    step2 = up_to(events, lambda e: e["type"] == "step/start" and e["data"].get("step") == 2)
    assert step_human_text(step2, [logged]) == "Run the tests please. We use pnpm, not npm."
    steer = {"id": "n1", "role": "user", "content": [{"type": "text", "text": "[StrataGate memory] assess"}],
             "source": {"kind": "plugin", "plugin": "x"}}
    assert step_human_text(step2, [logged, steer]) == "Run the tests please. We use pnpm, not npm."
    assert step_human_text(step2, [logged, prompt("Use vitest instead.")]) == "Use vitest instead."


def test_human_text_is_cut_to_4000_characters():
    at = up_to(log(), lambda e: e["type"] == "turn/start" and e["data"]["turn"] == 2)
    assert HUMAN_MAX == 4000
    assert len(step_human_text(at, [prompt("word " * 2000)])) == 4000
    assert latest_human_text(raw(log()), 3) == "Fix"


def test_tool_round_words():
    events = log()
    assert tool_round_text(up_to(events, lambda e: e["type"] == "user/message")) == ""
    step2 = up_to(events, lambda e: e["type"] == "step/start" and e["data"].get("step") == 2)
    assert tool_round_text(step2) == "bash pnpm test FAIL api/user.test.ts ✕ creates user [exit code: 1]"
    assert step_query(step2, []) == (
        "Run the tests please. We use pnpm, not npm.\n\n"
        "bash pnpm test FAIL api/user.test.ts ✕ creates user [exit code: 1]")
    step3 = up_to(events, lambda e: e["type"] == "step/end" and e["data"].get("step") == 2)
    assert tool_round_text(step3) == f"read missing.ts {READ_ERROR}"


def test_tool_round_is_bounded_and_every_call_keeps_a_share():
    def big(n: int) -> dict[str, Any]:
        return {"type": "tool/result", "data": {"turn": 1, "step": 1, "message": {
            "source": {"callId": f"c{n}"},
            "content": [{"type": "tool-result", "content": [{"type": "text", "text": f"result{n} " * 3000}]}]}}}

    round_ = raw([
        {"type": "turn/start", "data": {"turn": 1}},
        {"type": "assistant/message", "data": {"turn": 1, "step": 1, "message": {
            "content": [{"type": "tool-call", "id": "c1"}, {"type": "tool-call", "id": "c2"}]}}},
        {"type": "tool/call", "data": {"turn": 1, "step": 1, "callId": "c1", "name": "bash",
                                       "arguments": '{"command":"cat a"}'}},
        {"type": "tool/call", "data": {"turn": 1, "step": 1, "callId": "c2", "name": "grep",
                                       "arguments": '{"pattern":"b", "n": 2.0, "i": true}'}},
        big(1), big(2),
    ])
    text = tool_round_text(round_)
    assert TOOL_ROUND_MAX == 2000 and len(text) <= 2000
    assert text.startswith("bash cat a result1")
    assert "\ngrep b 2 true result2" in text
    assert len(step_query(round_, [prompt("x" * 9000)])) <= HUMAN_MAX + 2 + TOOL_ROUND_MAX


# ---- namespace, status, prompt section ----------------------------------------------------------------------------

def test_session_namespace_falls_back_to_the_session_without_a_usable_cwd():
    p = session_namespace(SessionNamespaceParams(mode="project", session="s1", cwd="/work/proj"))
    assert p.namespace.startswith("project:proj:") and not p.fallback
    for cwd in (None, "", "  ", "relative/dir"):
        r = session_namespace(SessionNamespaceParams(mode="project", session="s1", cwd=cwd))
        assert (r.namespace, r.fallback) == ("session:s1", True)
    assert session_namespace(SessionNamespaceParams(mode="session", session="s1")).namespace == "session:s1"
    assert session_namespace(SessionNamespaceParams(mode="global", session="s1")).namespace == "global:default"
    team = SessionNamespaceParams(mode="global", session="s1", name="team")
    assert session_namespace(team).namespace == "global:team"


def test_status_picks_the_most_relevant_error_and_sums_the_queue():
    host = HostState(state="ready", spooled_turns=2, sidecar_error="crashed once", capture_error="later")
    info = {"version": "9", "db_path": "/x.db", "counts": {"jobs": {"queued": 3, "running": 1, "failed": 4}},
            "last_job_error": "job"}
    s = assemble_status(host, info)
    assert s.queue.model_dump() == {"depth": 6, "spooled_turns": 2, "jobs_queued": 3, "jobs_running": 1,
                                    "jobs_failed": 4}
    assert (s.last_error, s.db_path, s.version.sidecar) == ("crashed once", "/x.db", "9")
    assert assemble_status(HostState(), {"last_job_error": "job"}).last_error == "job"


def test_plugin_turn_events_json_is_what_the_sidecar_reads():
    out = subprocess.run([sys.executable, "-m", "stratagate", "turn-events"], capture_output=True, text=True,
                         check=True, env={"PYTHONPATH": str(REPO / "sidecar"), "PATH": "/usr/bin:/bin"})
    shipped = json.loads((REPO / "plugin" / "turn-events.json").read_text())
    assert json.loads(out.stdout) == shipped, "regenerate it: stratagate turn-events > plugin/turn-events.json"
    # The fold and the query give the same answers from the forwarded types alone.
    kept = [e for e in log() if e["type"] in shipped["event_types"]]
    assert [fold_turn(raw(turn_events(kept, n)), "session-main") for n in (1, 2)] == [folded(1), folded(2)]
    for i in range(len(log())):
        prefix = log()[: i + 1]
        only = [e for e in prefix if e["type"] in shipped["event_types"]]
        assert step_query(raw(only), []) == step_query(raw(prefix), [])


def test_plugin_prompt_json_is_the_sidecar_section():
    out = subprocess.run([sys.executable, "-m", "stratagate", "prompt-section"], capture_output=True, text=True,
                         check=True, env={"PYTHONPATH": str(REPO / "sidecar"), "PATH": "/usr/bin:/bin"})
    shipped = json.loads((REPO / "plugin" / "prompt.json").read_text())
    assert json.loads(out.stdout) == shipped, "regenerate it: stratagate prompt-section > plugin/prompt.json"
    assert shipped["name"] == "stratagate" and "memory_assess" in shipped["text"]


# ---- over the real sidecar ----------------------------------------------------------------------------------------

def capture_params(n: int, **extra: Any) -> dict[str, Any]:
    return {"namespace": "proj", "session": "session-main", "events": turn_events(log(), n), **extra}


async def test_capture_raw_folds_stores_and_is_idempotent(sidecar: SidecarClient):
    first = await sidecar.call("turn.capture_raw", capture_params(1, canonical={"call_bash": RECORDED_BASH_VALUE}))
    assert first["captured"] is True and first["duplicate"] is False
    assert first["receipt"] == "dsh:session-main:turn:1" and first["turn_id"].startswith("turn_")
    again = await sidecar.call("turn.capture_raw", capture_params(1))
    assert again["duplicate"] is True and again["turn_id"] == first["turn_id"]
    # The same turn sent folded (an older shim's spool) is the same receipt.
    assert (await sidecar.call("turn.capture", {"namespace": "proj", **folded(1)}))["duplicate"] is True
    hits = await sidecar.call("tools.call", {"namespace": "proj", "session": "session-main",
                                             "name": "memory_search_raw", "arguments": {"query": "exitCode pnpm"}})
    assert "exitCode" in json.dumps(hits)


async def test_capture_raw_skips_subagents_and_empty_turns(sidecar: SidecarClient):
    sub = await sidecar.call("turn.capture_raw", capture_params(1, origin="subagent"))
    assert sub["captured"] is False and "subagent" in sub["skipped"]
    kept = await sidecar.call("turn.capture_raw", capture_params(1, origin="subagent", capture_subagents=True))
    assert kept["captured"] is True
    empty = await sidecar.call("turn.capture_raw", {"namespace": "proj", "session": "s", "events": [
        {"type": "turn/start", "data": {"turn": 1}}, {"type": "turn/end", "data": {"turn": 1}}]})
    assert empty == {"captured": False, "receipt": None, "turn_id": None, "duplicate": False, "sealed_block_ids": [],
                     "skipped": "the turn holds nothing to store"}
    assert (await sidecar.call("system.info"))["counts"]["turns"] == 1


@pytest.mark.parametrize("params, field", [
    ({"namespace": "proj", "session": "s", "events": [{"data": {}}]}, "events.0.type"),
    ({"namespace": "proj", "session": "s", "events": "no"}, "events"),
    ({"namespace": "proj", "session": "s", "events": [], "oops": 1}, "oops"),
])
async def test_capture_raw_bad_params_are_one_clear_error(sidecar: SidecarClient, params: dict[str, Any], field: str):
    with pytest.raises(RpcFailure) as err:
        await sidecar.call("turn.capture_raw", params)
    assert err.value.code == -32602 and field in err.value.message


async def test_capture_raw_refuses_a_turn_the_capture_model_refuses(sidecar: SidecarClient):
    calls = [{"type": "tool/call", "data": {"callId": f"c{i}", "name": "bash", "arguments": "{}"}} for i in range(2001)]
    events = [{"type": "turn/start", "data": {"turn": 1}}, *calls, {"type": "turn/end", "data": {"turn": 1}}]
    with pytest.raises(RpcFailure) as err:
        await sidecar.call("turn.capture_raw", {"namespace": "proj", "session": "s", "events": events})
    assert err.value.code == -32602 and "invalid turn: tools" in err.value.message
    # A time DSH could not have written is the current time, not a refused turn.
    events = turn_events(log(), 1)
    events[0]["time"] = 10**18
    assert (await sidecar.call("turn.capture_raw", {"namespace": "proj", "session": "s", "events": events}))["captured"]


async def test_render_step_picks_the_query_from_the_raw_step(sidecar: SidecarClient):
    await sidecar.call("turn.capture_raw", capture_params(1))
    events = log()
    start = next(i for i, e in enumerate(events) if e["type"] == "turn/start" and e["data"]["turn"] == 2)
    step = {"namespace": "proj", "session": "other-session", "events": events[start : start + 1],
            "earlier": [e for e in events[:start] if e["type"] == "user/message"],
            "claimed": [prompt("Which package manager do the tests use?")]}
    text = (await sidecar.call("activation.render_step", step))["text"]
    direct = await sidecar.call("activation.render", {"namespace": "proj", "session": "other-session",
                                                      "query": "Which package manager do the tests use?"})
    assert text == direct["text"]
    # A subagent gets no recall: the sidecar decides from the forwarded origin.
    await sidecar.call("tools.call", {"namespace": "proj", "session": "session-main", "name": "memory_remember",
                                      "arguments": {"text": "The tests use the pnpm package manager.",
                                                    "type": "decision"}})
    text = (await sidecar.call("activation.render_step", step))["text"]
    assert "pnpm" in text
    sub = await sidecar.call("activation.render_step", {**step, "origin": "subagent"})
    assert sub == {"text": "", "tokens": 0, "longterm_tokens": 0, "block_ids": [], "event_ids": [], "node_ids": []}
    assert (await sidecar.call("activation.render_step", {**step, "origin": "cli"}))["text"] == text
    assert (await sidecar.call("activation.render_step", {"namespace": "none", "session": "s"}))["text"] == ""


async def test_namespace_for_session_and_system_status(sidecar: SidecarClient, tmp_path):
    ns = await sidecar.call("namespace.for_session", {"mode": "project", "session": "s1"})
    assert ns == {"namespace": "session:s1", "mode": "session", "label": "s1", "fallback": True}
    status = await sidecar.call("system.status", {"host": {"state": "ready", "shim_version": "0.1.0",
                                                           "spooled_turns": 1, "namespace_mode": "project"}})
    assert status["state"] == "ready" and status["source"] == "sidecar"
    assert status["db_path"] == str(tmp_path / "memory.db")
    assert status["version"]["shim"] == "0.1.0" and status["version"]["sidecar"]
    assert status["queue"]["spooled_turns"] == 1 and status["counts"]["turns"] == 0
    with pytest.raises(RpcFailure) as err:
        await sidecar.call("system.status", {"host": {"spooled_turns": -1}})
    assert err.value.code == -32602


# ---- the same output as the JS fold it replaces -------------------------------------------------------------------

EXPECTED = json.loads((REPO / "tests" / "js" / "session-log.expected.json").read_text())


def test_every_turn_folds_exactly_as_the_removed_shim_fold_did():
    events = log()
    ours = [fold_turn(raw(turn_events(events, n)), "session-main", EXPECTED["canonical"]) for n in (1, 2)]
    assert ours == EXPECTED["turns"]


def test_the_query_at_every_point_of_the_log_is_the_one_the_removed_shim_chose():
    events = log()
    claimed = [prompt("Fix the api user test.", "new")]
    for i, (plain, with_claimed) in enumerate(EXPECTED["queries"]):
        prefix = raw(events[: i + 1])
        assert (step_query(prefix, []), step_query(prefix, claimed)) == (plain, with_claimed), f"after event {i}"


async def test_a_search_pipelined_after_a_raw_capture_sees_the_turn(sidecar: SidecarClient):
    capture = await sidecar.request("turn.capture_raw", capture_params(1))
    search = await sidecar.request("tools.call", {"namespace": "proj", "session": "session-main",
                                                  "name": "memory_search_raw", "arguments": {"query": "pnpm"}})
    assert (await capture)["result"]["captured"] is True
    assert "pnpm" in json.dumps((await search)["result"])
