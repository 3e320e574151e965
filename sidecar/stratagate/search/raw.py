"""Ranked retrieval over the captured source messages (user, assistant, tool calls and results).

How a message is scored for a query (each step measured on LoCoMo, see docs/benchmarks.md):

1. Lexical: SQLite FTS5 ``bm25()`` per distinct query term (the shared tokenizer: stemmed words, CJK bigrams,
   date tokens), summed. Scoring term by term is what FTS5 does for an OR query, and lets each term carry a
   weight (question filler words count less). In a large index a term found in half the rows or more is not
   scored (FTS5 gives it ~0 weight anyway, and its posting list is the costly part).
2. Dates: a query that names a period ("in May 2023", "in June") favours messages written in it.
3. Neighbours: a message earns a share of the better lexical score of its previous and next message, the full
   score of a previous message that asks a question: an answer often sits right after the question that names
   its subject ("How long have you been married?" / "5 years already!"); such an answer is a hit even when it
   does not repeat the query's words.
4. Dense (when the dense channel is on): BM25 normalised to the best match plus the cosine similarity of the
   query to the message's stored vector; the nearest messages by cosine that contain a query term join.

Nothing matches → nothing is returned: no fallback to recency, and no hit from cosine similarity alone (it ranks
every message, so it cannot say "no match").
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Literal, Protocol

from stratagate.text.dates import find_dates, find_months
from stratagate.text.messages import search_text
from stratagate.text.terms import Stemming, fts_document, quote, terms
from stratagate.timeutil import to_iso

# Question words that carry no topic ("What kind of music does she like?"). They still count, at a lower weight,
# because in a message they can be the topic ("the kind words"). Generic English, not taken from any benchmark.
FILLER = frozenset(
    """kind kinds sort sorts type types thing things stuff way ways part lot lots much many often usual usually
    like likes liked likely probably might may maybe think thought thinks say says said tell told mention
    mentioned mentions talk talked talking ask asked get got go going went come came make made take took
    also ever still yet even really actually one ones someone something anything everything time times""".split()
)


class Reader(Protocol):
    async def fetchall(self, sql: str, params: Any = ()) -> list[Any]: ...


@dataclass(frozen=True)
class RawOptions:
    """Ranking knobs. The defaults are what memory_search_raw uses; the bench switches them one at a time."""

    stem: Stemming = "snowball"
    dates: bool = True  # date tokens in queries (the index side is fixed when the row is written)
    pool: int = 1000  # best matches taken per query term
    skip_common: bool = True  # do not score terms found in half the rows or more (their BM25 weight is ~0) …
    common_min_rows: int = 2000  # … and in at least this many rows
    filler_weight: float = 0.3  # weight of FILLER words in a query (1.0 = off)
    neighbour_share: float = 0.6  # share of the better neighbour's lexical score a message earns (0 = off)
    answer_share: float = 1.0  # the share from a previous message that asks a question (the hit may answer it)
    donors: int = 300  # the best lexical matches whose neighbours get a share
    # A neighbour that matches no query term may still become a hit through its share: never (""), only the
    # message right after a matching question ("answers"), or any neighbour of a strong match ("all").
    neighbour_hits: Literal["", "answers", "all"] = "answers"
    date_boost: float = 0.5  # score x (1 + date_boost) for messages written in the period the query names
    dense_weight: float = 1.0  # cosine weight against BM25 normalised to the best match (0 = off)
    dense_pool: int = 100  # nearest messages by cosine that may join the matches if they contain a query term


DEFAULT_OPTIONS = RawOptions()


@dataclass(frozen=True)
class RawFilters:
    session_ids: tuple[int, ...] | None = None
    roles: tuple[str, ...] | None = None
    after: str | None = None  # ISO UTC, inclusive
    before: str | None = None  # ISO UTC, exclusive

    def any(self) -> bool:
        return bool(self.session_ids or self.roles or self.after or self.before)

    def sql(self, alias: str = "m") -> tuple[str, list[Any]]:
        parts: list[str] = []
        params: list[Any] = []
        if self.session_ids:
            parts.append(f"{alias}.session_id IN ({','.join('?' * len(self.session_ids))})")
            params.extend(self.session_ids)
        if self.roles:
            parts.append(f"{alias}.role IN ({','.join('?' * len(self.roles))})")
            params.extend(self.roles)
        if self.after:
            parts.append(f"{alias}.created_at >= ?")
            params.append(self.after)
        if self.before:
            parts.append(f"{alias}.created_at < ?")
            params.append(self.before)
        return "".join(" AND " + p for p in parts), params


@dataclass
class Ranked:
    message_id: int
    score: float
    lexical: float = 0.0
    matched: list[str] = field(default_factory=list)
    dense: float | None = None
    answers: int | None = None  # a hit without the query's words: the matching question (message id) it follows


@dataclass
class QueryPlan:
    terms: dict[str, float]  # distinct query term -> weight
    windows: list[tuple[str, str]]  # [start, end) ISO periods named by the query
    months: list[int] = field(default_factory=list)  # months named without a year ("in June")


def plan(query: str, options: RawOptions = DEFAULT_OPTIONS) -> QueryPlan:
    weights: dict[str, float] = {}
    for word in terms(query, stem="none", dates=options.dates):
        stemmed = terms(word, stem=options.stem, dates=False) if not _is_date_token(word) else [word]
        for t in stemmed:
            w = options.filler_weight if word in FILLER else 1.0
            weights[t] = max(weights.get(t, 0.0), w)
    windows = []
    if options.dates:
        for span in find_dates(query):
            start, end = span.window()
            windows.append((to_iso(start), to_iso(end)))
    return QueryPlan(weights, windows, find_months(query) if options.dates else [])


def _is_date_token(term: str) -> bool:
    return len(term) > 4 and term[0] in "ymd" and term[1:].isdigit()


async def lexical(
    db: Reader, namespace_id: int, q: QueryPlan, filters: RawFilters, options: RawOptions
) -> dict[int, Ranked]:
    """Per-term BM25 over message_fts, weighted and summed."""
    where, params = filters.sql()
    ranked: dict[int, Ranked] = {}
    scopes: list[tuple[str, list[Any]]] = [("", [])]
    scopes += [(" AND m.created_at >= ? AND m.created_at < ?", [s, e]) for s, e in q.windows]
    terms, common = list(q.terms), list[str]()
    if options.skip_common:
        terms, common = await _informative(db, terms, options.common_min_rows)
    await _score_terms(db, namespace_id, q, terms, scopes, where, params, options, ranked)
    if not ranked and common:  # only the common terms match: they still do
        await _score_terms(db, namespace_id, q, common, scopes, where, params, options, ranked)
    return ranked


async def _score_terms(
    db: Reader, namespace_id: int, q: QueryPlan, terms: list[str], scopes: list[tuple[str, list[Any]]], where: str,
    params: list[Any], options: RawOptions, ranked: dict[int, Ranked],
) -> None:
    for term in terms:
        weight = q.terms[term]
        seen: set[int] = set()
        for extra, extra_params in scopes:
            rows = await db.fetchall(
                "SELECT m.id, bm25(message_fts) AS r FROM message_fts JOIN messages m ON m.id = message_fts.rowid"
                f" WHERE message_fts MATCH ? AND m.namespace_id = ?{where}{extra} ORDER BY r LIMIT ?",
                (quote(term), namespace_id, *params, *extra_params, options.pool),
            )
            for row in rows:
                mid = int(row[0])
                if mid in seen:
                    continue
                seen.add(mid)
                hit = ranked.setdefault(mid, Ranked(mid, 0.0))
                hit.lexical += weight * -float(row[1])
                hit.matched.append(term)


async def _informative(db: Reader, terms: list[str], min_rows: int) -> tuple[list[str], list[str]]:
    """(terms worth scoring, terms too common to score).

    FTS5 clamps the IDF of a term found in half the rows or more to 1e-6, so scoring it (the costly part: its whole
    posting list, tens of ms per 10 k rows) changes no score. Counting a term's rows is cheap. Terms in fewer than
    ``min_rows`` rows are always scored: small indexes stay exact.
    """
    total = await db.fetchall("SELECT max(rowid) FROM message_fts")  # rows are never deleted: ≈ the row count
    rows = float(total[0][0] or 0) if total else 0.0
    keep: list[str] = []
    common: list[str] = []
    for term in terms:
        found = await db.fetchall("SELECT count(*) FROM message_fts WHERE message_fts MATCH ?", (quote(term),))
        n = int(found[0][0])
        (common if n >= min_rows and n * 2 >= rows else keep).append(term)
    return keep, common


async def neighbour_ids(db: Reader, message_ids: list[int]) -> dict[int, tuple[int | None, int | None]]:
    """The previous and next message of each message in its session (by turn, then position in the turn)."""
    return {mid: (prev, nxt) for mid, (prev, nxt, _) in (await _neighbours(db, message_ids)).items()}


async def _neighbours(db: Reader, message_ids: list[int]) -> dict[int, tuple[int | None, int | None, bool]]:
    """Previous id, next id, and whether the message itself asks a question (has a '?')."""
    out: dict[int, tuple[int | None, int | None, bool]] = {}
    for chunk in _chunks(message_ids, 500):
        rows = await db.fetchall(
            "SELECT c.id, (SELECT p.id FROM messages p WHERE p.namespace_id = c.namespace_id"
            "  AND p.session_id = c.session_id"
            "  AND (p.turn_id < c.turn_id OR (p.turn_id = c.turn_id AND p.position < c.position))"
            "  ORDER BY p.turn_id DESC, p.position DESC LIMIT 1) AS prev,"
            " (SELECT n.id FROM messages n WHERE n.namespace_id = c.namespace_id AND n.session_id = c.session_id"
            "  AND (n.turn_id > c.turn_id OR (n.turn_id = c.turn_id AND n.position > c.position))"
            "  ORDER BY n.turn_id, n.position LIMIT 1) AS next, instr(c.content, '?') > 0 AS asks"
            f" FROM messages c WHERE c.id IN ({','.join('?' * len(chunk))})",
            chunk,
        )
        for r in rows:
            out[int(r[0])] = (r[1], r[2], bool(r[3]))
    return out


def _chunks(items: list[int], size: int) -> list[list[int]]:
    return [items[i : i + size] for i in range(0, len(items), size)]


async def _passing(db: Reader, message_ids: list[int], filters: RawFilters) -> list[int]:
    where, params = filters.sql()
    out: list[int] = []
    for chunk in _chunks(message_ids, 500):
        rows = await db.fetchall(
            f"SELECT m.id FROM messages m WHERE m.id IN ({','.join('?' * len(chunk))}){where}", (*chunk, *params)
        )
        out.extend(int(r[0]) for r in rows)
    return out


async def _boost_dates(db: Reader, ranked: dict[int, Ranked], q: QueryPlan, boost: float) -> None:
    """Messages written in a period the query names ("in May 2023", "in June") count (1 + boost) times."""
    if not (q.windows or q.months) or boost <= 0 or not ranked:
        return
    for chunk in _chunks(list(ranked), 500):
        rows = await db.fetchall(
            f"SELECT id, created_at FROM messages WHERE id IN ({','.join('?' * len(chunk))})", chunk
        )
        for r in rows:
            if any(s <= r[1] < e for s, e in q.windows) or int(r[1][5:7]) in q.months:
                ranked[int(r[0])].lexical *= 1 + boost


# The dense channel, as ranking needs it: (query, message ids, k) → cosine similarity of the query to each given
# message, or with ids None to the k nearest messages of the namespace; None when the channel is not available.
Similarities = Callable[[str, list[int] | None, int], Awaitable[dict[int, float] | None]]


async def _not_installed(query: str, message_ids: list[int] | None, k: int) -> dict[int, float] | None:
    return None


def dense_similarities(index: Any, db: Any, namespace_id: int, prefetch: str | None = None) -> Similarities:
    """The production dense channel: the query encoded by ``stratagate.search.dense`` (loaded on first use),
    against the message vectors the background embedding job stored (``stratagate.search.vectors``).

    ``index`` is the app's ``search.vectors.DenseIndex``, ``db`` the sidecar's ``Database``. None (no fusion) when
    the channel is off or not installed; messages that have no vector yet are simply missing from the answer.
    ``prefetch``: a query text to start encoding now, in its thread, while the caller ranks lexically (query vectors
    are cached per text by the channel).
    """
    try:
        from stratagate.search import vectors  # the dense channel is optional
    except ImportError:
        return _not_installed
    if prefetch is not None:
        index.prefetch(prefetch)

    async def similarities(query: str, message_ids: list[int] | None, k: int) -> dict[int, float] | None:
        if not index.usable():
            return None
        vector = await index.query_vector(query)
        if vector is None:
            return None
        allowed = None if message_ids is None else set(message_ids)
        limit = k if message_ids is None else len(message_ids)
        return dict(await vectors.nearest(db.reader, namespace_id, "message", vector, limit, allowed))

    return similarities


async def _semantic_matches(
    db: Reader, ranked: dict[int, Ranked], q: QueryPlan, near: dict[int, float], filters: RawFilters
) -> None:
    """The query's nearest messages by cosine that contain a query term but were not scored (their only terms are
    too common to score, see ``_informative``) join the matches with a lexical score of 0."""
    new = [mid for mid in near if mid not in ranked]
    if filters.any():
        new = await _passing(db, new, filters)
    wanted = set(q.terms)
    for chunk in _chunks(new, 500):
        rows = await db.fetchall(
            f"SELECT rowid, terms FROM message_fts WHERE rowid IN ({','.join('?' * len(chunk))})", chunk
        )
        for r in rows:
            found = [t for t in dict.fromkeys(str(r[1]).split()) if t in wanted]
            if found:
                ranked[int(r[0])] = Ranked(int(r[0]), 0.0, matched=found)


async def _fuse(
    db: Reader, ranked: dict[int, Ranked], q: QueryPlan, query: str, filters: RawFilters, options: RawOptions,
    similarities: Similarities | None,
) -> None:
    """score = lexical / best lexical + weight · cosine(query, message), over the matches.

    ``lexical`` already includes the neighbour share and the date boost. Score fusion, not rank fusion: with
    reciprocal ranks (k=60) the much weaker dense ranking pulled strong lexical matches down (measured: MRR fell
    at every weight, r@10 at every weight above 0.3); adding the cosine to the normalised BM25 re-orders matches
    of similar lexical strength and leaves clear lexical winners alone. A message without a stored vector yet
    (the embedding job runs behind capture) gets the mean cosine of the others, neither pushed nor pulled.
    """
    best = max((h.lexical for h in ranked.values()), default=0.0)
    if best <= 0:
        return
    for hit in ranked.values():
        hit.score = hit.lexical / best
    if options.dense_weight <= 0 or similarities is None:
        return
    if options.dense_pool > 0:
        near = await similarities(query, None, options.dense_pool)
        if near:
            await _semantic_matches(db, ranked, q, near, filters)
    sims = await similarities(query, list(ranked), len(ranked))
    if not sims:
        return
    mean = sum(sims.values()) / len(sims)
    for mid, hit in ranked.items():
        hit.dense = sims.get(mid)
        hit.score += options.dense_weight * max(0.0, sims.get(mid, mean))


async def _spread_to_neighbours(
    db: Reader, ranked: dict[int, Ranked], options: RawOptions, filters: RawFilters
) -> None:
    """A matching message earns a share of the better lexical score of its previous and next message:
    ``answer_share`` from a previous message that asks a question (the hit may be the answer), else
    ``neighbour_share``. The ``donors`` best matches give; weaker ones would add little.

    Only messages that match a query term themselves are ranked: a neighbour that matches nothing is shown as
    context of its hit (memory_search_raw's before/after), never as a hit of its own.
    """
    if (options.neighbour_share <= 0 and options.answer_share <= 0) or not ranked:
        return
    donors = sorted(ranked.values(), key=lambda h: (-h.lexical, h.message_id))[: options.donors]
    links = await _neighbours(db, [h.message_id for h in donors])
    gains: dict[int, float] = {}
    asked_by: dict[int, int] = {}
    for donor in donors:
        prev, nxt, asks = links.get(donor.message_id, (None, None, False))
        if prev is not None and (prev in ranked or options.neighbour_hits == "all"):
            gains[prev] = max(gains.get(prev, 0.0), options.neighbour_share * donor.lexical)
        if nxt is not None and (nxt in ranked or options.neighbour_hits == "all" or (asks and options.neighbour_hits)):
            share = options.answer_share if asks else options.neighbour_share
            if share * donor.lexical > gains.get(nxt, 0.0):
                gains[nxt] = share * donor.lexical
                if asks:
                    asked_by[nxt] = donor.message_id
    newcomers = [mid for mid in gains if mid not in ranked]
    if newcomers and filters.any():
        allowed = set(await _passing(db, newcomers, filters))
        newcomers = [mid for mid in newcomers if mid in allowed]
    for mid in newcomers:
        ranked[mid] = Ranked(mid, 0.0, answers=asked_by.get(mid))
    for mid, gain in gains.items():
        if mid in ranked:
            ranked[mid].lexical += gain


async def rank(
    db: Reader,
    namespace_id: int,
    query: str,
    filters: RawFilters = RawFilters(),
    options: RawOptions = DEFAULT_OPTIONS,
    similarities: Similarities | None = None,
    dense: Any = None,
) -> list[Ranked]:
    """Every message that matches ``query`` (within ``filters``), best first. Empty when nothing matches.

    ``dense`` is the app's dense channel (``search.vectors.DenseIndex``): its stored message vectors are used when
    the channel is available, and the ranking is lexical otherwise (or without one). ``similarities`` overrides it
    (the bench passes vectors it computed).
    """
    q = plan(query, options)
    if not q.terms:
        return []
    if similarities is None and dense is not None and options.dense_weight > 0:
        # Before BM25: the query encodes in the dense channel's thread meanwhile (the other core).
        similarities = dense_similarities(dense, db, namespace_id, prefetch=query)
    ranked = await lexical(db, namespace_id, q, filters, options)
    if not ranked:
        return []
    await _boost_dates(db, ranked, q, options.date_boost)
    await _spread_to_neighbours(db, ranked, options, filters)
    await _fuse(db, ranked, q, query, filters, options, similarities)
    return sorted(ranked.values(), key=lambda h: (-h.score, h.message_id))


async def reindex_messages(conn: Any, namespace_id: int | None = None, **tokenizer: Any) -> int:
    """Rewrite message_fts rows from the stored messages with the current tokenizer (or the one given).

    For databases written before a tokenizer change: old rows keep their old terms until this runs.
    ``conn`` is a write connection inside a transaction.
    """
    sql = "SELECT id, role, content, tool_name, tool_arguments, tool_result FROM messages"
    params: tuple[Any, ...] = ()
    if namespace_id is not None:
        sql += " WHERE namespace_id = ?"
        params = (namespace_id,)
    rows = await (await conn.execute(sql, params)).fetchall()
    for r in rows:
        row = {"role": r[1], "content": r[2], "tool_name": r[3], "tool_arguments": r[4], "tool_result": r[5]}
        await conn.execute("DELETE FROM message_fts WHERE rowid = ?", (r[0],))
        await conn.execute(
            "INSERT INTO message_fts(rowid, terms) VALUES (?, ?)", (r[0], fts_document(search_text(row), **tokenizer))
        )
    return len(rows)


_ROW_SQL = (
    "SELECT m.id, m.role, m.content, m.tool_name, m.tool_arguments, m.tool_result, m.is_error, m.created_at,"
    " m.turn_id, t.seq AS turn, s.key AS session, t.block_id, b.status AS block_status"
    " FROM messages m JOIN turns t ON t.id = m.turn_id JOIN sessions s ON s.id = m.session_id"
    " LEFT JOIN blocks b ON b.id = t.block_id WHERE m.id IN ({})"
)


async def message_rows(db: Reader, message_ids: list[int]) -> dict[int, Any]:
    """Messages by id with their turn, session and block: what a hit shows."""
    if not message_ids:
        return {}
    rows = await db.fetchall(_ROW_SQL.format(",".join("?" * len(message_ids))), message_ids)
    return {int(r["id"]): r for r in rows}


async def by_time(db: Reader, namespace_id: int, filters: RawFilters, oldest_first: bool, limit: int) -> list[Ranked]:
    """The namespace's messages that pass the filters, newest first (oldest first when asked), unscored."""
    where, params = filters.sql()
    order = "ASC" if oldest_first else "DESC"
    rows = await db.fetchall(
        f"SELECT m.id FROM messages m WHERE m.namespace_id = ?{where} ORDER BY m.created_at {order}, m.id {order}"
        " LIMIT ?",
        (namespace_id, *params, limit),
    )
    return [Ranked(int(r[0]), 0.0) for r in rows]


def iso(value: datetime | None) -> str | None:
    return to_iso(value) if value is not None else None
