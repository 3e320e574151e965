"""``from stratagate import Memory``: every call on a real SQLite file, its typed results, the protocol's errors for bad
input, a clean close, two Memory objects on one file, and an ``import stratagate`` that stays light."""

from __future__ import annotations

import asyncio
import sqlite3
import subprocess
import sys
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest

from stratagate import Memory
from stratagate.embedded.results import BlockDetail, EventDetail, EventSearch, NodeDetail
from stratagate.errors import INVALID_PARAMS, NOT_FOUND, SHUTTING_DOWN, STORAGE_ERROR, RpcError
from stratagate.namespaces import ResolveParams, resolve
from stratagate.protocol.results import ActivationResult
from stratagate.protocol.tool_results import EraseToolResult, EventChangeResult, RememberResult

REPO = Path(__file__).resolve().parents[1]
PORT = "The staging database listens on port 5433."
PNPM = "The project uses pnpm for its packages."


@pytest.fixture(autouse=True)
def _dense_off(monkeypatch: pytest.MonkeyPatch) -> None:
    # Memory reads the STRATAGATE_* environment as `serve` does; these tests do not exercise the dense channel.
    monkeypatch.setenv("STRATAGATE_DENSE", "off")


def _jobs(db: Path) -> list[tuple[str, str, int]]:
    with sqlite3.connect(f"file:{db}?mode=ro", uri=True) as conn:
        return conn.execute("SELECT kind, status, attempts FROM jobs ORDER BY id").fetchall()


async def test_remember_search_expand_get_forget_restore_and_erase(tmp_path: Path):
    async with Memory.open(tmp_path / "memory.db", namespace="notes") as m:
        assert m.namespace == "global:notes" and m.session == "python" and m.path == tmp_path / "memory.db"
        stored = await m.remember(PORT, tags=["staging"], type="decision")
        assert isinstance(stored, RememberResult)
        assert (stored.id, stored.type, stored.tags, stored.duplicate) == ("evt_1", "decision", ["staging"], False)
        again = await m.remember(PORT)
        assert again.id == stored.id and again.duplicate and again.note

        found = await m.search("staging database port")
        assert isinstance(found, EventSearch)
        assert [h.id for h in found.hits] == [stored.id] and found.hits[0].title == PORT
        assert found.batch_id is not None and found.batch_id.startswith("rb_") and found.evidence_refs == [stored.id]

        detail = await m.expand(stored.id)
        assert isinstance(detail, EventDetail) and detail.id == stored.id and detail.sources[0].quote == PORT
        assert detail.batch_id is not None and detail.batch_id != found.batch_id

        owner_view = await m.get(stored.id)
        assert owner_view.id == stored.id and owner_view.narrative == PORT
        assert [(h.actor, h.action) for h in owner_view.history][:1] == [("agent", "event.remember")]

        forgotten = await m.forget(stored.id, reason="staging moved")
        assert isinstance(forgotten, EventChangeResult) and forgotten.status == "forgotten"
        assert (await m.search("staging database port")).hits == []
        with pytest.raises(RpcError) as refused:
            await m.remember(PORT)  # restating a forgotten memory is refused, as for the agent
        assert refused.value.code == INVALID_PARAMS

        restored = await m.restore(stored.id)
        assert restored.status == "active"
        assert [h.id for h in (await m.search("staging database port")).hits] == [stored.id]

        erased = await m.forget(stored.id, erase=True)
        assert isinstance(erased, EraseToolResult) and erased.erased and erased.id == stored.id
        after = await m.expand(stored.id)
        assert (after.title, after.status, {s.quote for s in after.sources}) == ("[erased]", "forgotten", {"[erased]"})
        with pytest.raises(RpcError) as refused_restore:
            await m.restore(stored.id)
        assert refused_restore.value.code == INVALID_PARAMS and "erased" in refused_restore.value.message


async def test_recall_and_the_graph(tmp_path: Path):
    async with Memory.open(tmp_path / "memory.db", namespace="notes") as m:
        stored = await m.remember(PNPM)
        assert stored.graph is not None and stored.graph.facts

        recalled = await m.recall("Which package manager does the project use, pnpm or npm?")
        assert isinstance(recalled, ActivationResult)
        assert stored.id in recalled.event_ids and "pnpm" in recalled.text and recalled.tokens > 0
        node = recalled.node_ids[0]
        # Rendered for the session that remembered it, the event is left out: DSH still shows that session's turns.
        assert stored.id not in (await m.recall("pnpm or npm?", session=m.session)).event_ids

        expanded = await m.expand(node)
        assert isinstance(expanded, NodeDetail) and expanded.id == node
        assert any(f.statement == "project uses pnpm" for f in expanded.current_state)
        assert expanded.batch_id is not None


async def test_captured_turns_seal_a_block_that_the_background_jobs_write(tmp_path: Path):
    async with Memory.open(tmp_path / "memory.db", workspace=tmp_path) as m:
        results = [
            await m.capture_turn(f"Step {i}: the parser rewrite needs a tokenizer test.", f"Done with step {i}.")
            for i in range(1, 7)
        ]
        assert [r.turn_id for r in results] == [f"turn_{i}" for i in range(1, 7)]
        assert results[-1].sealed_block_ids == ["blk_1"] and not any(r.sealed_block_ids for r in results[:-1])
        again = await m.capture_turn("repeated", "repeated", receipt="r-1")
        assert not again.duplicate and (await m.capture_turn("repeated", "repeated", receipt="r-1")).duplicate

        jobs = await m.settle()
        assert jobs["queued"] == 0 and jobs["running"] == 0 and jobs["failed"] == 0 and jobs["done"] > 0

        block = await m.expand("blk_1", level=1)
        assert isinstance(block, BlockDetail) and block.status == "ready" and block.level == 1
        assert block.view and block.batch_id is not None
        assert "blk_1" in (await m.recall("the parser rewrite tokenizer test")).block_ids


ERRORS: list[tuple[str, Callable[[Memory], Awaitable[Any]], int, str]] = [
    ("empty text", lambda m: m.remember(""), INVALID_PARAMS, "text"),
    ("text not a string", lambda m: m.remember(123), INVALID_PARAMS, "text"),  # type: ignore[arg-type]
    ("unknown field", lambda m: m.remember("x", colour="red"), INVALID_PARAMS, "colour"),
    ("bad enum", lambda m: m.remember("x", scope="galaxy"), INVALID_PARAMS, "scope"),
    ("limit out of range", lambda m: m.search("x", limit=0), INVALID_PARAMS, "limit"),
    ("lone surrogate", lambda m: m.remember("bad \ud800 text"), INVALID_PARAMS, "surrogate"),
    ("malformed id", lambda m: m.forget("nope"), INVALID_PARAMS, "evt_12"),
    ("unknown event", lambda m: m.restore("evt_999"), NOT_FOUND, "evt_999"),
    ("unknown event to get", lambda m: m.get("evt_999"), NOT_FOUND, "evt_999"),
    ("no kind of id", lambda m: m.expand("xyz"), INVALID_PARAMS, "expand takes"),
    ("id not a string", lambda m: m.expand(7), INVALID_PARAMS, "expand takes"),  # type: ignore[arg-type]
    ("unknown block", lambda m: m.expand("blk_99"), NOT_FOUND, "blk_99"),
    ("empty turn", lambda m: m.capture_turn(), INVALID_PARAMS, "a turn needs"),
    ("naive time", lambda m: m.capture_turn("hi", started_at=__import__("datetime").datetime(2026, 1, 1)),
     INVALID_PARAMS, "timezone"),
    ("bad tool record", lambda m: m.capture_turn("hi", tools=[{"name": ""}]), INVALID_PARAMS, "tools"),
]


async def test_bad_input_raises_the_protocols_typed_errors_and_the_memory_goes_on(tmp_path: Path):
    async with Memory.open(tmp_path / "memory.db", namespace="notes") as m:
        await m.remember(PORT)
        for label, call, code, says in ERRORS:
            with pytest.raises(RpcError) as err:
                await call(m)
            assert (err.value.code, says in err.value.message) == (code, True), (label, err.value.message)
        assert [h.title for h in (await m.search("staging port")).hits] == [PORT]  # nothing broke


@pytest.mark.parametrize(
    ("kwargs", "code", "says"),
    [
        ({}, INVALID_PARAMS, "exactly one"),
        ({"namespace": "a", "workspace": "/tmp"}, INVALID_PARAMS, "exactly one"),
        ({"namespace": ""}, INVALID_PARAMS, "namespace"),
        ({"namespace": "a\x00b"}, INVALID_PARAMS, "namespace"),
        ({"namespace": "a", "session": ""}, INVALID_PARAMS, "session"),
    ],
)
async def test_opening_with_bad_arguments_is_refused_before_the_database_opens(
    tmp_path: Path, kwargs: dict[str, Any], code: int, says: str
):
    with pytest.raises(RpcError) as err:
        await Memory.open(tmp_path / "memory.db", **kwargs)
    assert err.value.code == code and says in err.value.message
    assert not (tmp_path / "memory.db").exists()


async def test_a_path_that_is_no_database_is_a_storage_error(tmp_path: Path):
    (tmp_path / "folder").mkdir()
    with pytest.raises(RpcError) as err:
        await Memory.open(tmp_path / "folder", namespace="notes")
    assert err.value.code == STORAGE_ERROR and "not a database file" in err.value.message


async def test_a_workspace_is_keyed_as_namespace_resolve_keys_the_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    (tmp_path / "proj").mkdir()
    monkeypatch.chdir(tmp_path)
    expected = resolve(ResolveParams(mode="project", cwd=str(tmp_path / "proj")))["namespace"]
    async with Memory.open("memory.db", workspace="proj") as relative:
        assert relative.namespace == expected and relative.path == Path("memory.db")
    async with Memory.open(tmp_path / "memory.db", workspace=tmp_path / "proj") as absolute:
        assert absolute.namespace == expected


async def test_close_stops_the_jobs_cleanly_and_seals_the_open_tail(tmp_path: Path):
    db = tmp_path / "memory.db"
    m = await Memory.open(db, namespace="notes")
    for i in range(1, 9):  # a block of six (its jobs queued) and an open tail of two
        await m.capture_turn(f"Turn {i} about the release checklist.", f"Reply {i}.")
    await m.close()
    await m.close()  # twice is harmless
    assert m.closed
    jobs = _jobs(db)
    assert jobs and all(status in ("queued", "done") for _, status, _ in jobs), jobs
    # A job the stop interrupted went back to the queue with its attempt given back.
    assert all(attempts == 0 for _, status, attempts in jobs if status == "queued"), jobs
    with sqlite3.connect(f"file:{db}?mode=ro", uri=True) as conn:
        blocks = conn.execute("SELECT first_turn, last_turn FROM blocks ORDER BY id").fetchall()
    assert blocks == [(1, 6), (7, 8)]  # the tail was sealed at close
    assert [t for t in asyncio.all_tasks() if t is not asyncio.current_task()] == []
    with pytest.raises(RpcError) as err:
        await m.search("release")
    assert err.value.code == SHUTTING_DOWN

    async with Memory.open(db, namespace="notes") as again:  # the next opener finishes what was left
        jobs_after = await again.settle()
        assert jobs_after["failed"] == 0 and jobs_after["done"] >= len(jobs)


async def test_close_lets_a_call_in_flight_finish_first(tmp_path: Path):
    db = tmp_path / "memory.db"
    m = await Memory.open(db, namespace="notes")
    # gather starts the capture first: it is in flight when close begins, and close waits for it.
    captured, _ = await asyncio.gather(m.capture_turn("Captured while closing.", "Kept."), m.close())
    assert captured.turn_id == "turn_1" and m.closed
    with sqlite3.connect(f"file:{db}?mode=ro", uri=True) as conn:
        assert conn.execute("SELECT content FROM messages ORDER BY id").fetchall() == [
            ("Captured while closing.",), ("Kept.",)]


async def test_two_memories_on_one_file_see_each_others_changes(tmp_path: Path):
    db = tmp_path / "memory.db"
    async with Memory.open(db, namespace="team", session="a") as first, \
            Memory.open(db, namespace="team", session="b") as second:
        stored = await first.remember(PORT)
        assert [h.id for h in (await second.search("staging port")).hits] == [stored.id]
        await second.forget(stored.id)
        assert (await first.search("staging port")).hits == []

        turns = await asyncio.gather(
            *(m.capture_turn(f"Parallel turn {i} from {m.session}.", "ok") for i in range(3) for m in (first, second))
        )
        assert len({t.turn_id for t in turns}) == 6 and not any(t.duplicate for t in turns)
    assert first.closed and second.closed


def test_import_stratagate_stays_light_and_memory_resolves_on_first_use():
    code = (
        "import sys, stratagate\n"
        "print(sorted(m for m in sys.modules if m.startswith('stratagate')))\n"
        "from stratagate import Memory\n"
        "print(Memory.__module__, 'stratagate.embedded.memory' in sys.modules)\n"
        "print(hasattr(stratagate, 'nothing_here'))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True,
        env={"PYTHONPATH": str(REPO / "sidecar"), "PATH": "/usr/bin:/bin"},
    ).stdout.splitlines()
    assert out == ["['stratagate']", "stratagate.embedded.memory True", "False"]
