"""Recall's remembered searches (activation/search_memo.py) answer what a fresh search answers: the same answer while
nothing is committed, a new one after any commit (this process's writer or another connection), and nothing kept on
a connection that may write."""

from __future__ import annotations

import contextlib
import sqlite3
from collections.abc import AsyncIterator
from pathlib import Path

from stratagate.activation import search_memo
from stratagate.events import store as events
from stratagate.graph import read
from stratagate.storage.db import Database
from stratagate.storage.lookup import namespace_key
from stratagate.text.terms import fts_query
from support.sidecar import SidecarClient

NS = "project:shop:0123456789abcdef"
STATUSES = ["active", "disputed", "superseded"]


async def _remember(path: Path, texts: list[str]) -> None:
    client = await SidecarClient.start(path)
    try:
        for text in texts:
            await client.tool(NS, "s1", "memory_remember", {"text": text})
    finally:
        await client.close()


@contextlib.asynccontextmanager
async def _reader(path: Path, texts: list[str]) -> AsyncIterator[tuple[Database, int]]:
    """The database at ``path`` holding ``texts`` remembered through a real sidecar, and the namespace's id."""
    await _remember(path, texts)
    db = Database(path)
    await db.open()
    try:
        ns = await namespace_key(db.reader, NS)
        assert ns is not None
        yield db, ns
    finally:
        await db.close()


def _ids(answer: list[tuple[object, float | None]]) -> list[tuple[int, float | None]]:
    return [(item.id, score) for item, score in answer]  # type: ignore[attr-defined]


async def test_remembered_until_a_commit_and_equal_to_a_fresh_search(tmp_path: Path):
    path = tmp_path / "memory.db"
    async with _reader(path, ["The API depends on redis.", "The worker depends on redis."]) as (db, ns):
        conn = db.reader
        match = fts_query("what depends on redis?")
        assert match is not None
        calls = {"events": 0, "nodes": 0}
        real_events, real_nodes = events.search, read.search

        async def counted_events(*args, **kwargs):  # type: ignore[no-untyped-def]
            calls["events"] += 1
            return await real_events(*args, **kwargs)

        async def counted_nodes(*args, **kwargs):  # type: ignore[no-untyped-def]
            calls["nodes"] += 1
            return await real_nodes(*args, **kwargs)

        events.search, read.search = counted_events, counted_nodes  # type: ignore[assignment]
        try:
            first = await search_memo.event_search(conn, ns, None, match, STATUSES, 12)
            nodes = await search_memo.node_search(conn, ns, None, match, 12)
            assert _ids(await search_memo.event_search(conn, ns, None, match, STATUSES, 12)) == _ids(first)
            assert _ids(await search_memo.node_search(conn, ns, None, match, 12)) == _ids(nodes)
            assert calls == {"events": 1, "nodes": 1}  # nothing committed: remembered
            assert len(first) == 2 and nodes

            # Another connection commits (another process would too): the next search reads the database again.
            other = sqlite3.connect(path, isolation_level=None)
            try:
                other.execute("UPDATE events SET status = 'forgotten', prior_status = 'active' WHERE id = ?",
                              (first[0][0].id,))
            finally:
                other.close()
            after = await search_memo.event_search(conn, ns, None, match, STATUSES, 12)
            assert calls["events"] == 2
            assert _ids(after) == _ids(await real_events(conn, ns, None, match, STATUSES, None, 12))
            assert first[0][0].id not in [ev.id for ev, _ in after]

            # The writer may write: nothing is kept there.
            for _ in range(2):
                await search_memo.node_search(db.writer, ns, None, match, 12)
            assert calls["nodes"] == 3
        finally:
            events.search, read.search = real_events, real_nodes  # type: ignore[assignment]


async def test_a_full_memo_lets_the_least_recently_used_answer_go(tmp_path: Path, monkeypatch):
    """The recent turns' search, asked at every step, stays while each step's new query fills the memo."""
    async with _reader(tmp_path / "memory.db", ["The API depends on redis."]) as (db, ns):
        conn = db.reader
        asked: list[str] = []
        real = events.search

        async def counted(conn, ns, sess, match, statuses, event_type=None, limit=6):  # type: ignore[no-untyped-def]
            asked.append(match)
            return await real(conn, ns, sess, match, statuses, event_type, limit)

        monkeypatch.setattr(events, "search", counted)
        recent = fts_query("redis api")
        assert recent is not None
        for step in range(3 * search_memo.MAX_ANSWERS):
            memo = await search_memo.Memo.of(conn)
            await memo.event_search(ns, None, recent, STATUSES, 12)  # every step
            await memo.event_search(ns, None, f'"step{step}"', STATUSES, 12)  # each step's own
        assert asked.count(recent) == 1
        # The oldest step queries went; the newest are still answered from the memo.
        memo = await search_memo.Memo.of(conn)
        await memo.event_search(ns, None, f'"step{3 * search_memo.MAX_ANSWERS - 1}"', STATUSES, 12)
        await memo.event_search(ns, None, '"step0"', STATUSES, 12)
        assert asked.count('"step0"') == 2 and asked.count(f'"step{3 * search_memo.MAX_ANSWERS - 1}"') == 1
        assert memo.answers is not None and len(memo.answers) == search_memo.MAX_ANSWERS
