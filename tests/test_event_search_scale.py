"""Event search stays bounded as memory grows (events/store.py ``search``, events/common_terms.py), and gives the
answers it gave before: terms most events hold are left out only past a size (their BM25 weight is ~0), the
per-connection counts follow every write (this connection's, another connection's, deletions), the index-first
ranking returns exactly what ranking every match with the filter returns, and a near-duplicate check finds its
duplicate through the text's numbers. Real SQLite files; writes go through the one admission path."""

from __future__ import annotations

import tempfile
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from stratagate.capture.store import ensure_namespace, ensure_session
from stratagate.events import common_terms, store
from stratagate.events.admit import Candidate, Options, admit
from stratagate.events.store import Source
from stratagate.events.visibility import where as visible_where
from stratagate.storage import term_feed
from stratagate.storage.db import Database
from stratagate.text.terms import quote

WORDS = ["alpha", "bravo", "charlie", "delta", "echo", "foxtrot"]


def text(i: int) -> str:
    """Every text holds 'common'; 'bravo' every 3rd, 'charlie' every 7th, 'delta' once: graded frequencies."""
    words = ["common", f"item{i}"]
    words += ["bravo"] if i % 3 == 0 else []
    words += ["charlie"] if i % 7 == 0 else []
    words += ["delta"] if i == 5 else []
    return " ".join(words) + f" note {i}."


async def remember(
    db: Database, texts: list[str], namespace: str = "proj", session: str = "s1", user_every: int = 0
) -> None:
    async with db.transaction() as conn:
        ns = await ensure_namespace(conn, namespace)
        sess, _ = await ensure_session(conn, ns, session)
        options = Options(namespace_id=ns, session_id=sess, origin="remember", actor="agent", on_tombstone="refuse",
                          on_exact_duplicate="keep", unknown_target="error")
        for i, t in enumerate(texts):
            scope = "user" if user_every and i % user_every == 0 else "project"
            await admit(conn, [Candidate(statement=t, scope=scope, mentioned_at=datetime.now(UTC),
                                         sources=[Source(call_id="c", quote=t)])], options)


async def test_common_terms_are_split_past_the_size_and_counts_follow_other_connections(db: Database, tmp_path: Path):
    await remember(db, [text(i) for i in range(30)])
    terms = ["common", "bravo", "charlie", "missing"]
    # Below min_rows events everything is scored.
    assert await common_terms.split(db.reader, terms, min_rows=100) == (terms, [])
    assert await common_terms.split(db.reader, terms, min_rows=5) == (["bravo", "charlie", "missing"], ["common"])
    # Another connection (as another process would) writes 30 events holding 'bravo': now half of them hold it.
    other = Database(tmp_path / "memory.db")
    await other.open()
    try:
        await remember(other, [f"bravo entry {i}" for i in range(30)])
    finally:
        await other.close()
    assert await common_terms.split(db.reader, terms, min_rows=5) == (["charlie", "missing"], ["common", "bravo"])
    # This connection's own writes count too, and a count made on the writer is kept apart from the reader's.
    await remember(db, [f"charlie entry {i}" for i in range(40)])
    assert await common_terms.split(db.reader, terms, min_rows=5) == (["common", "bravo", "charlie", "missing"], [])
    async with db.transaction() as conn:
        assert await common_terms.split(conn, ["charlie"], min_rows=5) == (["charlie"], [])


async def test_a_recount_follows_deleted_rows(db: Database):
    await remember(db, [f"plain {i}" for i in range(10)] + [f"common {i}" for i in range(20)])
    assert await common_terms.split(db.reader, ["common"], min_rows=15) == ([], ["common"])
    async with db.transaction() as conn:  # the newest rows go: the count made before them is not reused
        for table, key in (("event_fts", "rowid"), ("event_sources", "event_id"), ("graph_projection", "event_id"),
                           ("events", "id")):
            await conn.execute(f"DELETE FROM {table} WHERE {key} > 20")
    assert await common_terms.split(db.reader, ["common"], min_rows=15) == (["common"], [])


async def test_search_skips_common_terms_and_falls_back_to_them(db: Database, monkeypatch: pytest.MonkeyPatch):
    await remember(db, [text(i) for i in range(40)])
    ns = 1
    exact = await store.search(db.reader, ns, None, f'{quote("common")} OR {quote("delta")}', ["active"], None, 3)
    monkeypatch.setattr(common_terms, "COMMON_MIN_ROWS", 5)
    skipped = await store.search(db.reader, ns, None, f'{quote("common")} OR {quote("delta")}', ["active"], None, 3)
    # The one event holding the rare term ranks first either way; the rest held only 'common' (BM25 ~0).
    assert [ev.title for ev, _ in skipped] == [exact[0][0].title]
    assert exact[0][0].title.startswith("common item5 ")
    # Only the common term matches: the best of the newest events holding it (5 × the limit), by their BM25.
    newest = await store.search(db.reader, ns, None, quote("common"), ["active"], None, 3)
    assert len(newest) == 3 and all(ev.id > 40 - 15 for ev, _ in newest)
    assert [score for _, score in newest] == sorted((score for _, score in newest), reverse=True)
    assert await store.search(db.reader, ns, None, quote("nothing"), ["active"], None, 3) == []


_corpus: dict[str, Any] = {}


async def _corpus_db() -> Database:
    """60 events in two namespaces (user-tier ones among them) with mixed statuses, built once for the property."""
    if "path" not in _corpus:
        path = Path(tempfile.mkdtemp()) / "memory.db"
        d = Database(path)
        await d.open()
        for ns in ("proj", "other"):
            await remember(d, [f"{ns} " + " ".join(WORDS[j] for j in range(6) if (i >> j) & 1 or j == i % 6)
                               + f" {i}" for i in range(30)], ns, user_every=4)
        async with d.transaction() as conn:
            await conn.execute("UPDATE events SET status = 'disputed', prior_status = 'active' WHERE id % 5 = 0")
        await d.close()
        _corpus["path"] = path
    d = Database(_corpus["path"])
    await d.open()
    return d


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    words=st.lists(st.sampled_from(WORDS), min_size=1, max_size=4, unique=True),
    statuses=st.sampled_from([["active"], ["disputed"], ["active", "disputed"]]),
    namespace=st.sampled_from([1, 2, None]),
    wanted=st.integers(1, 12),
    prefilter=st.integers(1, 4),
)
async def test_index_first_ranking_equals_ranking_every_match(
    words: list[str], statuses: list[str], namespace: int | None, wanted: int, prefilter: int
):
    d = await _corpus_db()
    try:
        visible, params = visible_where(namespace, None)
        where = [visible, f"e.status IN ({', '.join('?' for _ in statuses)})"]
        params = [*params, *statuses]
        match = " OR ".join(quote(w) for w in words)
        # Every match ranked (by the derived index: the ranking search uses), then filtered.
        every = await term_feed.EVENTS.ranked(d.reader, words, 10_000)
        assert every is not None and len(every) == len({r[0] for r in every})
        passing = {
            int(r[0])
            for r in await d.reader.execute_fetchall(
                f"SELECT e.id FROM events e WHERE {' AND '.join(where)}", params
            )
        }
        expected = [(event_id, rank) for event_id, rank in every if event_id in passing][:wanted]
        original = store.PREFILTER, store.INDEX_PREFILTER
        store.PREFILTER = store.INDEX_PREFILTER = prefilter
        try:
            got = await store._best_matches(d.reader, match, where, params, wanted)
        finally:
            store.PREFILTER, store.INDEX_PREFILTER = original
        assert [(event_id, rank) for event_id, rank, _, _ in got] == expected
    finally:
        await d.close()


async def test_near_duplicate_is_found_through_its_numbers(db: Database):
    await remember(db, [f"Service {i} listens on port {8000 + i} behind the proxy." for i in range(40)])
    async with db.transaction() as conn:
        found = await store.near_duplicate(conn, 1, 1, "service 17 listens on port 8017 behind the proxy!")
        assert found is not None and found.title.startswith("Service 17 ")
        # Other numbers are another memory, however many words are shared.
        assert await store.near_duplicate(conn, 1, 1, "Service 17 listens on port 8018 behind the proxy.") is None
        # No forgotten event at all: the tombstone check answers from the index without a search.
        assert await store.near_duplicate(conn, 1, 1, "Service 17 listens on port 8017", ("forgotten",)) is None


async def test_set_based_graph_reads_agree_with_the_per_node_ones(db: Database):
    from stratagate.graph import read as graph_read
    from stratagate.graph import store as graph_store
    from stratagate.tools.event_tools import _project_now

    texts = ["The project uses npm", "We switched to pnpm", "The project uses docker", "The project uses redis",
             "We stopped using redis"]
    async with db.transaction() as conn:
        ns = await ensure_namespace(conn, "proj")
        for session, scope in (("s1", "project"), ("s2", "session")):
            sess, _ = await ensure_session(conn, ns, session)
            options = Options(namespace_id=ns, session_id=sess, origin="remember", actor="agent",
                              on_tombstone="refuse", on_exact_duplicate="keep", unknown_target="error",
                              projector=_project_now)
            for t in texts if scope == "project" else ["The project uses vitest"]:
                await admit(conn, [Candidate(statement=t, scope=scope, mentioned_at=datetime.now(UTC),
                                             sources=[Source(call_id="c", quote=t)])], options)
    conn = db.reader
    nodes = [graph_store.NodeRow.model_validate(dict(r))
             for r in await conn.execute_fetchall("SELECT * FROM graph_nodes ORDER BY id")]
    assert len(nodes) >= 5
    for session in (None, 1, 2):
        one_by_one = {n.id for n in nodes if await graph_read.node_visible(conn, n, session)}
        assert await graph_read.visible_nodes(conn, [n.id for n in nodes], session) == one_by_one
        for node in nodes:  # current facts in SQL = every fact filtered in Python, same order
            every = [f for f in await graph_store.facts_of_node(conn, node.id) if f.status in ("active", "disputed")]
            assert await graph_store.current_facts_of_node(conn, node.id) == every
    assert {n.name for n in nodes if n.id not in await graph_read.visible_nodes(conn, [n.id for n in nodes], 1)} \
        >= {"vitest"}


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(uses=st.lists(st.tuples(st.integers(0, 7), st.sampled_from([1, 2]), st.integers(1, 9)), max_size=12))
async def test_event_weights_equal_weight_of_one_by_one(uses: list[tuple[int, int, int]]):
    """Activation scales its candidates by ``event_weights`` (five statements for all of them): the same numbers
    ``weight_of`` gives one event at a time, for any use receipts, in any session, of either namespace."""
    from stratagate.evidence import weights

    d = Database(Path(tempfile.mkdtemp()) / "memory.db")
    await d.open()
    try:
        await remember(d, [f"memory number {i} about tools" for i in range(6)], user_every=3)
        await remember(d, ["another namespace's memory", "its user preference"], "other", user_every=2)
        async with d.transaction() as conn:
            await ensure_session(conn, 1, "s2")
            await conn.execute("UPDATE sessions SET turn_count = 10 WHERE id = 1")  # distances from the session clock
            await conn.execute("UPDATE events SET pinned = 1 WHERE id = 2")
            await conn.execute("UPDATE events SET status = 'superseded', successor_id = 4 WHERE id = 3")
            for event, session, turn in uses:
                if event + 1 <= 8:
                    await weights.reinforce(conn, 1, session, "event", event + 1, turn)
        every = list(range(1, 10))
        for session in (None, 1, 2):
            expected = {}
            for event_id in every:
                w = await weights.weight_of(d.reader, 1, session, "event", event_id)
                if w is not None:
                    expected[event_id] = w["weight"]
            assert await weights.event_weights(d.reader, 1, session, every) == expected
    finally:
        await d.close()
