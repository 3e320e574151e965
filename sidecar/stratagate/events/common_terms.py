"""Which query terms most events hold: event search leaves them out of scoring (events/store.py, ``search``).

FTS5 clamps the IDF of a term held by half the rows or more to ~1e-6, so scoring it changes no ranking between
events that hold a rarer query term, while its posting list (every event, in the worst case) is what made each
search grow linearly with memory. The same rule as message search (search/raw.py, ``_informative``).

Counting a term's rows is linear too (fts5vocab counts them one by one), so each connection keeps the counts it
made, with the highest event id they cover: the next search adds only the rows written after it (a rowid-range
seek in the term's posting list, whoever wrote them: this process or another). Rows deleted below that id (an
erase) leave the count one high until the connection closes; that only moves a term sitting right on the
half-way line, never what is visible.
"""

from __future__ import annotations

from dataclasses import dataclass

from stratagate.storage.sqlite import Connection, caches
from stratagate.text.terms import quote

COMMON_MIN_ROWS = 2000
"""A term is left out only once this many events hold it: small memories are scored exactly."""
MAX_CACHED = 50_000


@dataclass
class _Count:
    rows: int
    upto: int  # the highest event id this count covers


_CACHE = __name__
"""This module's entry in the connection's ``caches`` (storage/sqlite.py): term → its count."""


async def _scalar(conn: Connection, sql: str, params: tuple[object, ...] = ()) -> int:
    rows = await conn.execute_fetchall(sql, params)  # one hop to the connection's thread (execute + fetchone: two)
    return next((int(r[0] or 0) for r in rows), 0)


async def split(
    conn: Connection, terms: list[str], min_rows: int | None = None
) -> tuple[list[str], list[str]]:
    """(terms worth scoring, terms held by half the events or more and by at least ``min_rows``, by default
    ``COMMON_MIN_ROWS``), in query order."""
    min_rows = COMMON_MIN_ROWS if min_rows is None else min_rows
    total = await _scalar(conn, "SELECT max(id) FROM events")  # ids are event_fts rowids: ≥ the row count
    if total < min_rows:
        return list(terms), []
    cache: dict[str, _Count] = caches(conn).setdefault(_CACHE, {})
    if len(cache) > MAX_CACHED:
        cache.clear()
    keep: list[str] = []
    common: list[str] = []
    for term in terms:
        (common if await _common(conn, cache, term, total, min_rows) else keep).append(term)
    return keep, common


async def _common(conn: Connection, cache: dict[str, _Count], term: str, upto: int, min_rows: int) -> bool:
    def common(rows: int) -> bool:
        return rows >= min_rows and rows * 2 >= upto

    known = cache.get(term)
    if known is None or known.upto > upto:  # never counted, or rows above the count were deleted: count again
        known = _Count(0, 0)
    elif common(known.rows) == common(known.rows + upto - known.upto):
        return common(known.rows)  # however many of the newer rows hold it, the answer is the same: no count
    if known.upto < upto:
        added = await _scalar(
            conn,
            "SELECT count(*) FROM event_fts WHERE event_fts MATCH ? AND rowid > ? AND rowid <= ?",
            (quote(term), known.upto, upto),
        )
        known = _Count(known.rows + added, upto)
        cache[term] = known
    return common(known.rows)
