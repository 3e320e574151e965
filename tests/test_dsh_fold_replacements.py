"""The fold captures what the agent and the human did in a turn, never what replaced earlier history.

Over real turns recorded from the pinned DSH with StrataGate's context engine landing (tests/fixtures/dsh-landings/,
scripts/record-landing-fixtures.py): a card the engine lands for an earlier turn's call arrives as a ``tool/result``
under that call's id, a mid-turn card under the id of a call of the same turn, the engine's folds and block views and
DSH's own compaction summary as checkpoint ``user/message`` events; DSH marks each with an object ``surfaceOp``.
Every expectation below is read from the recorded events themselves.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from stratagate.dsh.events import RawEvent, is_replacement, own_tool, result_call_id, text_of_blocks
from stratagate.dsh.fold import fold_turn

FIXTURES = Path(__file__).resolve().parent / "fixtures"
LANDINGS = sorted((FIXTURES / "dsh-landings").glob("*.json"))
PIN = json.loads((Path(__file__).resolve().parents[1] / "scripts" / "dsh-install" / "package.json").read_text())
CASES = {"card-earlier-call", "card-same-turn", "checkpoint-engine", "checkpoint-dsh"}


def load(path: Path) -> dict[str, Any]:
    return dict(json.loads(path.read_text()))


def events_of(doc: dict[str, Any]) -> list[RawEvent]:
    return [RawEvent.model_validate(e) for e in doc["events"]]


def agent_calls(doc: dict[str, Any]) -> list[tuple[str, str]]:
    """(call id, tool) of the turn's own calls, in order (the plugin's own tools are not captured)."""
    return [
        (str(e["data"]["callId"]), str(e["data"]["name"]))
        for e in doc["events"]
        if e["type"] == "tool/call" and not own_tool(e["data"]["name"])
    ]


def original_results(doc: dict[str, Any]) -> dict[str, str]:
    """call id → the text of the result DSH appended for it (not a replacement)."""
    return {
        result_call_id(e["data"]["message"]): text_of_blocks(e["data"]["message"]["content"])
        for e in doc["events"]
        if e["type"] == "tool/result" and e.get("surfaceOp") == "append"
    }


def replacements(doc: dict[str, Any]) -> list[dict[str, Any]]:
    return [e for e in doc["events"] if isinstance(e.get("surfaceOp"), dict)]


def test_the_recording_holds_every_way_a_replacement_reaches_a_turn() -> None:
    assert LANDINGS, "no recorded landings: run scripts/record-landing-fixtures.py"
    docs = [load(p) for p in LANDINGS]
    assert {d["dsh_version"] for d in docs} == {PIN["dependencies"]["@deepseek-ai/dsh"]}
    assert set().union(*(d["cases"] for d in docs)) == CASES
    for doc in docs:
        calls = {call for call, _ in agent_calls(doc)}
        seen = set()
        for event in replacements(doc):
            if event["type"] == "tool/result":
                inside = result_call_id(event["data"]["message"]) in calls
                seen.add("card-same-turn" if inside else "card-earlier-call")
            else:
                assert event["type"] == "user/message" and event["data"]["source"]["plugin"] == "compact", event
                seen.add("checkpoint")
        claimed = {"checkpoint" if c.startswith("checkpoint") else c for c in doc["cases"]}
        assert claimed <= seen, (doc["cases"], seen)


@pytest.mark.parametrize("path", LANDINGS, ids=[p.stem for p in LANDINGS])
def test_a_turn_with_landings_captures_exactly_the_agents_calls_and_their_original_results(path: Path) -> None:
    doc = load(path)
    folded = fold_turn(events_of(doc), doc["session"], doc["canonical"], now_ms=0)
    assert folded is not None
    assert [(t.get("call_id"), t["name"]) for t in folded["tools"]] == agent_calls(doc)
    original = original_results(doc)
    for record in folded["tools"]:
        assert record["result"] == original[record["call_id"]], record["call_id"]
        assert record["arguments"] and record["name"] != "unknown"
    # A checkpoint (a fold, a block view, DSH's summary) is not the human's prompt.
    checkpoints = [text_of_blocks(e["data"]["content"]) for e in replacements(doc) if e["type"] == "user/message"]
    humans = [text_of_blocks(e["data"]["content"]) for e in doc["events"]
              if e["type"] == "user/message" and e["data"].get("source", {}).get("kind") == "user"]
    assert folded["user"] == "\n\n".join(humans)
    assert not any(c and c in folded["user"] for c in checkpoints)


@pytest.mark.parametrize("path", LANDINGS, ids=[p.stem for p in LANDINGS])
def test_without_their_calls_genuine_results_are_kept_and_replacements_still_skipped(path: Path) -> None:
    """A partial event list (results whose calls are not in it) still keeps every result the tools returned, each
    with its original text; a card, even one under the id of such a call, adds nothing and changes nothing."""
    doc = load(path)
    partial = [e for e in events_of(doc) if e.type != "tool/call"]
    folded = fold_turn(partial, doc["session"], {}, now_ms=0)
    assert folded is not None
    original = original_results(doc)
    assert [(t["call_id"], t["name"], t["result"]) for t in folded["tools"]] == [
        (call, "unknown", text) for call, text in original.items()
    ]


def test_only_an_object_surface_op_marks_a_replacement() -> None:
    """Every event DSH appended in the recordings (``surfaceOp: 'append'`` or none) is turn content; every one it
    marked as replacing a range is not."""
    recorded = [load(p)["events"] for p in LANDINGS]
    recorded += [load(p)["events"] for p in sorted((FIXTURES / "dsh" / "turns").glob("*.json"))]
    events = [e for stream in recorded for e in stream]
    replaced = [e for e in events if is_replacement(RawEvent.model_validate(e))]
    assert replaced and all(e["surfaceOp"]["op"] == "replace" for e in replaced)
    kept = [e for e in events if not is_replacement(RawEvent.model_validate(e))]
    assert kept and all(e.get("surfaceOp") in ("append", None) for e in kept)
