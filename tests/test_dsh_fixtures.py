"""The recorded DSH fixtures (tests/fixtures/dsh/, written by scripts/record-dsh-fixtures.py from the pinned host):
present and well-formed for every built-in tool the recorder lists, and accepted by every sidecar parser of DSH's
events and tool results — the capture fold, the recall query, the context engine's archive, the block renderers'
tool summaries. Fast: no DSH, no sidecar process."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from stratagate.blocks.render import render_l3, render_l4, render_l5, tool_outcome
from stratagate.blocks.source import SourceMessage
from stratagate.blocks.toolsummary import summarize_result
from stratagate.capture.models import CaptureParams
from stratagate.context.archive import classify, result_text
from stratagate.context.cards import card_body, card_tag
from stratagate.context.models import SurfaceEvent
from stratagate.dsh.events import TURN_EVENT_TYPES, RawEvent, result_call_id, text_of_blocks
from stratagate.dsh.fold import fit_capture, fold_turn
from stratagate.dsh.query import step_query, tool_round_text
from stratagate.safety.inert import inert

DSH = Path(__file__).resolve().parent / "fixtures" / "dsh"
MANIFEST = json.loads((DSH / "manifest.json").read_text())
PINNED = json.loads((Path(__file__).resolve().parents[1] / "scripts" / "dsh-install" / "package.json").read_text())
SCENARIOS = MANIFEST["scenarios"]
TASK = "RECORD-DSH-FIXTURES: call every built-in tool once, as scripted."
FINAL = "FIXTURES-RECORDED: every scripted tool call was made."


def load(name: str) -> dict[str, Any]:
    return json.loads((DSH / name).read_text())


def scenario(name: str) -> dict[str, Any]:
    return load(f"tools/{name}.json")


def raw(events: list[dict[str, Any]]) -> list[RawEvent]:
    return [RawEvent.model_validate(e) for e in events]


def of_type(doc: dict[str, Any], kind: str) -> dict[str, Any]:
    (event,) = [e for e in doc["session_events"] if e["type"] == kind]
    return event


def one_call_turn(doc: dict[str, Any]) -> list[RawEvent]:
    """A turn holding just this scenario's call: the recorded turn's start, prompt and end around its events."""
    main = load("turns/main.json")["events"]
    start, end = main[0], main[-1]
    human = next(e for e in main if e["type"] == "user/message" and e["data"]["source"]["kind"] == "user")
    return raw([start, human, *doc["session_events"], end])


def record_of(doc: dict[str, Any]) -> SourceMessage:
    """The stored tool record of a scenario, as capture keeps it (arguments and result as JSON text)."""
    value = doc["tools_result"]["result"]
    (folded,) = fold_turn(one_call_turn(doc), "s", canonical_of(doc))["tools"]  # type: ignore[index]
    return SourceMessage(
        id=1, turn_seq=1, role="tool", content="", tool_name=folded["name"], tool_call_id=folded.get("call_id"),
        tool_arguments=json.dumps(folded["arguments"]), tool_result=json.dumps(folded["result"]),
        is_error=bool(value["isError"]), created_at="2026-01-01T00:00:00.000Z",
    )


def surface_node(event: dict[str, Any]) -> SurfaceEvent:
    """A surface node as the shim's collectSurface (shim-js/context.js) sends it: DSH's ``surfaceOp: 'append'``
    string is dropped, only a replacement's object marker (and its ``sourceEventSeqs``) is forwarded."""
    node = {"seq": event["seq"], "type": event["type"], "data": event["data"]}
    if isinstance(event.get("surfaceOp"), dict):
        node.update(surfaceOp=event["surfaceOp"], sourceEventSeqs=event.get("sourceEventSeqs"))
    return SurfaceEvent.model_validate(node)


def canonical_of(doc: dict[str, Any]) -> dict[str, Any]:
    """The shim's canonical map for this call: ``tools/result``'s value, for successful calls only (index.js)."""
    hook = doc["tools_result"]
    return {} if hook["result"]["isError"] else {hook["exec"]["callId"]: hook["result"]["value"]}


# ---- present and well-formed ---------------------------------------------------------------------------------------

def test_recorded_from_the_pinned_dsh():
    assert MANIFEST["dsh_version"] == PINNED["dependencies"]["@deepseek-ai/dsh"], (
        "the pinned DSH changed: re-run scripts/record-dsh-fixtures.py")
    versions = {json.loads(path.read_text())["dsh_version"] for path in DSH.rglob("*.json")}
    assert versions == {MANIFEST["dsh_version"]}


def test_every_builtin_tool_has_a_recorded_scenario_and_every_file_is_listed():
    assert len(MANIFEST["builtin_tools"]) >= 20 and "bash" in MANIFEST["builtin_tools"]
    assert {s["tool"] for s in SCENARIOS} == set(MANIFEST["builtin_tools"])
    listed = {s["file"] for s in SCENARIOS} | set(MANIFEST["event_files"]) | set(MANIFEST["turn_files"])
    listed |= set(MANIFEST["hook_files"])
    on_disk = {str(p.relative_to(DSH)) for p in DSH.rglob("*.json")} - {"manifest.json"}
    assert listed == on_disk


def test_bash_is_recorded_succeeding_failing_truncated_and_in_the_background():
    bash = {s["scenario"] for s in SCENARIOS if s["tool"] == "bash"}
    assert {"bash-success", "bash-exit-code", "bash-long-output", "bash-background"} <= bash
    failing = scenario("bash-exit-code")["tools_result"]["result"]["value"]
    assert failing["exitCode"] == 3 and failing["stderr"]["text"] == "to-stderr\n"
    long = scenario("bash-long-output")["tools_result"]["result"]["value"]
    assert long["stdout"]["truncated"] is True and long["exitCode"] == 0


@pytest.mark.parametrize("entry", SCENARIOS, ids=[s["scenario"] for s in SCENARIOS])
def test_a_tool_scenario_is_one_call_its_result_and_the_hook_payload(entry: dict[str, Any]):
    doc = load(entry["file"])
    assert (doc["scenario"], doc["tool"]) == (entry["scenario"], entry["tool"])
    request, call, result = (of_type(doc, t) for t in ("assistant/message", "tool/call", "tool/result"))
    assert request["seq"] < call["seq"] < result["seq"]
    call_id = call["data"]["callId"]
    assert any(b["type"] == "tool-call" and b["id"] == call_id for b in request["data"]["message"]["content"])
    assert call["data"]["name"] == entry["tool"] and isinstance(call["data"]["arguments"], str)
    message = result["data"]["message"]
    assert message["source"] == {"kind": "tool", "callId": call_id}
    (block,) = message["content"]
    assert block["type"] == "tool-result" and block["toolCallId"] == call_id and block["isError"] is entry["is_error"]
    hook = doc["tools_result"]
    assert hook["exec"]["callId"] == call_id and hook["exec"]["name"] == entry["tool"]
    assert hook["exec"]["arguments"] == json.loads(call["data"]["arguments"])
    assert hook["result"]["content"] == block["content"], "tools/result content is what the model reads"
    if entry["is_error"]:
        assert "value" not in hook["result"] and hook["result"]["error"]["message"]
    else:
        assert "value" in hook["result"] and "error" not in hook["result"]


@pytest.mark.parametrize("name", MANIFEST["event_files"])
def test_every_recorded_event_kind_is_a_session_event_envelope(name: str):
    doc = load(name)
    event = doc["event"]
    assert event["type"] in TURN_EVENT_TYPES and isinstance(event["seq"], int) and isinstance(event["data"], dict)
    assert RawEvent.model_validate(event).type == event["type"]
    assert doc["session"]["origin"] == ("subagent" if name.startswith("events/child-") else None)


def test_the_agent_hooks_the_shim_reads_carry_what_it_reads():
    """shim-js/activation.js StepInbox.record reads ``payload.agent.session``, ``.message`` and ``.turn``;
    shim-js/nudge.js and the context engine read ``payload.agent``, ``.turn`` and ``.signal`` at turn-stopping."""
    main = load("turns/main.json")
    claimed = load("hooks/agent-inbox-claimed.json")["payloads"]
    assert [p["agent"]["session"]["id"] for p in claimed] == [main["session"]] * len(claimed)
    assert all(p["turn"] == 1 and p["message"]["role"] == "user" for p in claimed)
    human = [e["data"] for e in main["events"] if e["type"] == "user/message"]
    assert claimed[0]["message"] == human[0] and claimed[0]["message"]["source"] == {"kind": "user"}
    assert {p["message"]["source"]["kind"] for p in claimed[1:]} == {"subagent-settled"}
    assert all(p["message"] in human for p in claimed), "every claimed message is logged as a user/message"
    (stopping,) = load("hooks/agent-turn-stopping.json")["payloads"]
    agent = {"session": {"id": main["session"], "origin": None}}
    assert stopping == {"turn": 1, "signal": "[AbortSignal]", "agent": agent}


# ---- accepted by the sidecar's parsers ----------------------------------------------------------------------------

@pytest.mark.parametrize("entry", SCENARIOS, ids=[s["scenario"] for s in SCENARIOS])
def test_the_fold_keeps_every_recorded_call_with_its_result(entry: dict[str, Any]):
    doc = load(entry["file"])
    hook = doc["tools_result"]
    folded = fold_turn(one_call_turn(doc), "s", canonical_of(doc))
    assert folded is not None and folded["user"] == TASK
    (record,) = folded["tools"]
    assert record["name"] == entry["tool"] and record["call_id"] == hook["exec"]["callId"]
    assert record["arguments"] == hook["exec"]["arguments"]
    assert record["is_error"] is entry["is_error"]
    if entry["is_error"]:
        assert record["result"] == text_of_blocks(hook["result"]["content"])
        assert record["result"] == "Error: " + hook["result"]["error"]["message"]
    else:
        assert record["result"] == hook["result"]["value"]
    # Without the canonical value (the shim missed the hook) the model's text is kept.
    (plain,) = fold_turn(one_call_turn(doc), "s")["tools"]  # type: ignore[index]
    assert plain["result"] == text_of_blocks(hook["result"]["content"])
    CaptureParams.model_validate({"namespace": "proj", **fit_capture(folded)})


@pytest.mark.parametrize("entry", SCENARIOS, ids=[s["scenario"] for s in SCENARIOS])
def test_the_context_archive_reads_every_recorded_result_as_the_model_did(entry: dict[str, Any]):
    doc = load(entry["file"])
    request, result = of_type(doc, "assistant/message"), of_type(doc, "tool/result")
    names: dict[str, str] = {}
    assert request["surfaceOp"] == result["surfaceOp"] == "append"  # DSH's marker for an appended node
    assistant = classify(surface_node(request), len, names)
    tool = classify(surface_node(result), len, names)
    assert assistant is not None and [c.name for c in assistant.calls] == [entry["tool"]]
    assert tool is not None and tool.call_id == assistant.calls[0].call_id == result_call_id(result["data"]["message"])
    assert tool.tool_name == entry["tool"] and tool.is_error is entry["is_error"]
    text, is_error, call_id = result_text(result["data"]["message"])
    model_text = "".join(b["text"] for b in doc["tools_result"]["result"]["content"] if b["type"] == "text")
    assert (text, is_error, call_id) == (model_text, entry["is_error"], tool.call_id)


def argument_strings(value: Any) -> list[str]:
    """Every string of a JSON value (keys aside): a call's arguments, or what its result states."""
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        return [s for item in value.values() for s in argument_strings(item)]
    if isinstance(value, list):
        return [s for item in value for s in argument_strings(item)]
    return []


@pytest.mark.parametrize("entry", SCENARIOS, ids=[s["scenario"] for s in SCENARIOS])
def test_block_renderers_summarise_every_recorded_result(entry: dict[str, Any]):
    doc = load(entry["file"])
    msg = record_of(doc)
    outcome = tool_outcome(msg)
    assert outcome and len(outcome) <= 160 and "\n" not in outcome
    assert "structured result returned" not in outcome
    assert not outcome.startswith("failed: Error"), "one failure prefix, not two"
    failing = entry["is_error"] or entry["scenario"] == "bash-exit-code"  # DSH: exit 3 is a success with a code
    assert outcome.startswith("failed: ") is failing
    l4, l3 = f"Tool call: {entry['tool']} ({outcome})", f"Tool {entry['tool']} → {outcome}"
    assert l4 in render_l4([msg]) and l3 in render_l3([msg])
    # No raw arguments: an argument's words appear only where the result states them too.
    arguments = doc["tools_result"]["exec"]["arguments"]
    assert json.dumps(arguments) not in render_l4([msg]) + render_l3([msg])
    stated = " | ".join(" ".join(s.split()) for s in argument_strings(msg.result_value()))
    for text in argument_strings(arguments):
        shown = " ".join(text.split())
        if len(shown) >= 4 and shown not in stated:
            assert shown not in outcome, (shown, outcome)
    assert render_l5([msg]).count("Tool result") == 1
    # The recall query reads the round: the tool's name, its argument values and its result's words.
    assert tool_round_text(one_call_turn(doc)).startswith(entry["tool"])


@pytest.mark.parametrize("name", [s["scenario"] for s in SCENARIOS if s["tool"] == "bash"])
def test_a_bash_summary_holds_the_exit_code_and_the_first_output_line(name: str):
    """DSH's bash value (``{kind, exitCode, signal, timedOut, stdout: {text, truncated}, stderr}``) reads as its
    exit code, then the first non-empty line of stdout (else of stderr), with a marker when DSH cut the output; a
    background start names its job. DSH marks a non-zero exit as a success (``isError: false``, the text ends with
    ``[exit code: N]``): the summary says failed."""
    doc = scenario(name)
    value = doc["tools_result"]["result"]["value"]
    outcome = tool_outcome(record_of(doc))
    if value["kind"] == "background":
        assert outcome == f"started background job {value['jobId']}"
        return
    out = [line for line in (value["stdout"]["text"] + value["stderr"]["text"]).splitlines() if line.strip()]
    expected = f"exit {value['exitCode']} · {out[0]}"
    assert outcome.removeprefix("failed: ").startswith(expected), outcome
    assert outcome.startswith("failed: ") is (value["exitCode"] != 0)
    assert outcome.endswith("(output truncated)") is value["stdout"]["truncated"]
    assert summarize_result(value) == outcome
    # DSH's text states a non-zero exit code only ("…\n[exit code: 3]"); its summary reads it as the value's does.
    text = text_of_blocks(doc["tools_result"]["result"]["content"])
    if value["exitCode"] != 0:
        assert summarize_result(text) == outcome
    else:
        assert summarize_result(text).startswith(out[0])


def test_bash_states_the_recording_has_no_run_of_read_the_same_way():
    """A timeout, a signal and stderr-only output, in the recorded value's shape with those fields changed."""
    value = scenario("bash-exit-code")["tools_result"]["result"]["value"]
    quiet = {**value, "exitCode": 1, "stdout": {"text": "\n\n", "truncated": False}}
    assert summarize_result(quiet) == "failed: exit 1 · stderr: to-stderr"
    timed_out = {**value, "exitCode": None, "signal": "SIGTERM", "timedOut": True}
    assert summarize_result(timed_out) == "failed: timed out after 60 s · killed by SIGTERM · to-stdout"
    killed = {**value, "exitCode": None, "signal": "SIGKILL"}
    assert summarize_result(killed) == "failed: killed by SIGKILL · to-stdout"
    long = {**value, "exitCode": 0, "stdout": {"text": "x" * 10_000 + "\n", "truncated": True}}
    summary = summarize_result(long)
    assert 140 <= len(summary) <= 160 and summary.startswith("exit 0 · xxx")
    assert summary.endswith("… (output truncated)"), "the marker survives the limit"


def test_bash_summaries_in_a_sealed_block_of_the_recorded_turn():
    """The recorded turn, captured and rendered: every bash call's L4 and L3 line holds its exit code and first
    output line, and no line of the block says only that a structured result came back."""
    turn = load("turns/main.json")
    folded = fold_turn(raw(turn["events"]), turn["session"], turn["canonical"])
    assert folded is not None
    msgs = [
        SourceMessage(id=i, turn_seq=1, role="tool", content="", tool_name=t["name"], tool_call_id=t.get("call_id"),
                      tool_arguments=json.dumps(t["arguments"]), tool_result=json.dumps(t["result"]),
                      is_error=t["is_error"], created_at="2026-01-01T00:00:00.000Z")
        for i, t in enumerate(folded["tools"], 1)  # type: ignore[union-attr]
    ]
    l4, l3 = render_l4(msgs), render_l3(msgs)
    assert "structured result returned" not in l4 + l3
    assert "Tool call: bash (exit 0 · alpha)" in l4 and "Tool bash → exit 0 · alpha" in l3
    assert "Tool call: bash (failed: exit 3 · to-stdout)" in l4
    assert "Tool bash → failed: exit 3 · to-stdout" in l3
    assert "printf" not in l4 + l3, "the command stays in L5 (and on the card)"


FILE_TOOLS = {"read", "write", "edit", "str_replace_editor", "read_image"}


@pytest.mark.parametrize("entry", SCENARIOS, ids=[s["scenario"] for s in SCENARIOS])
def test_a_card_of_every_recorded_result_keeps_the_command_or_path_and_the_ref(entry: dict[str, Any]):
    """A card is built as the planner builds it (context/plan.py card_candidates): from the archived call's
    arguments and the model's text of the result. Bash keeps its command, file tools their path (an editor's
    sub-command with its path), every card its ref and the exit code the text states."""
    doc = load(entry["file"])
    names: dict[str, str] = {}
    assistant = classify(surface_node(of_type(doc, "assistant/message")), len, names)
    tool = classify(surface_node(of_type(doc, "tool/result")), len, names)
    assert assistant is not None and tool is not None
    (call,) = assistant.calls
    card = card_tag("c42") + "\n" + card_body(tool.tool_name, call.arguments, tool.text, tool.is_error, tool.tokens)
    head = card.splitlines()[1]
    assert card.startswith("[stratagate:card id=c42 ") and 'decompress("c42")' in card
    assert head.startswith(f"tool: {entry['tool']}")
    arguments = doc["tools_result"]["exec"]["arguments"]
    if entry["tool"] == "bash":
        assert head == f"tool: bash · {inert(arguments['command'], inline=True, redacted=True)}"
    if entry["tool"] in FILE_TOOLS:
        path = arguments.get("file_path") or arguments["path"]
        assert path in head, head
    if entry["scenario"] == "bash-exit-code":
        assert "status: exit 3" in card and "first line: to-stdout" in card
    if entry["is_error"]:
        assert "status: error" in card


def test_the_recorded_turn_folds_into_one_capture_with_every_call():
    turn = load("turns/main.json")
    assert turn["origin"] is None and [e["type"] for e in turn["events"]][:2] == ["turn/start", "user/message"]
    folded = fold_turn(raw(turn["events"]), turn["session"], turn["canonical"])
    assert folded is not None
    assert folded["user"] == TASK, "only the human prompt: no runtime context, skill catalog or subagent notice"
    assert folded["assistant"] == FINAL
    assert [t["name"] for t in folded["tools"]] == [s["tool"] for s in SCENARIOS]
    assert [t["is_error"] for t in folded["tools"]] == [s["is_error"] for s in SCENARIOS]
    assert folded["end_reason"] == "completed" and folded["started_at"] < folded["ended_at"]
    params = CaptureParams.model_validate({"namespace": "proj", **fit_capture(folded)})
    assert params.receipt == f"dsh:{turn['session']}:turn:1"


def test_the_recorded_subagent_turn_folds_too():
    turn = load("turns/subagent.json")
    assert turn["origin"] == "subagent"
    folded = fold_turn(raw(turn["events"]), turn["session"])
    assert folded is not None and folded["tools"] == [] and folded["assistant"]
    assert "FIXTURE-CHILD" in folded["user"]


def test_the_recall_query_reads_the_recorded_turn():
    events = raw(load("turns/main.json")["events"])
    assert "RECORD-DSH-FIXTURES" in step_query(events[:3], [])
    assert isinstance(step_query(events, []), str)


# ---- hand-written DSH events stay in DSH's shapes ----------------------------------------------------------------

NOT_RECORDED = {
    # Scenarios the recording has no run of (DSH's own shapes, from its persistence catalogue).
    ("user/message", ".data.source.compactionId"),  # a compaction checkpoint's source
    ("assistant/message", ".data.interrupted"),  # a step cut by an aborted turn
    ("turn/end", ".data.reason.reason"),  # an aborted turn's cause
    ("turn/end", ".data.reason.reason.kind"),
}


def key_paths(value: Any, prefix: str = "") -> set[str]:
    """Every key path of a JSON value (list items share ``[]``)."""
    out: set[str] = set()
    if isinstance(value, dict):
        for key, item in value.items():
            out.add(f"{prefix}.{key}")
            out |= key_paths(item, f"{prefix}.{key}")
    elif isinstance(value, list):
        for item in value:
            out |= key_paths(item, f"{prefix}[]")
    return out


def recorded_paths() -> dict[str, set[str]]:
    paths: dict[str, set[str]] = {}
    for path in DSH.rglob("*.json"):
        doc = json.loads(path.read_text())
        for event in doc.get("events") or doc.get("session_events") or ([doc["event"]] if "event" in doc else []):
            paths.setdefault(event["type"], set()).update(key_paths(event))
    return paths


def hand_written() -> list[tuple[str, dict[str, Any]]]:
    from support.surfaces import SurfaceBuilder

    log = json.loads((Path(__file__).resolve().parent / "js" / "session-log.json").read_text())["events"]
    built = SurfaceBuilder()
    built.user("fix the build")
    built.runtime(1)
    built.assistant(1, 1, "Running it.", [("call_1", "bash", {"command": "make"})])
    built.result(1, 1, "call_1", "ok\n[exit code: 0]")
    return [("tests/js/session-log.json", e) for e in log] + [("support/surfaces.py", e) for e in built.events]


def test_hand_written_dsh_events_use_only_fields_dsh_sends():
    """The hand-written logs (tests/js/session-log.json, support/surfaces.py) cover what one recording cannot
    (aborted turns, compaction checkpoints, memory tools): every field they give an event type must be one the pinned
    DSH gives it too, so they cannot drift from DSH's shapes unnoticed."""
    real = recorded_paths()
    drift = [
        (source, event["type"], path)
        for source, event in hand_written()
        if event["type"] in real
        for path in sorted(key_paths(event) - real[event["type"]])
        if (event["type"], path) not in NOT_RECORDED
    ]
    assert drift == []
