"""Derived indexes (storage/term_index.py) kept in step with their FTS table through ``search_changes``: ``EVENTS``
over ``event_fts``. (Not graph nodes yet: a node is re-indexed on every fact change, and tantivy counts a replaced
document in its BM25 statistics until its segment is merged, so the scores of unchanged nodes would drift.)

Before each ranked query the feed rows past what this connection has seen are read: the items' current terms are
read from the FTS table (none: the item is gone) and held as pending (scored here with the index's BM25, hiding the
item's committed document) until ``BATCH`` of them are committed in one go, since a commit costs ~10 ms of CPU
while scoring a pending item costs microseconds. The index is rebuilt when it is missing, of another format,
unreadable or of another database. Erase, redaction and namespace deletion remove the indexes outright
(``term_index.discard``): deleted documents would otherwise keep their terms in old segments until a merge.

Answers None whenever the index cannot answer exactly what SQLite would hold: inside a write transaction (the
index only knows committed rows), while another process holds the index's write lock and this one could not catch
up, or without tantivy. The caller then ranks with FTS5.

Pruning (``prune``, run by maintenance): the feed rows below the committed index's watermark are deleted (the
watermark's own row stays: it is how an index proves it belongs to this database), and how far rows are gone is kept
in ``meta`` (``pruned_key``), in the same transaction. Every catch-up reads that mark with the rows, in one
statement: a process whose view of the feed is older than it (another process committed the index and pruned
meanwhile) reopens the committed index, which holds every deleted row, instead of reading past the gap; an index
that is missing or older than the pruned rows (restored from a copy) no longer finds its watermark's row and is
rebuilt from the FTS table, the source.
"""

from __future__ import annotations

import asyncio
import logging
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

from stratagate.storage import term_index
from stratagate.storage.db import Database
from stratagate.storage.sqlite import Connection, caches
from stratagate.storage.term_index import Mark, TermIndex

log = logging.getLogger(__name__)

BATCH = 64
MAX_PENDING = 4096
"""More pending items than this (the lock held elsewhere for long) and FTS5 answers instead."""
CHUNK = 500


@dataclass(frozen=True)
class Feed:
    """One derived index: its ``search_changes`` kind, the FTS table it mirrors and its directory's name."""

    kind: str
    table: str
    name: str

    async def ranked(self, conn: Connection, terms: list[str], limit: int) -> list[tuple[int, float]] | None:
        """The ``limit`` best (id, BM25 signed as FTS5's: lower is better) items holding any of ``terms``, best
        first (ties: newest first), or None when FTS5 must answer."""
        return await ranked(self, conn, terms, limit)

    async def flush(self, conn: Connection) -> bool:
        """Catch up and commit every pending item now (pending items are scored with this module's BM25, which
        approximates tantivy's: its length norms are quantised); False when the index cannot be written now."""
        state = await _state(self, conn)
        if state is None or conn.in_transaction:
            return False
        async with state.lock:
            if not await _catch_up(conn, state) or state.index is None:
                return False
            if state.pending:
                _commit(state, state.index)
            return not state.pending


EVENTS = Feed("event", "event_fts", "events")
FEEDS = (EVENTS,)


def pruned_key(feed: Feed) -> str:
    """The ``meta`` key of the highest feed seq of ``feed``'s kind that pruning deleted."""
    return f"search_changes_pruned.{feed.kind}"


async def prune(db: Database, feed: Feed = EVENTS) -> int:
    """Delete ``feed``'s change rows the committed index holds (below its watermark); the number deleted. Nothing
    when there is no committed index of this database: a rebuild would then need no row anyway, but a catch-up
    would."""
    mark = term_index.committed_mark(term_index.path_of(db.path) / feed.name)
    if mark is None or mark.seq <= 1:
        return 0
    async with db.transaction() as conn:
        rows = list(await conn.execute_fetchall("SELECT item_id FROM search_changes WHERE seq = ?", (mark.seq,)))
        if not rows or int(rows[0][0]) != mark.item:
            return 0  # a watermark this database never wrote (or already pruned away): not this database's index
        cur = await conn.execute("DELETE FROM search_changes WHERE kind = ? AND seq < ?", (feed.kind, mark.seq))
        await conn.execute(
            "INSERT INTO meta(key, value) VALUES (?, ?) ON CONFLICT(key) DO UPDATE SET value = excluded.value"
            " WHERE CAST(excluded.value AS INTEGER) > CAST(meta.value AS INTEGER)",
            (pruned_key(feed), str(mark.seq - 1)),
        )
        return max(0, cur.rowcount)


@dataclass
class _State:
    feed: Feed
    path: Path
    index: TermIndex | None = None
    seen: Mark = field(default_factory=lambda: Mark(0, 0, 0, 0))
    pending: dict[int, tuple[int, Counter[str], int]] = field(default_factory=dict)
    """Item id → (feed seq, term counts, length) of items read from SQLite but not committed to the index."""
    lock: asyncio.Lock = field(default_factory=asyncio.Lock)


async def ranked(feed: Feed, conn: Connection, terms: list[str], limit: int) -> list[tuple[int, float]] | None:
    if conn.in_transaction:
        return None
    state = await _state(feed, conn)
    if state is None or state.lock.locked():
        return None  # (a rebuild is under way in a thread: FTS5 answers meanwhile rather than wait for it)
    async with state.lock:
        try:
            if not await _catch_up(conn, state) or state.index is None:
                return None
            return _top(state.index, state.pending, terms, limit)
        except (OSError, ValueError) as exc:  # removed or damaged under us (another process, a discard)
            log.warning("%s search index unusable, FTS5 answers: %s", feed.kind, type(exc).__name__)
            state.index = None
            return None


async def _state(feed: Feed, conn: Connection) -> _State | None:
    key = f"{__name__}.{feed.kind}"
    kept = caches(conn)
    if key in kept:
        cached: _State | None = kept[key]
        return cached
    state = None
    rows = await conn.execute_fetchall("PRAGMA database_list")
    db_file = next((str(r[2]) for r in rows if r[1] == "main"), "")
    if db_file and term_index.available():
        state = _State(feed, term_index.root(Path(db_file)) / feed.name)
    kept[key] = state
    return state


async def _catch_up(conn: Connection, state: _State) -> bool:
    for _ in range(3):  # (a prune landing between two reads of the feed: the next one sees the reopened index)
        if state.index is None or state.index.stale():
            state.index = await _reopen(conn, state)
        if state.index is None:
            return await _rebuild(conn, state)
        rows = await _past(conn, state)
        if rows is not None:
            return await _apply(conn, state, state.index, rows)
        state.index = None  # rows past what this process read were pruned: the committed index holds them
    return False


async def _past(conn: Connection, state: _State) -> list[tuple[int, int]] | None:
    """The feed rows past what this process has read, or None when some of them were pruned (read in one statement
    with the pruned mark: one snapshot, so a prune cannot fall between the two)."""
    rows = list(await conn.execute_fetchall(
        "SELECT NULL, CAST(value AS INTEGER) FROM meta WHERE key = ?"
        " UNION ALL SELECT seq, item_id FROM search_changes WHERE seq > ? AND kind = ? ORDER BY 1",
        (pruned_key(state.feed), state.seen.seq, state.feed.kind),
    ))
    if rows and rows[0][0] is None:
        if int(rows[0][1]) > state.seen.seq:
            return None
        rows = rows[1:]
    return [(int(r[0]), int(r[1])) for r in rows]


async def _apply(conn: Connection, state: _State, index: TermIndex, rows: list[tuple[int, int]]) -> bool:
    """Hold the items ``rows`` changed as pending (their current terms read from the FTS table), committed to the
    index ``BATCH`` at a time; False when more are pending than FTS5 should stand in for."""
    feed = state.feed
    if rows:
        seqs = {item_id: seq for seq, item_id in rows}  # an item changed twice: its last change
        ids = list(seqs)
        found: dict[int, str] = {}
        for start in range(0, len(ids), CHUNK):
            chunk = ids[start : start + CHUNK]
            for item_id, text in await conn.execute_fetchall(
                f"SELECT rowid, terms FROM {feed.table} WHERE rowid IN ({', '.join('?' for _ in chunk)})", chunk
            ):
                found[int(item_id)] = str(text)
        for item_id in ids:  # (no row: the item is gone; its pending entry holds no term and hides its document)
            words = found.get(item_id, "").split()
            state.pending[item_id] = (seqs[item_id], Counter(words), len(words))
        state.seen = Mark(rows[-1][0], rows[-1][1], 0, 0)
    if len(state.pending) >= BATCH:
        _commit(state, index)
    return len(state.pending) <= MAX_PENDING


async def _reopen(conn: Connection, state: _State) -> TermIndex | None:
    """The committed index when it belongs to this database; pending items it now holds are dropped."""
    index = TermIndex.open(state.path)
    if index is None:
        return None
    if index.mark.seq:
        row = await (
            await conn.execute("SELECT item_id FROM search_changes WHERE seq = ?", (index.mark.seq,))
        ).fetchone()
        if row is None or int(row[0]) != index.mark.item:
            return None  # a watermark this database never wrote: the index is another database's
    for item_id in [i for i, (seq, _, _) in state.pending.items() if seq <= index.mark.seq]:
        del state.pending[item_id]
    if index.mark.seq > state.seen.seq:
        state.seen = index.mark
    return index


async def _rebuild(conn: Connection, state: _State) -> bool:
    """Index every row of the feed's FTS table again; False when another process holds the write lock."""
    with term_index.write_lock(state.path.parent) as mine:
        if not mine:
            return False
        # The watermark is read before the rows: a row written in between is applied again later (idempotent).
        last = await (
            await conn.execute("SELECT seq, item_id FROM search_changes ORDER BY seq DESC LIMIT 1")
        ).fetchone()
        mark = Mark(int(last[0]), int(last[1]), 0, 0) if last else Mark(0, 0, 0, 0)
        builder = await asyncio.to_thread(term_index.Builder, state.path)
        after = -1
        while rows := list(await conn.execute_fetchall(
            f"SELECT rowid, terms FROM {state.feed.table} WHERE rowid > ? ORDER BY rowid LIMIT 2000", (after,)
        )):
            await asyncio.to_thread(builder.add, [(int(r[0]), str(r[1])) for r in rows])
            after = int(rows[-1][0])
        state.index = await asyncio.to_thread(builder.finish, mark)
        state.seen = mark
        state.pending.clear()
    return True


def _commit(state: _State, index: TermIndex) -> None:
    """Pending items into the index, when the write lock is free and no other process got there first."""
    with term_index.write_lock(state.path.parent) as mine:
        if not mine or index.stale():
            return  # the next query reopens what the other process committed
        docs = [(item_id, " ".join(terms.elements())) for item_id, (_, terms, _) in state.pending.items()]
        index.add(docs, state.seen)
        state.pending.clear()


def _top(
    index: TermIndex, pending: dict[int, tuple[int, Counter[str], int]], terms: list[str], limit: int
) -> list[tuple[int, float]]:
    found = [(i, s) for i, s in index.top(terms, limit + len(pending)) if i not in pending][:limit]
    if not pending:
        return [(item_id, -score) for item_id, score in found]
    docs, df = index.stats(terms)
    held = [(i, counts, length) for i, (_, counts, length) in pending.items() if any(t in counts for t in terms)]
    for t in terms:
        df[t] += sum(1 for _, counts, _ in held if t in counts)
    total = docs + len(pending)
    avg = (index.mark.tokens + sum(length for _, _, length in pending.values())) / max(
        1, index.mark.docs + len(pending)
    )
    for item_id, counts, length in held:
        score = sum(
            term_index.bm25(counts[t], length, total, df[t], avg) for t in terms if t in counts
        )
        found.append((item_id, score))
    found.sort(key=lambda pair: (-pair[1], -pair[0]))
    return [(item_id, -score) for item_id, score in found[:limit]]
