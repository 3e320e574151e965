"""Event storage. Mutations are pure functions over a connection inside the caller's transaction and append
their own audit rows; reads take any connection (the reader, or the writer inside a transaction).

Lifecycle rules:

- Content and provenance are written once (a trigger refuses later edits). Supersession changes only status,
  ``prior_status``, ``successor_id`` and ``weight_cap``.
- Forgetting sets ``forgotten`` (keeping the prior status) and writes a tombstone of the event's fingerprint;
  a later restatement with that fingerprint is refused until the event is restored (events/admit.py, the one
  admission path, applies that and every other rule for new events; this module only stores).
- A forgotten event stays forgotten when something supersedes it: it is left untouched.
- Restoring brings back the prior status (``superseded`` stays superseded) and removes the tombstone.
"""

from __future__ import annotations

import hashlib
import json
import re
import unicodedata
from collections.abc import Awaitable, Callable
from functools import lru_cache
from typing import Any

from pydantic import BaseModel, ConfigDict

from stratagate import ids
from stratagate.events import common_terms, lexicon
from stratagate.events.models import SUPERSEDED_WEIGHT_CAP, EventRow, NewEvent, Status
from stratagate.events.visibility import scope_condition
from stratagate.events.visibility import where as visible_where
from stratagate.storage.db import ITEMS_ADDED, Actor, audit, audit_rows, on_commit
from stratagate.storage.sqlite import Connection
from stratagate.storage.term_feed import EVENTS as EVENT_INDEX
from stratagate.text.terms import fts_document, fts_query, quote, terms
from stratagate.timeutil import now_iso, parse_time, to_iso

MAX_CHAIN = 32

StatusHook = Callable[[Connection, EventRow, Actor], Awaitable[None]]
_status_hooks: list[StatusHook] = []


def on_status_change(hook: StatusHook) -> None:
    """Run ``hook(conn, event_after, actor)`` inside the transaction whenever an event's status changes.

    ``stratagate.wiring.register_hooks`` registers the graph's (the App and every entry point without one call it):
    the graph is a projection of events, so its facts follow their events' status in the same transaction, and
    events need not import the graph.
    """
    if hook not in _status_hooks:
        _status_hooks.append(hook)


_COLUMNS = "e.*, s.key AS session_key, o.name AS namespace_name, o.user_tier AS owner_user_tier"
_FROM = "events e LEFT JOIN sessions s ON s.id = e.session_id JOIN namespaces o ON o.id = e.namespace_id"
_SELECT = f"SELECT {_COLUMNS} FROM {_FROM}"


def normalise(text: str) -> str:
    """Unicode-normalised, case-folded text with whitespace runs collapsed: what counts as 'the same'."""
    return " ".join(unicodedata.normalize("NFKC", text).casefold().split())


def fingerprint(text: str) -> str:
    """A stable key of the normalised text (a hash, so tombstones hold no forgotten content)."""
    return "sha256:" + hashlib.sha256(normalise(text).encode("utf-8")).hexdigest()


def temporal_columns(temporal: dict[str, Any]) -> dict[str, Any]:
    """A serialised events.temporal.Temporal as the event columns that store it. Instants are stored in the one
    text form of every timestamp (UTC, milliseconds, 'Z'), so they compare as strings with everything else."""

    def stored(value: str | None) -> str | None:
        return None if value is None else to_iso(parse_time(value))

    return {
        "mentioned_at": stored(temporal["mentioned_at"]),
        "happened_start": stored(temporal["happened_start"]),
        "happened_end": stored(temporal["happened_end"]),
        "time_original": temporal["original"],
        "time_precision": temporal["precision"],
        "time_basis": temporal["basis"],
        "time_status": temporal["status"],
    }


def _json(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False)


def _fts_text(ev: NewEvent) -> str:
    # What the things named are ("npm" → "package manager"): a search by kind finds every member.
    named = "\n".join([ev.title, ev.narrative, *ev.tags])
    categories = lexicon.kinds_named(named, ev.claims)
    # Field weights by repetition (one FTS column): a word in the title counts 3×, in the summary 2×, BM25's
    # term-frequency saturation keeps it from swamping the rest. Occurrence and mention dates become date tokens.
    dates = [d[:10] for d in (ev.happened_start, ev.mentioned_at) if d]
    parts = [
        *categories,
        ev.title,
        ev.title,
        ev.title,
        ev.summary,
        ev.summary,
        *dates,
        ev.narrative,
        *ev.tags,
        *ev.quotes,
        *ev.participants,
        ev.type,
        ev.time_original or "",
    ]
    return fts_document("\n".join(parts))


async def get_event(conn: Connection, event_id: int) -> EventRow | None:
    row = await (await conn.execute(f"{_SELECT} WHERE e.id = ?", (event_id,))).fetchone()
    return None if row is None else EventRow.from_row(row)


async def get_events(conn: Connection, event_ids: list[int]) -> list[EventRow]:
    """The events of ``event_ids`` that exist, in id order."""
    out: list[EventRow] = []
    for i in range(0, len(event_ids), 500):
        chunk = event_ids[i : i + 500]
        out += [EventRow.from_row(r) for r in await conn.execute_fetchall(
            f"{_SELECT} WHERE e.id IN ({', '.join('?' * len(chunk))})", chunk)]
    return sorted(out, key=lambda e: e.id)


class Source(BaseModel):
    """One evidence row of an event: a captured message, a memory_remember call, or an import item. ``quote`` is
    the wording it came with (already redacted by the caller: events/admit.py)."""

    model_config = ConfigDict(extra="forbid")

    message_id: int | None = None
    call_id: str | None = None
    import_id: int | None = None
    source_ref: str | None = None
    quote: str = ""

    def ref(self) -> dict[str, Any]:
        """What an audit row may name: where the evidence is, never its words."""
        out: dict[str, Any] = {}
        if self.message_id is not None:
            out["message_id"] = ids.make("msg", self.message_id)
        if self.call_id is not None:
            out["call_id"] = self.call_id
        if self.import_id is not None:
            out["import_id"] = ids.make("imp", self.import_id)
        if self.source_ref is not None:
            out["source_ref"] = self.source_ref
        return out


async def insert_event(conn: Connection, ev: NewEvent, actor: Actor) -> EventRow:
    """The event row, its search terms and its ``event.<origin>`` audit row. Only events/admit.py calls this
    (tests/test_admit.py checks it): admission rules live there, not here."""
    now = now_iso()
    data = ev.model_dump()
    for key in ("tags", "quotes", "participants", "claims"):
        data[key] = _json(data[key])
    cols = [*data.keys(), "status", "pinned", "created_at", "updated_at"]
    values = [*data.values(), "active", 0, now, now]
    cursor = await conn.execute(
        f"INSERT INTO events({', '.join(cols)}) VALUES ({', '.join('?' for _ in cols)})", values
    )
    event_id = int(cursor.lastrowid or 0)
    on_commit(conn, ITEMS_ADDED, ev.namespace_id)  # the event gets its vector after the commit (search/vectors.py)
    await conn.execute("INSERT INTO event_fts(rowid, terms) VALUES (?, ?)", (event_id, _fts_text(ev)))
    row = await get_event(conn, event_id)
    assert row is not None
    await audit(conn, ev.namespace_id, actor, f"event.{ev.origin}", "event", row.public_id, None, row.public())
    return row


async def insert_sources(conn: Connection, event_id: int, rows: list[Source]) -> list[Source]:
    """Append evidence rows to an event, skipping ones it already has (same place, same quote); the added rows."""
    have = {
        tuple(r)
        for r in await conn.execute_fetchall(
            "SELECT message_id, call_id, import_id, source_ref, quote FROM event_sources WHERE event_id = ?",
            (event_id,),
        )
    }
    now = now_iso()
    added = []
    for src in rows:
        key = (src.message_id, src.call_id, src.import_id, src.source_ref, src.quote)
        if key in have:
            continue
        have.add(key)
        await conn.execute(
            "INSERT INTO event_sources(event_id, message_id, call_id, quote, import_id, source_ref, created_at)"
            " VALUES (?, ?, ?, ?, ?, ?, ?)",
            (event_id, src.message_id, src.call_id, src.quote, src.import_id, src.source_ref, now),
        )
        added.append(src)
    return added


async def insert_events(conn: Connection, evs: list[NewEvent], actor: Actor) -> list[EventRow]:
    """:func:`insert_event` for a batch, in a fixed number of statements: the same rows, search terms and
    ``event.<origin>`` audit rows, in order. Only events/admit.py calls this (its bulk path, ``admit_new``).

    The audit payloads are not passed through the redactor again: admission redacted every text of ``evs``, and
    redaction is idempotent, so it would return them unchanged (tests/test_bulk_admit.py compares the rows)."""
    if not evs:
        return []
    now = now_iso()
    ((before,),) = await conn.execute_fetchall("SELECT coalesce(max(id), 0) FROM events")
    data = [ev.model_dump() for ev in evs]
    cols = [*data[0].keys(), "status", "pinned", "created_at", "updated_at"]
    await conn.executemany(
        f"INSERT INTO events({', '.join(cols)}) VALUES ({', '.join('?' for _ in cols)})",
        [[*(_json(v) if k in ("tags", "quotes", "participants", "claims") else v for k, v in d.items()),
          "active", 0, now, now] for d in data],
    )
    # Each new rowid is above every existing one, in insertion order: the batch is exactly the ids above ``before``.
    rows = [EventRow.from_row(r) for r in await conn.execute_fetchall(f"{_SELECT} WHERE e.id > ? ORDER BY e.id",
                                                                      (before,))]
    assert len(rows) == len(evs)
    for namespace_id in {ev.namespace_id for ev in evs}:
        on_commit(conn, ITEMS_ADDED, namespace_id)
    await conn.executemany("INSERT INTO event_fts(rowid, terms) VALUES (?, ?)",
                           [(row.id, _fts_text(ev)) for row, ev in zip(rows, evs, strict=True)])
    await audit_rows(conn, [(ev.namespace_id, actor, f"event.{ev.origin}", "event", row.public_id, None, row.public())
                            for row, ev in zip(rows, evs, strict=True)], redacted=True)
    return rows


async def insert_new_sources(conn: Connection, rows: list[tuple[int, Source]]) -> None:
    """:func:`insert_sources` for events just inserted (they have no evidence yet): ``(event_id, source)`` pairs in
    one statement, an event's repeated (place, quote) kept once."""
    now = now_iso()
    seen: set[tuple[Any, ...]] = set()
    values = []
    for event_id, src in rows:
        key = (event_id, src.message_id, src.call_id, src.import_id, src.source_ref, src.quote)
        if key not in seen:
            seen.add(key)
            values.append((event_id, src.message_id, src.call_id, src.quote, src.import_id, src.source_ref, now))
    await conn.executemany(
        "INSERT INTO event_sources(event_id, message_id, call_id, quote, import_id, source_ref, created_at)"
        " VALUES (?, ?, ?, ?, ?, ?, ?)",
        values,
    )


async def stored_fingerprints(conn: Connection, namespace_id: int, fps: list[str]) -> set[str]:
    """Which of ``fps`` an event of ``namespace_id`` already has, whatever its status."""
    found: set[str] = set()
    for i in range(0, len(fps), 500):
        chunk = fps[i : i + 500]
        found |= {r[0] for r in await conn.execute_fetchall(
            f"SELECT fingerprint FROM events WHERE namespace_id = ? AND fingerprint IN ({', '.join('?' * len(chunk))})",
            (namespace_id, *chunk),
        )}
    return found


async def copy_sources(conn: Connection, from_event: int, to_event: int) -> list[int]:
    """Copy the evidence rows of ``from_event`` that ``to_event`` lacks (same place, same quote), keeping their
    ``created_at``; the new row ids. Maintenance merges a duplicate this way (stratagate/maintenance/consolidate.py),
    and its unmerge deletes exactly these ids."""
    have = {
        tuple(r)
        for r in await conn.execute_fetchall(
            "SELECT message_id, call_id, import_id, source_ref, quote FROM event_sources WHERE event_id = ?",
            (to_event,),
        )
    }
    added = []
    for r in await conn.execute_fetchall(
        "SELECT message_id, call_id, import_id, source_ref, quote, created_at FROM event_sources"
        " WHERE event_id = ? ORDER BY id",
        (from_event,),
    ):
        key = (r["message_id"], r["call_id"], r["import_id"], r["source_ref"], r["quote"])
        if key in have:
            continue
        have.add(key)
        cursor = await conn.execute(
            "INSERT INTO event_sources(event_id, message_id, call_id, quote, import_id, source_ref, created_at)"
            " VALUES (?, ?, ?, ?, ?, ?, ?)",
            (to_event, r["message_id"], r["call_id"], r["quote"], r["import_id"], r["source_ref"], r["created_at"]),
        )
        added.append(int(cursor.lastrowid or 0))
    return added


async def erased(conn: Connection, namespace_id: int, event_id: int) -> bool:
    """Was this event erased for good (stratagate/erase/ writes an ``erasures`` row, in the event's own namespace:
    a user-tier event of another namespace is looked up there)?"""
    row = await (
        await conn.execute(
            "SELECT 1 FROM erasures WHERE namespace_id IN (?, (SELECT namespace_id FROM events WHERE id = ?))"
            " AND subject_id = ? LIMIT 1",
            (namespace_id, event_id, ids.make("evt", event_id)),
        )
    ).fetchone()
    return row is not None


async def tombstone_for(
    conn: Connection, namespace_id: int, fp: str, session_id: int | None = None
) -> int | None:
    """The forgotten event this fingerprint restates: a tombstone of the namespace, or of a user-tier event of
    another namespace this viewer sees (the user forgot their preference everywhere)."""
    row = await (
        await conn.execute(
            "SELECT event_id FROM tombstones WHERE namespace_id = ? AND fingerprint = ?", (namespace_id, fp)
        )
    ).fetchone()
    if row is not None:
        return int(row[0])
    visible, params = visible_where(namespace_id, session_id)
    row = await (
        await conn.execute(
            "SELECT t.event_id FROM tombstones t JOIN events e ON e.id = t.event_id"
            f" WHERE t.fingerprint = ? AND t.namespace_id <> ? AND e.scope = 'user' AND {visible}"
            " ORDER BY t.event_id LIMIT 1",
            (fp, namespace_id, *params),
        )
    ).fetchone()
    return None if row is None else int(row[0])


async def current_duplicate(
    conn: Connection, namespace_id: int, session_id: int | None, fp: str
) -> EventRow | None:
    """A current (active or disputed) visible event with the same text: a restatement is not a new event. The
    namespace's own events first, then user-tier events of other namespaces (a preference restated in another
    project is the same memory)."""
    visible, params = visible_where(namespace_id, session_id)
    row = await (
        await conn.execute(
            f"{_SELECT} WHERE e.fingerprint = ? AND e.status IN ('active', 'disputed') AND {visible}"
            " ORDER BY e.namespace_id <> ?, e.id LIMIT 1",
            (fp, *params, namespace_id),
        )
    ).fetchone()
    return None if row is None else EventRow.from_row(row)


NEAR_DUPLICATE = 0.8
_NEGATION = re.compile(r"\b(?:not|no|never|none|nothing|cannot|can't|don't|doesn't|didn't|isn't|aren't|wasn't|"
                       r"won't|shouldn't|without|stop|stopped)\b|[不没別别未无]", re.I)


def _shape(text: str) -> tuple[frozenset[str], frozenset[str], bool]:
    """What two texts must share to be the same memory: their words, their numbers exactly, and their polarity."""
    words = frozenset(terms(text))
    numbers = frozenset(w for w in words if any(ch.isdigit() for ch in w))
    return words, numbers, _NEGATION.search(text) is not None


def near_same(a: str, b: str) -> bool:
    """Near-duplicates: ≥ 80 % word overlap (Jaccard), the same numbers and dates, and the same negation.
    'The project uses npm' ≈ 'the project uses npm!', but never 'does not use npm' or another date."""
    wa, na, nega = _shape(a)
    wb, nb, negb = _shape(b)
    if len(wa) < 3 or len(wb) < 3 or na != nb or nega != negb:
        return False
    return len(wa & wb) / len(wa | wb) >= NEAR_DUPLICATE


async def near_duplicate(
    conn: Connection,
    namespace_id: int,
    session_id: int | None,
    text: str,
    statuses: tuple[str, ...] = ("active", "disputed"),
    exclude: frozenset[int] = frozenset(),
) -> EventRow | None:
    """A visible event in ``statuses`` (current ones by default) that says nearly the same thing, other than
    ``exclude`` (exact restatements are found by fingerprint)."""
    words, numbers, _ = _shape(text)
    # A near duplicate holds every number of the text (near_same): an AND of them finds the few candidates through
    # the rarest one's posting list, where an OR of all the words ranked most of memory.
    match = " AND ".join(quote(n) for n in sorted(numbers)) if numbers and len(words) >= 3 else fts_query(text)
    if not match or not await _any_visible(conn, namespace_id, session_id, statuses):
        return None  # (an indexed look first: most memories hold no forgotten event to search for)
    for ev, _ in await search(conn, namespace_id, session_id, match, list(statuses), None, 8):
        if ev.id not in exclude and (near_same(text, ev.narrative) or near_same(text, ev.summary)):
            return ev
    return None


async def _any_visible(
    conn: Connection, namespace_id: int, session_id: int | None, statuses: tuple[str, ...]
) -> bool:
    visible, params = visible_where(namespace_id, session_id)
    row = await (
        await conn.execute(
            f"SELECT 1 FROM events e WHERE e.status IN ({', '.join('?' for _ in statuses)}) AND {visible} LIMIT 1",
            (*statuses, *params),
        )
    ).fetchone()
    return row is not None


async def _set(
    conn: Connection, ev: EventRow, actor: Actor, action: str, extra: Any = None, **changes: Any
) -> EventRow:
    sets = ", ".join(f"{k} = ?" for k in changes)
    await conn.execute(f"UPDATE events SET {sets}, updated_at = ? WHERE id = ?", (*changes.values(), now_iso(), ev.id))
    after = await get_event(conn, ev.id)
    assert after is not None
    after_state = after.lifecycle() | ({"note": extra} if extra else {})
    await audit(conn, ev.namespace_id, actor, action, "event", ev.public_id, ev.lifecycle(), after_state)
    if after.status != ev.status:
        # The graph is a projection of events: its facts follow their events' status in the same transaction.
        if not _status_hooks:  # loud, not a silently stale graph: every entry point registers the hooks
            raise RuntimeError(
                "event status changed with no status hook registered: call stratagate.wiring.register_hooks() first"
            )
        for hook in _status_hooks:
            await hook(conn, after, actor)
    return after


async def supersede(
    conn: Connection, target: EventRow, successor: EventRow, actor: Actor, note: Any = None
) -> dict[str, Any]:
    """Mark ``target`` superseded by ``successor``; a forgotten or already superseded target is left as it is.
    ``note`` (content-free) goes into the audit row's ``after``."""
    if target.status == "forgotten":
        return {
            "id": target.public_id,
            "status": "forgotten",
            "superseded": False,
            "note": f"{target.public_id} is forgotten and stays forgotten; superseding never resurrects it",
        }
    if target.status == "superseded":
        by = ids.make("evt", target.successor_id or 0)
        return {
            "id": target.public_id,
            "status": "superseded",
            "superseded": False,
            "note": f"{target.public_id} was already superseded by {by}; left unchanged",
        }
    after = await _set(
        conn,
        target,
        actor,
        "event.superseded",
        note,
        status="superseded",
        prior_status=target.status,
        successor_id=successor.id,
        weight_cap=SUPERSEDED_WEIGHT_CAP,
    )
    return {
        "id": after.public_id,
        "status": after.status,
        "superseded": True,
        "prior_status": after.prior_status,
        "successor_id": successor.public_id,
    }


async def forget(conn: Connection, ev: EventRow, actor: Actor, reason: str | None) -> EventRow:
    after = await _set(
        conn,
        ev,
        actor,
        "event.forgotten",
        {"reason": reason} if reason else None,
        status="forgotten",
        prior_status=ev.status,
    )
    await conn.execute(
        "INSERT INTO tombstones(namespace_id, fingerprint, event_id, created_at) VALUES (?, ?, ?, ?)"
        " ON CONFLICT(namespace_id, fingerprint) DO UPDATE SET event_id = excluded.event_id,"
        " created_at = excluded.created_at",
        (ev.namespace_id, ev.fingerprint, ev.id, now_iso()),
    )
    return after


async def restore(conn: Connection, ev: EventRow, actor: Actor) -> EventRow:
    back: Status = ev.prior_status if ev.prior_status and ev.prior_status != "forgotten" else "active"
    changes: dict[str, Any] = {}
    if back == "superseded":
        successor = await get_event(conn, ev.successor_id) if ev.successor_id else None
        if successor is None or successor.status == "archived":
            # What replaced it went away meanwhile (e.g. its import was removed): it is current again.
            back = "active"
            changes = {"successor_id": None, "weight_cap": None}
    after = await _set(conn, ev, actor, "event.restored", None, status=back, prior_status=None, **changes)
    await conn.execute(
        "DELETE FROM tombstones WHERE namespace_id = ? AND fingerprint = ? AND event_id = ?",
        (ev.namespace_id, ev.fingerprint, ev.id),
    )
    return after


async def archive(conn: Connection, ev: EventRow, actor: Actor, note: Any = None) -> EventRow:
    """Take an event out of memory without a tombstone (e.g. its import was removed); the row and sources stay."""
    return await _set(conn, ev, actor, "event.archived", note, status="archived", prior_status=ev.status)


async def unsupersede(conn: Connection, ev: EventRow, actor: Actor, note: Any = None) -> EventRow:
    """Undo a supersession whose successor went away: back to the status it had before, weight cap lifted."""
    back: Status = ev.prior_status if ev.prior_status in ("active", "disputed") else "active"
    return await _set(
        conn, ev, actor, "event.unsuperseded", note, status=back, prior_status=None, successor_id=None, weight_cap=None
    )


async def settle(conn: Connection, ev: EventRow, actor: Actor, note: Any = None) -> EventRow:
    """A disputed event made current again by the user's decision (the Memory page's resolve): ``active``."""
    return await _set(conn, ev, actor, "event.settled", note, status="active", prior_status=None)


async def mirror_status(
    conn: Connection, ev: EventRow, actor: Actor, status: Status, successor_id: int | None, note: Any = None
) -> EventRow:
    """Bring ``ev`` to a status another machine gave it (team memory: stratagate/team/apply.py), with the same
    side effects as the change made here: a forget writes the tombstone, leaving ``forgotten`` removes it, a
    supersession caps the weight; audited with ``note``, the status hooks run (the graph follows)."""
    def reached(e: EventRow) -> bool:
        return e.status == status and (status != "superseded" or e.successor_id == successor_id)

    if reached(ev):
        return ev
    if status == "forgotten":
        return await forget(conn, ev, actor, None)
    if ev.status == "forgotten":
        ev = await restore(conn, ev, actor)
        if reached(ev):
            return ev
    if status == "superseded":
        return await _set(conn, ev, actor, "event.superseded", note, status="superseded", prior_status=ev.status,
                          successor_id=successor_id, weight_cap=SUPERSEDED_WEIGHT_CAP)
    if status == "active":
        return await _set(conn, ev, actor, "event.settled", note, status="active", prior_status=None,
                          successor_id=None, weight_cap=None)
    return await _set(conn, ev, actor, f"event.{status}", note, status=status, prior_status=ev.status)


async def set_pinned(conn: Connection, ev: EventRow, actor: Actor, pinned: bool) -> EventRow:
    return await _set(conn, ev, actor, "event.pinned" if pinned else "event.unpinned", None, pinned=int(pinned))


class EventFilter(BaseModel):
    """Narrowing that applies with or without a query (an empty query with a filter lists only its matches)."""

    statuses: list[str]
    type: str | None = None
    scope: str | None = None
    participants: list[str] = []
    after: str | None = None  # on the occurrence start when known, else the mention time
    before: str | None = None
    temporal_intent: str | None = None  # 'first' / 'latest': order by that time instead of relevance


_WHEN = "COALESCE(e.happened_start, e.mentioned_at)"


_TERM = re.compile(r'"((?:[^"]|"")*)"')


def _or_terms(match: str) -> list[str] | None:
    """The terms of a ``text.terms.fts_query`` expression ('"a" OR "b"'), or None for any other expression."""
    found = _parsed_or(match)
    return None if found is None else list(found)


@lru_cache(maxsize=64)
def _parsed_or(match: str) -> tuple[str, ...] | None:
    """(Cached: a search parses its match twice, and a step's queries repeat step after step.)"""
    found = tuple(m.group(1).replace('""', '"') for m in _TERM.finditer(match))
    if not found or match != " OR ".join(quote(t) for t in found):
        return None
    return found


async def split_common(conn: Connection, match: str) -> tuple[str | None, str | None]:
    """(MATCH of the terms worth scoring or None, MATCH of the terms most events hold or None): see
    events/common_terms.py. Any other expression than an OR of terms is scored whole."""
    terms = _or_terms(match)
    if terms is None:
        return match, None
    rare, common = await common_terms.split(conn, terms)
    if not common:
        return match, None
    return (" OR ".join(quote(t) for t in rare) or None), " OR ".join(quote(t) for t in common)


PREFILTER = 4
"""The best ``PREFILTER`` × wanted matches are ranked by the index alone before the filters are read."""
INDEX_PREFILTER = 2
"""The same for the derived index, whose widening costs one more top-k search rather than ranking every match."""


async def _best_matches(
    conn: Connection, match: str, where: list[str], params: list[Any], wanted: int
) -> list[tuple[int, float, str, float | None]]:
    """The ``wanted`` best (id, BM25, status, weight cap) matches passing ``where``, best first (ties: newest first).

    Ranked by the index alone first (half the cost of joining every match to its event row), then filtered; only
    when too few of those pass are more (or all) matches ranked (the same answer either way: a match outside the
    index's best ones ranks below every one of them)."""
    pool = wanted * INDEX_PREFILTER
    terms = _or_terms(match)
    # The derived index's top k (storage/term_feed.py), widened until enough pass the filter or every match is
    # in: its ranking throughout. Without it (None), FTS5's: the best ``pool``, then every match with the filter.
    top = await EVENT_INDEX.ranked(conn, terms, pool) if terms else None
    while top is not None:
        kept = await _passing(conn, top, where, params, wanted)
        if len(kept) >= wanted or len(top) < pool:
            return kept
        pool *= 16
        top = await EVENT_INDEX.ranked(conn, terms or [], pool)
    pool = wanted * PREFILTER
    top = [
        (int(r[0]), float(r[1]))
        for r in await conn.execute_fetchall(
            "SELECT rowid, bm25(event_fts) AS rank FROM event_fts WHERE event_fts MATCH ?"
            " ORDER BY rank, rowid DESC LIMIT ?",
            (match, pool),
        )
    ]
    kept = await _passing(conn, top, where, params, wanted)
    if len(kept) >= wanted or len(top) < pool:
        return kept
    rows = await conn.execute_fetchall(
        "SELECT e.id, bm25(event_fts) AS rank, e.status, e.weight_cap FROM event_fts"
        f" JOIN events e ON e.id = event_fts.rowid WHERE event_fts MATCH ? AND {' AND '.join(where)}"
        " ORDER BY rank, e.id DESC LIMIT ?",
        (match, *params, wanted),
    )
    return [(int(r[0]), float(r[1]), str(r[2]), r[3]) for r in rows]


async def _passing(
    conn: Connection, top: list[tuple[int, float]], where: list[str], params: list[Any], wanted: int
) -> list[tuple[int, float, str, float | None]]:
    """The first ``wanted`` ranked (id, BM25) rows whose events pass ``where``, in rank order, with their status and
    weight cap. Read as many at a time as are still wanted (most pass), and at most 5000 (SQLite's limit on
    parameters: a widened pool can hold more ids)."""
    kept: list[tuple[int, float, str, float | None]] = []
    start = 0
    while start < len(top) and len(kept) < wanted:
        chunk = top[start : start + min(5000, wanted - len(kept))]
        start += len(chunk)
        passing: dict[int, tuple[str, float | None]] = {}
        for r in await conn.execute_fetchall(
            # NOT INDEXED: one rowid seek per id (the planner otherwise seeks the status and scope indexes for
            # every id and status, the visibility rule being an OR).
            "SELECT e.id, e.status, e.weight_cap FROM events e NOT INDEXED"
            f" WHERE e.id IN ({', '.join('?' for _ in chunk)}) AND {' AND '.join(where)}",
            (*(item_id for item_id, _ in chunk), *params),
        ):
            passing[int(r[0])] = (str(r[1]), r[2])
        kept.extend((item_id, rank, *passing[item_id]) for item_id, rank in chunk if item_id in passing)
    return kept


async def search(
    conn: Connection,
    namespace_id: int | None,
    session_id: int | None,
    match: str | None,
    statuses: list[str] | EventFilter,
    event_type: str | None = None,
    limit: int = 6,
) -> list[tuple[EventRow, float | None]]:
    """Visible events passing the filter: BM25 order (scaled by weight cap) for a match, else newest first;
    ``temporal_intent`` orders the same set by occurrence time instead.

    Terms most events hold are not scored (``split_common``); when only they match, the newest events holding them
    are taken (their BM25 is ~0 for every event: it would only order them by length)."""
    f = statuses if isinstance(statuses, EventFilter) else EventFilter(statuses=statuses, type=event_type)
    visible, visible_params = visible_where(namespace_id, session_id)
    where = [visible, f"e.status IN ({', '.join('?' for _ in f.statuses)})"]
    params: list[Any] = [*visible_params, *f.statuses]
    if f.type is not None:
        where.append("e.type = ?")
        params.append(f.type)
    if f.scope is not None:
        condition, values = scope_condition(f.scope)
        where.append(condition)
        params.extend(values)
    for person in f.participants:
        where.append("EXISTS (SELECT 1 FROM json_each(e.participants) p WHERE lower(p.value) = lower(?))")
        params.append(person)
    if f.after is not None:
        where.append(f"{_WHEN} >= ?")
        params.append(f.after)
    if f.before is not None:
        where.append(f"{_WHEN} < ?")
        params.append(f.before)
    order_time = {"first": f"{_WHEN} ASC, e.id ASC", "latest": f"{_WHEN} DESC, e.id DESC"}.get(
        f.temporal_intent or ""
    )
    if match is None:
        order = order_time or "e.pinned DESC, e.id DESC"
        rows = await conn.execute_fetchall(
            f"{_SELECT} WHERE {' AND '.join(where)} ORDER BY {order} LIMIT ?", (*params, limit)
        )
        return [(EventRow.from_row(r), None) for r in rows]
    rare, common = await split_common(conn, match)
    hits: list[tuple[int, float, str, float | None]] = []
    if rare is not None:
        hits = await _best_matches(conn, rare, where, params, limit * 5)
    if not hits and common is not None:
        rows = await conn.execute_fetchall(
            "SELECT e.id, bm25(event_fts), e.status, e.weight_cap FROM event_fts JOIN events e"
            f" ON e.id = event_fts.rowid WHERE event_fts MATCH ? AND {' AND '.join(where)}"
            " ORDER BY event_fts.rowid DESC LIMIT ?",
            (common, *params, limit * 5),
        )
        hits = [(int(r[0]), float(r[1]), str(r[2]), r[3]) for r in rows]
    # Ties (BM25 is ~0 when every event holds the words) go to current events, then the newest. Ordered on the
    # ranks, status and cap; whole rows are read for the ``limit`` kept only.
    best = sorted(
        ((-rank * (cap if cap is not None else 1.0), status, event_id) for event_id, rank, status, cap in hits),
        key=lambda t: (-t[0], t[1] == "superseded", -t[2]),
    )[:limit]
    rows = await conn.execute_fetchall(
        f"{_SELECT} WHERE e.id IN ({', '.join('?' for _ in best)})", [t[2] for t in best]
    ) if best else []
    by_id = {ev.id: ev for ev in (EventRow.from_row(r) for r in rows)}
    scored: list[tuple[EventRow, float | None]] = [(by_id[t[2]], t[0]) for t in best if t[2] in by_id]
    if f.temporal_intent in ("first", "latest"):
        # The relevant set, told in time order: "when did we first…" / "what is the latest…".
        scored.sort(key=lambda pair: (pair[0].happened_start or pair[0].mentioned_at, pair[0].id),
                    reverse=f.temporal_intent == "latest")
    return scored


async def successor_chain(conn: Connection, ev: EventRow) -> list[EventRow]:
    """The events that replaced ``ev``, in order, up to the current one (cycle-safe)."""
    chain: list[EventRow] = []
    seen = {ev.id}
    current = ev
    while current.successor_id is not None and current.successor_id not in seen and len(chain) < MAX_CHAIN:
        nxt = await get_event(conn, current.successor_id)
        if nxt is None:
            break
        chain.append(nxt)
        seen.add(nxt.id)
        current = nxt
    return chain


async def predecessors(conn: Connection, ev: EventRow) -> list[EventRow]:
    rows = await conn.execute_fetchall(f"{_SELECT} WHERE e.successor_id = ? ORDER BY e.id", (ev.id,))
    return [EventRow.from_row(r) for r in rows]


async def predecessors_of(conn: Connection, event_ids: list[int]) -> dict[int, list[EventRow]]:
    """``predecessors`` of many events in one statement: successor id → the events it replaced, oldest first."""
    out: dict[int, list[EventRow]] = {event_id: [] for event_id in event_ids}
    if not event_ids:
        return out
    rows = await conn.execute_fetchall(
        f"{_SELECT} WHERE e.successor_id IN ({', '.join('?' for _ in event_ids)}) ORDER BY e.id", event_ids
    )
    for ev in (EventRow.from_row(r) for r in rows):
        if ev.successor_id in out:
            out[ev.successor_id].append(ev)
    return out


async def sources(conn: Connection, event_id: int) -> list[dict[str, Any]]:
    rows = await conn.execute_fetchall(
        "SELECT message_id, call_id, quote, import_id, source_ref, created_at FROM event_sources"
        " WHERE event_id = ? ORDER BY id",
        (event_id,),
    )
    return [
        {
            "message_id": ids.make("msg", r["message_id"]) if r["message_id"] else None,
            "call_id": r["call_id"],
            "import_id": ids.make("imp", r["import_id"]) if r["import_id"] else None,
            "source_ref": r["source_ref"],
            "quote": r["quote"],
            "created_at": r["created_at"],
        }
        for r in rows
    ]


async def dispute(conn: Connection, ev: EventRow, other: EventRow, actor: Actor) -> dict[str, Any]:
    """Mark ``ev`` disputed because ``other`` contradicts it; only an active event changes (audited)."""
    if ev.status != "active":
        return {"id": ev.public_id, "status": ev.status, "disputed": ev.status == "disputed"}
    note = {"conflicts_with": other.public_id}
    after = await _set(conn, ev, actor, "event.disputed", note, status="disputed", prior_status=ev.status)
    return {"id": after.public_id, "status": after.status, "disputed": True, "conflicts_with": other.public_id}
