"""The evidence gate over real JSON-RPC: retrieval batches, memory_assess, use receipts and long-term weights."""

from __future__ import annotations

import math
import sqlite3
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from conftest import model_env, turn
from stratagate.evidence.weights import DECAY_RATE, FLOORS, decay_rate, long_term_weight
from support.model_server import ScriptedModelServer
from support.sidecar import RpcFailure, SidecarClient

NS = "proj"
RETRIEVAL = {
    "memory_get_blocks": {},
    "memory_expand_block": {"id": "blk_1", "level": 5},
    "memory_search_raw": {"query": "pnpm"},
    "memory_search_events": {"query": "pnpm"},
    "memory_expand_event": {"id": "evt_1"},
    "memory_search_graph": {"query": "pnpm"},
    "memory_expand_graph_node": {"node": "pnpm"},
}


@pytest.fixture
async def client(tmp_path: Path, model_server: ScriptedModelServer) -> AsyncIterator[SidecarClient]:
    c = await SidecarClient.start(tmp_path / "memory.db", env=model_env(model_server))
    yield c
    await c.close()


async def tool(client: SidecarClient, name: str, args: dict[str, Any], session: str = "s1", ns: str = NS) -> Any:
    return await client.tool(ns, session, name, args)


async def failure(client: SidecarClient, name: str, args: dict[str, Any], session: str = "s1", ns: str = NS):
    with pytest.raises(RpcFailure) as err:
        await tool(client, name, args, session, ns)
    return err.value


async def remember(client: SidecarClient, text: str, session: str = "s1", **extra: Any) -> str:
    return (await tool(client, "memory_remember", {"text": text, **extra}, session))["id"]


async def weight(client: SidecarClient, ref: str, session: str = "s1") -> dict[str, Any]:
    (w,) = (await client.call("memory.weights", {"namespace": NS, "session": session, "refs": [ref]}))["weights"]
    return w


async def capture(client: SidecarClient, session: str, first: int, count: int) -> None:
    for i in range(first, first + count):
        await client.call("turn.capture", turn(i, session=session))


async def search(client: SidecarClient, query: str, session: str = "s1") -> dict[str, Any]:
    return await tool(client, "memory_search_events", {"query": query}, session)


async def assess(client: SidecarClient, batch: str, verdict: str, refs: list[str], strategy: str = "answer",
                 session: str = "s1") -> dict[str, Any]:
    return await tool(client, "memory_assess", {
        "batch_id": batch, "verdict": verdict, "evidence_refs": refs, "fit": "It states the package manager.",
        "missing": "", "next_strategy": strategy,
    }, session)


def rows(db: Path, sql: str, params: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    with sqlite3.connect(f"file:{db}?mode=ro", uri=True) as conn:
        return conn.execute(sql, params).fetchall()


def batch_number(batch_id: str) -> int:
    assert batch_id.startswith("rb_"), batch_id
    return int(batch_id[3:])


# --- batches ---------------------------------------------------------------------------------------------------------


async def test_every_retrieval_result_is_a_batch_with_unique_ids_across_restarts(
    tmp_path: Path, model_server: ScriptedModelServer
):
    db = tmp_path / "m.db"
    client = await SidecarClient.start(db, env=model_env(model_server), args=["--block-turns", "1"])
    try:
        await client.call("turn.capture", turn(1, user="We use pnpm for the web app, not npm."))
        remembered = await tool(client, "memory_remember", {"text": "The project uses pnpm as its package manager."})
        assert "batch_id" not in remembered and "evidence_refs" not in remembered  # not a retrieval
        seen = []
        for name, args in RETRIEVAL.items():
            result = await tool(client, name, args)
            assert list(result)[:2] == ["batch_id", "evidence_refs"], name
            seen.append(batch_number(result["batch_id"]))
            assert all(isinstance(r, str) for r in result["evidence_refs"])
            assert len(set(result["evidence_refs"])) == len(result["evidence_refs"])
            if name == "memory_search_events":
                assert result["evidence_refs"] == ["evt_1"]
            if name == "memory_search_raw":
                assert {h["message_id"] for h in result["hits"]} <= set(result["evidence_refs"])
                assert "blk_1" in result["evidence_refs"]
            if name in ("memory_get_blocks", "memory_expand_block"):
                assert "blk_1" in result["evidence_refs"]
            if name == "memory_search_graph":
                assert {h["id"] for h in result["hits"]} <= set(result["evidence_refs"])
                assert any(r.startswith("nod_") for r in result["evidence_refs"])
        assert seen == sorted(seen) and len(set(seen)) == len(seen) == len(RETRIEVAL)
        # Errors make no batch: the next id is the next number.
        await failure(client, "memory_expand_event", {"id": "evt_99"})
        after_error = await search(client, "pnpm")
        assert batch_number(after_error["batch_id"]) == seen[-1] + 1
        assert rows(db, "SELECT COUNT(*) FROM retrieval_batches")[0][0] == len(RETRIEVAL) + 1
    finally:
        await client.close()

    # Same database, new process: ids keep growing (AUTOINCREMENT), never restart at 1.
    again = await SidecarClient.start(db, env=model_env(model_server))
    try:
        fresh = await search(again, "pnpm")
        assert batch_number(fresh["batch_id"]) == seen[-1] + 2
        other = await search(again, "pnpm", session="s2")
        assert batch_number(other["batch_id"]) == seen[-1] + 3
    finally:
        await again.close()


async def test_ids_in_the_query_are_not_evidence(client: SidecarClient):
    await client.call("turn.capture", turn(1))
    result = await tool(client, "memory_search_events", {"query": "evt_1"})
    assert result["hits"] == [] and result["evidence_refs"] == []


# --- memory_assess -------------------------------------------------------------------------------------------------


async def test_the_gate_downgrades_sufficient_without_its_conditions(client: SidecarClient):
    await client.call("turn.capture", turn(1))
    db_fact = await remember(client, "The staging database runs Postgres 16.")
    flags = await remember(client, "Feature flags live in LaunchDarkly.")
    first = await search(client, "postgres database")
    second = await search(client, "feature flags")
    assert first["evidence_refs"] == [db_fact] and second["evidence_refs"] == [flags]

    no_refs = await assess(client, first["batch_id"], "sufficient", [])
    assert no_refs["requested_verdict"] == "sufficient" and no_refs["verdict"] == "partial"
    assert f"at least one evidence ref from {first['batch_id']}" in no_refs["reason"]
    assert "not sufficient" in no_refs["note"]

    other_batch = await assess(client, first["batch_id"], "sufficient", [flags])
    assert other_batch["verdict"] == "partial" and other_batch["evidence_refs"] == []
    assert other_batch["rejected_refs"] == [{
        "ref": flags,
        "reason": f"{first['batch_id']} did not show {flags}; {second['batch_id']} did: assess that batch for it",
    }]
    assert "at least one evidence ref" in other_batch["reason"]

    not_answering = await assess(client, first["batch_id"], "sufficient", [db_fact], strategy="search_raw")
    assert not_answering["verdict"] == "partial" and not_answering["evidence_refs"] == [db_fact]
    assert "'answer'" in not_answering["reason"] and "search_raw" in not_answering["reason"]

    mixed = await assess(client, first["batch_id"], "sufficient", [db_fact, "evt_404", "nonsense"])
    assert mixed["verdict"] == "sufficient" and mixed["reason"] is None and mixed["evidence_refs"] == [db_fact]
    reasons = {r["ref"]: r["reason"] for r in mixed["rejected_refs"]}
    assert "no retrieval of this session did" in reasons["evt_404"]
    assert "not an evidence ref" in reasons["nonsense"]

    for verdict in ("partial", "wrong"):
        judged = await assess(client, second["batch_id"], verdict, [], strategy="search_raw")
        assert judged["verdict"] == verdict and judged["reason"] is None

    stored = await client.call("system.info")
    assert stored["schema_version"] == stored["expected_schema_version"]


async def test_assessing_a_batch_of_another_session_or_namespace_is_not_found(client: SidecarClient):
    await client.call("turn.capture", turn(1))
    await client.call("turn.capture", turn(1, namespace="elsewhere"))
    await remember(client, "Deploys run on Fridays.")
    mine = await search(client, "deploys fridays")
    args = {"batch_id": mine["batch_id"], "verdict": "partial", "fit": "x", "next_strategy": "search_raw"}
    for session, ns in (("s2", NS), ("s1", "elsewhere")):
        err = await failure(client, "memory_assess", args, session=session, ns=ns)
        assert err.code == -32004 and mine["batch_id"] in err.message
        err = await failure(client, "memory_record_use", {"batch_id": mine["batch_id"], "evidence_refs": []},
                            session=session, ns=ns)
        assert err.code == -32004
    unknown = await failure(client, "memory_assess", args | {"batch_id": "rb_999"})
    assert unknown.code == -32004
    malformed = await failure(client, "memory_assess", args | {"batch_id": "batch_1"})
    assert malformed.code == -32602 and "rb_12" in malformed.message
    blank = await failure(client, "memory_assess", args | {"fit": "   "})
    assert blank.code == -32602


# --- memory_record_use ---------------------------------------------------------------------------------------------


async def test_receipts_are_idempotent_across_a_restart(tmp_path: Path, model_server: ScriptedModelServer):
    db = tmp_path / "m.db"
    client = await SidecarClient.start(db, env=model_env(model_server))
    try:
        await client.call("turn.capture", turn(1))
        evt = await remember(client, "Releases are cut from the trunk-stable branch.")
        batch = (await search(client, "branch"))["batch_id"]
        await assess(client, batch, "sufficient", [evt])
        first = await tool(client, "memory_record_use", {"batch_id": batch, "evidence_refs": [evt, evt]})
        assert first["duplicate"] is False and [c["ref"] for c in first["counted"]] == [evt]
        assert first["reinforced"] == [{"id": evt, "session_uses": 1, "turn": 2}]
        second = await tool(client, "memory_record_use", {"batch_id": batch, "evidence_refs": [evt]})
        assert second == first | {"duplicate": True}
        used = await weight(client, evt)
    finally:
        await client.close()

    again = await SidecarClient.start(db, env=model_env(model_server))
    try:
        third = await tool(again, "memory_record_use", {"batch_id": batch, "evidence_refs": [f" {evt} "]})
        assert third == first | {"duplicate": True}
        assert await weight(again, evt) == used and used["uses"] == 1
        assert rows(db, "SELECT COUNT(*) FROM use_receipts")[0][0] == 1
        assert rows(db, "SELECT COUNT(*) FROM evidence_uses")[0][0] == 1
        # The same ref through a second, batch-less receipt counts for that batch only once.
        other = await tool(again, "memory_record_use", {"evidence_refs": [evt]})
        assert other["duplicate"] is False and other["reinforced"] == []
        assert "already counted" in other["counted"][0]["note"]
        assert (await weight(again, evt))["uses"] == 1
        with pytest.raises(sqlite3.IntegrityError, match="append-only"):
            with sqlite3.connect(db) as conn:
                conn.execute("DELETE FROM use_receipts")
    finally:
        await again.close()


async def test_only_refs_of_a_sufficient_assessment_count(client: SidecarClient):
    await client.call("turn.capture", turn(1, user="The staging server listens on port 8443."))
    a = await remember(client, "Staging deploys need a green CI run.")
    b = await remember(client, "Staging is reset every Monday morning.")
    both = await search(client, "staging")
    assert set(both["evidence_refs"]) == {a, b}
    batch = both["batch_id"]

    unassessed = await tool(client, "memory_record_use", {"batch_id": batch, "evidence_refs": [a]})
    assert unassessed["counted"] == [] and "has not been assessed" in unassessed["not_counted"][0]["reason"]

    await assess(client, batch, "partial", [a, b], strategy="search_raw")
    partial = await tool(client, "memory_record_use", {"batch_id": batch, "evidence_refs": [a, b]})
    assert partial["counted"] == [] and all("is partial" in r["reason"] for r in partial["not_counted"])

    verdict = await assess(client, batch, "sufficient", [a])
    used = await tool(client, "memory_record_use", {"batch_id": batch, "evidence_refs": [a, b, "msg_999"]})
    assert used["duplicate"] is False
    assert [(c["ref"], c["assessment_id"], c["strengthens"]) for c in used["counted"]] == [
        (a, verdict["assessment_id"], a)
    ]
    reasons = {r["ref"]: r["reason"] for r in used["not_counted"]}
    assert f"not among the refs of the sufficient assessment {verdict['assessment_id']}" in reasons[b]
    assert reasons["msg_999"] == f"{batch} did not show msg_999"
    assert (await weight(client, a))["uses"] == 1 and (await weight(client, b))["uses"] == 0

    # Without batch_id: matched to this session's sufficient assessments; raw sources count but weigh nothing.
    raw = await tool(client, "memory_search_raw", {"query": "staging"})
    msg = raw["evidence_refs"][0]
    await assess(client, raw["batch_id"], "sufficient", [msg])
    loose = await tool(client, "memory_record_use", {"evidence_refs": [msg, b]})
    assert [(c["ref"], c["batch_id"], c["strengthens"]) for c in loose["counted"]] == [(msg, raw["batch_id"], None)]
    assert "without a long-term weight" in loose["counted"][0]["note"]
    assert loose["not_counted"] == [
        {"ref": b, "reason": f"{batch} showed it, but no sufficient assessment of this session names it"}
    ]
    assert loose["settles"] == [raw["batch_id"]]
    # Another session cannot use this session's assessments.
    elsewhere = await tool(client, "memory_record_use", {"evidence_refs": [a]}, session="s2")
    assert elsewhere["counted"] == [] and "no retrieval batch of this session" in elsewhere["not_counted"][0]["reason"]


async def test_open_batches_and_the_empty_receipt(client: SidecarClient):
    await client.call("turn.capture", turn(1))
    evt = await remember(client, "Use tabs in the Makefile.")
    params = {"namespace": NS, "session": "s1"}
    assert (await client.call("evidence.open_batches", params))["batches"] == []
    first = await search(client, "makefile tabs")
    second = await tool(client, "memory_expand_event", {"id": evt})
    third = await search(client, "makefile")
    await assess(client, first["batch_id"], "sufficient", [evt])
    await assess(client, third["batch_id"], "wrong", [], strategy="ask_user")  # judged useless: settled
    status = await client.call("evidence.open_batches", params)
    assert status["turn"] == 2
    assert [(b["batch_id"], b["state"]) for b in status["batches"]] == [
        (first["batch_id"], "unrecorded"), (second["batch_id"], "unassessed"),
    ]
    assert first["batch_id"] in status["nudge"] and "memory_record_use" in status["nudge"]
    # The same session seen as a subagent child is never nudged (the main agent is), whatever is open.
    sub = await client.call("evidence.open_batches", {**params, "origin": "subagent"})
    assert sub["batches"] == [] and sub["nudge"] is None
    assert (await client.call("evidence.open_batches", {**params, "origin": "cli"}))["nudge"] == status["nudge"]
    # A batch of an earlier turn is not this turn's business; nor are other sessions'.
    await search(client, "makefile", session="s2")
    await client.call("turn.capture", turn(2))
    assert (await client.call("evidence.open_batches", params)) | {"turn": 0} == {
        **params, "turn": 0, "batches": [], "nudge": None,
    }
    late = await search(client, "makefile")
    assert [b["batch_id"] for b in (await client.call("evidence.open_batches", params))["batches"]] == [
        late["batch_id"]
    ]
    none_used = await tool(client, "memory_record_use", {"evidence_refs": []})
    assert none_used["settles"] == [late["batch_id"]] and none_used["counted"] == []
    assert (await client.call("evidence.open_batches", params))["nudge"] is None
    unknown = await client.call("evidence.open_batches", {"namespace": "never", "session": "x"})
    assert unknown["batches"] == [] and unknown["nudge"] is None


# --- weights -------------------------------------------------------------------------------------------------------


async def test_weights_change_only_on_receipts(client: SidecarClient):
    await client.call("turn.capture", turn(1))
    evt = await remember(client, "The CI cache key includes the lockfile hash.")
    await capture(client, "s1", 2, 3)
    before = await weight(client, evt)
    assert before["distance"] == 3 and before["uses"] == 0
    assert before["weight"] == round(math.exp(-DECAY_RATE * 3), 4)
    batch = None
    for _ in range(8):
        batch = (await search(client, "CI cache lockfile"))["batch_id"]
        await tool(client, "memory_expand_event", {"id": evt})
        await tool(client, "memory_search_raw", {"query": "cache"})
    assert await weight(client, evt) == before, "retrieval alone never changes a weight"
    assert batch is not None
    await assess(client, batch, "sufficient", [evt])
    assert await weight(client, evt) == before, "an assessment alone changes nothing"
    await tool(client, "memory_record_use", {"batch_id": batch, "evidence_refs": [evt]})
    after = await weight(client, evt)
    assert after["uses"] == 1 and after["distance"] == 0 and after["weight"] == 1.0
    assert after["decay_rate"] < before["decay_rate"]
    await capture(client, "s1", 5, 3)
    later = await weight(client, evt)
    assert later["distance"] == 3 and later["weight"] > before["weight"], "used memories decay more slowly"


async def test_turn_distance_counts_only_the_sessions_own_turns(client: SidecarClient):
    await client.call("turn.capture", turn(1))
    evt = await remember(client, "Error budgets are reviewed monthly.")
    await capture(client, "s1", 2, 2)
    mine = await weight(client, evt)
    assert mine["distance"] == 2
    await capture(client, "s2", 1, 6)  # another session chatters
    assert await weight(client, evt) == mine
    theirs = await weight(client, evt, session="s2")
    assert theirs["distance"] == 6, "a session that was there when the memory was made counts its own turns"
    assert (await weight(client, evt, session="s3"))["distance"] == 0, "a new session has no turns yet"
    batch = (await search(client, "error budgets", session="s2"))["batch_id"]
    await assess(client, batch, "sufficient", [evt], session="s2")
    await tool(client, "memory_record_use", {"batch_id": batch, "evidence_refs": [evt]}, session="s2")
    used_there = await weight(client, evt, session="s2")
    assert used_there["distance"] == 0 and used_there["session_uses"] == 1
    here = await weight(client, evt)
    assert here["distance"] == 2 and here["session_uses"] == 0 and here["uses"] == 1
    assert here["weight"] > mine["weight"], "adoption anywhere slows decay everywhere"
    await capture(client, "s1", 4, 1)
    assert (await weight(client, evt, session="s2"))["distance"] == 0


async def test_superseded_cap_beats_pin_and_floor(client: SidecarClient):
    await client.call("turn.capture", turn(1))
    old = await remember(client, "Never force-push to main.", criticality="safety")
    await tool(client, "memory_pin", {"id": old, "pinned": True})
    pinned = await remember(client, "Tabs, not spaces.")
    await tool(client, "memory_pin", {"id": pinned, "pinned": True})
    await capture(client, "s1", 2, 10)
    assert (await weight(client, old))["weight"] == 1.0
    assert (await weight(client, pinned))["weight"] == 1.0, "a pin holds a routine memory at full weight"
    await tool(client, "memory_remember", {"text": "Force-push to main only with a lease.", "supersedes": [old]})
    capped = await weight(client, old)
    assert capped["status"] == "superseded" and capped["pinned"] is True and capped["weight"] == 0.1
    await tool(client, "memory_forget", {"id": pinned})
    assert (await weight(client, pinned))["weight"] == 0.0


async def test_criticality_floors(client: SidecarClient):
    await client.call("turn.capture", turn(1))
    texts = {
        "routine": "Lint runs before every commit.",
        "preference": "The user prefers short answers.",
        "identity": "The user maintains this project.",
        "safety": "Never print secrets in logs.",
    }
    made = {c: await remember(client, text, criticality=c) for c, text in texts.items()}
    await capture(client, "s1", 2, 40)
    seen = {c: await weight(client, evt) for c, evt in made.items()}
    assert seen["routine"]["weight"] == round(math.exp(-DECAY_RATE * 40), 4)
    for c in ("preference", "identity", "safety"):
        assert seen[c]["weight"] == FLOORS[c] and seen[c]["floor"] == FLOORS[c]


async def test_weights_rpc_validates(client: SidecarClient):
    with pytest.raises(RpcFailure) as err:
        await client.call("memory.weights", {"namespace": "nope", "session": "s1", "refs": ["evt_1"]})
    assert err.value.code == -32004
    with pytest.raises(RpcFailure) as err:
        await client.call("memory.weights", {"namespace": NS, "session": "s1", "refs": []})
    assert err.value.code == -32602


# --- the weight function -----------------------------------------------------------------------------------------

distances = st.integers(min_value=0, max_value=10_000)
use_counts = st.integers(min_value=0, max_value=10_000)
floors = st.sampled_from(sorted(FLOORS.values()))
caps = st.none() | st.floats(min_value=0, max_value=1)


@given(distances, distances, use_counts, floors, st.booleans(), caps)
def test_weight_never_rises_with_distance(d1: int, d2: int, uses: int, floor: float, pinned: bool, cap: float | None):
    near, far = sorted((d1, d2))
    w_near = long_term_weight(near, uses, floor=floor, pinned=pinned, cap=cap)
    w_far = long_term_weight(far, uses, floor=floor, pinned=pinned, cap=cap)
    assert 0.0 <= w_far <= w_near <= 1.0


@given(distances, use_counts, floors, st.booleans())
def test_weight_never_below_the_floor_unless_capped(distance: int, uses: int, floor: float, pinned: bool):
    assert long_term_weight(distance, uses, floor=floor, pinned=pinned) >= floor


@given(distances, use_counts, floors, st.booleans(), st.floats(min_value=0, max_value=1))
def test_superseded_weight_never_above_the_cap(distance: int, uses: int, floor: float, pinned: bool, cap: float):
    assert long_term_weight(distance, uses, floor=floor, pinned=pinned, cap=cap) <= cap


@given(distances, use_counts, use_counts)
def test_more_uses_decay_more_slowly(distance: int, u1: int, u2: int):
    few, many = sorted((u1, u2))
    assert decay_rate(many) <= decay_rate(few)
    assert long_term_weight(distance, many) >= long_term_weight(distance, few)
    if many > few and distance > 0:
        assert decay_rate(many) < decay_rate(few)


@given(distances, use_counts, floors, st.booleans(), caps, st.sampled_from(["forgotten", "archived"]))
def test_forgotten_and_archived_weigh_nothing(
    distance: int, uses: int, floor: float, pinned: bool, cap: float | None, status: str
):
    assert long_term_weight(distance, uses, floor=floor, pinned=pinned, cap=cap, status=status) == 0.0


def test_weight_reference_points():
    assert long_term_weight(0, 0) == 1.0
    half_lives = {n: math.log(2) / decay_rate(n) for n in (0, 1, 2, 4, 9)}
    assert [round(h, 1) for h in half_lives.values()] == [4.6, 9.4, 12.2, 15.8, 20.6]
