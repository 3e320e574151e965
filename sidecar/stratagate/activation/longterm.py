"""The long-term part of activation: at most 4 events and 4 graph nodes relevant to this step, within 900 tokens.

Rules (each one tested):
- Relevance: the current human message ranks first, then the last two captured turns of the session (their words
  only: no role labels, no tool JSON). A query that matches nothing recalls nothing (no recency fallback), and a
  match below the relevance floor (activation/relevance.py: one ordinary shared word, a secret placeholder) is no
  match: an unrelated prompt gets no long-term event or node.
- Admission (`admission_order`): active safety-critical events always; pinned events not relevant to the step take
  at most half of the 4 slots (safety and identity first); relevant events fill the rest. All within 900 tokens.
- Nothing stale poses as current: a superseded event only appears when pinned, labelled with its status and
  successor, and the successor comes with it; forgotten and archived events never appear; disputed ones are
  labelled. Supersession overrides pins. A current event that replaced another names it in its heading
  (``current · replaces evt_3 · "We use npm"``), so the superseded/current pair is visible without the old one's
  slot; the label is dropped only when the entry would not fit the budget otherwise. A query that matches a
  superseded event ranks its current successor in its place ("do we still use npm?" recalls the pnpm event).
- Events created during the session's open (unsealed) turns are skipped: the host still shows those turns.
- Reading never writes: activation does not reinforce anything (only use receipts do).
- Output depends only on stored state and the query, so identical inputs give byte-identical text.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from stratagate.activation import nodes as graph_recall
from stratagate.activation import relevance, search_memo
from stratagate.activation.nodes import NODES_TITLE
from stratagate.capture import queries as capture_queries
from stratagate.events import queries as event_queries
from stratagate.events import store as events
from stratagate.events import visibility
from stratagate.events.models import EventRow
from stratagate.events.visibility import Viewer
from stratagate.evidence.weights import event_weights
from stratagate.safety.inert import Named, heading
from stratagate.search.fusion import rrf
from stratagate.storage.sqlite import Connection

MAX_EVENTS = 4
MAX_TOKENS = 900
CONTEXT_TURNS = 2
CANDIDATES = 12
SUMMARY_CHARS = 320
REPLACED_TITLE_CHARS = 60
CURRENT = ["active", "disputed"]
_CRITICAL_FIRST = {"safety": 0, "identity": 1, "preference": 2, "routine": 3}


@dataclass
class LongTerm:
    sections: list[str] = field(default_factory=list)
    tokens: int = 0
    event_ids: list[str] = field(default_factory=list)
    node_ids: list[str] = field(default_factory=list)


async def context_text(conn: Connection, session_id: int | None, turns: int = CONTEXT_TURNS) -> str:
    """The words of the session's last ``turns`` captured turns: user and assistant text only."""
    if session_id is None:
        return ""
    return "\n".join(await capture_queries.recent_words(conn, session_id, turns))


async def _sealed_until(conn: Connection, session_id: int | None) -> str:
    """When the session's last sealed turn was captured ('' when none): everything after it is still in the host's
    native history, including events remembered during the current, not yet captured, turn."""
    if session_id is None:
        return ""
    return await capture_queries.last_sealed_capture(conn, session_id) or ""


def _merge(*rankings: list[EventRow]) -> list[EventRow]:
    out: dict[int, EventRow] = {}
    for ranking in rankings:
        for ev in ranking:
            out.setdefault(ev.id, ev)
    return list(out.values())


def topic(queries: list[str]) -> frozenset[str]:
    """The terms relevance is judged against: the human message's, or the recent turns' when the message says
    nothing specific enough to be about anything ("ok, go ahead", "继续"). An unrelated message gets nothing, whatever
    the turns before it were about: those turns are still in the host's history."""
    human = relevance.text_terms(queries[0]) if queries else frozenset()
    if relevance.relevant(human, human) or len(queries) < 2:
        return human
    return relevance.text_terms(queries[1])


@dataclass(frozen=True)
class Step:
    """The step's queries (the human message, the recent turns' words), tokenised once for the whole render: their
    FTS matches (None: nothing searchable) and the ``topic`` relevance is judged against."""

    matches: list[str | None]
    about: frozenset[str]

    @classmethod
    def of(cls, queries: list[str]) -> Step:
        return cls([relevance.query_match(q, relevance.STEP_TERMS) for q in queries], topic(queries))


async def _ranked_events(
    memo: search_memo.Memo, ns: int | None, sess: int | None, step: Step, viewer: Viewer
) -> list[EventRow]:
    """Matches of the human message (weight 2) and of the recent turns (weight 1) that pass the relevance floor
    against the step's ``topic``, fused by reciprocal rank, then scaled by each event's long-term weight as seen from
    this session (read only: nothing is reinforced here)."""
    rankings: list[list[int]] = []
    fusion_weights: list[float] = []
    rows: dict[int, EventRow] = {}
    about = step.about
    conn = memo.conn
    # Superseded events are searched too and stand for their current successor at their rank: "do we still use
    # npm?" matches the npm event only, and what answers it is the pnpm event that replaced it.
    searched = [
        (await memo.event_search(ns, sess, match, [*CURRENT, "superseded"], CANDIDATES), importance)
        for match, importance in zip(step.matches, (2.0, 1.0), strict=False) if match is not None
    ]
    documents = await relevance.event_documents(conn, [ev for hits, _ in searched for ev, _ in hits])  # one read
    for hits, importance in searched:
        ranking: list[int] = []
        for ev, _ in hits:
            if not relevance.event_relevant(about, ev, documents.get(ev.id)):
                continue  # below the floor: a shared ordinary word or a secret placeholder is no relevance
            current = await _current_version(conn, ev, viewer) if ev.status == "superseded" else ev
            if current is not None and current.id not in ranking:
                ranking.append(current.id)
                rows[current.id] = current
        rankings.append(ranking)
        fusion_weights.append(importance)
    if not rankings:
        return []
    scored = []
    fused = rrf(rankings, weights=fusion_weights)
    weights = await event_weights(conn, ns, sess, [event_id for event_id, _ in fused])
    for event_id, score in fused:
        factor = 0.3 + 0.7 * weights.get(event_id, 1.0)
        scored.append((score * factor, event_id))
    scored.sort(key=lambda pair: (-pair[0], -pair[1]))
    return [rows[event_id] for _, event_id in scored]


async def _current_version(conn: Connection, ev: EventRow, viewer: Viewer) -> EventRow | None:
    """The current event at the end of ``ev``'s successor chain, when this session may see it."""
    chain = await events.successor_chain(conn, ev)
    last = chain[-1] if chain else None
    return last if last is not None and last.status in CURRENT and last.visible_to(viewer) else None


async def _pinned(conn: Connection, ns: int | None, sess: int | None) -> list[EventRow]:
    pinned = await event_queries.pinned_events(conn, ns, sess)
    return sorted(pinned, key=lambda ev: (_CRITICAL_FIRST[ev.criticality], ev.id))


async def _safety(conn: Connection, ns: int | None, sess: int | None) -> list[EventRow]:
    """Active safety-critical events, pinned first, then newest: admitted on every step, relevant or not."""
    return await event_queries.safety_events(conn, ns, sess, 4 * MAX_EVENTS)


def admission_order(
    safety: list[EventRow], relevant: list[EventRow], pinned: list[EventRow], slots: int = MAX_EVENTS
) -> list[EventRow]:
    """Which events compete for the slots, in order (the rule documented in docs/architecture.md, "Recall"):
    1. active safety-critical events, always (relevant ones first);
    2. pinned events that are not relevant to the step, at most half of the slots;
    3. relevant events, best first, fill the rest (a relevant pinned event is just relevant).
    A superseded pinned event brings its successor along, in the next slot."""
    relevant_ids = {ev.id for ev in relevant}
    safety_ids = {ev.id for ev in safety}
    first = sorted(safety, key=lambda ev: ev.id not in relevant_ids)  # stable: pinned/newest order kept
    unrelated_pins = [ev for ev in pinned if ev.id not in relevant_ids and ev.id not in safety_ids]
    pin_share = max(0, min(slots // 2, slots - len(first)))
    pins = unrelated_pins[:pin_share]
    rest = [ev for ev in relevant if ev.id not in safety_ids]
    return _merge(first, pins, rest)


def _day(stamp: str | None) -> str | None:
    return stamp[:10] if stamp else None


def _replaced_label(replaced: list[EventRow]) -> list[Any]:
    """Heading fields naming the newest event this one superseded: 'replaces evt_3', '"We use npm"' (quoted as a
    stored name, so its words never read as labels), and how many were replaced before it."""
    if not replaced:
        return []
    last = replaced[-1]
    title = last.title if len(last.title) <= REPLACED_TITLE_CHARS else last.title[: REPLACED_TITLE_CHARS - 1] + "…"
    more = f"+{len(replaced) - 1} earlier" if len(replaced) > 1 else None
    return [f"replaces {last.public_id}", Named(title), more]


def _event_heading(
    ev: EventRow, successor: EventRow | None, viewer: Viewer, replaced: list[EventRow] | None = None
) -> str:
    parts: list[Any] = [ev.public_id, ev.type]
    if ev.team_member is not None:  # shared through the team database: who said it (and below, when)
        parts.extend(["team", Named(ev.team_member)])
    if ev.scope == "user":
        # The user tier: said in any project of this DSH home, recalled in every one that shares it.
        if viewer.foreign(ev.namespace_id):
            parts.extend(["user tier, said in another namespace", Named(ev.namespace_name or "?")])
        else:
            parts.append("user tier")
    if ev.status == "superseded":
        by = successor.public_id if successor else "a newer event"
        parts.append(f"SUPERSEDED by {by}: history, not current")
    elif ev.status == "disputed":
        parts.append("DISPUTED: conflicting evidence, not settled")
        parts.extend(_replaced_label(replaced or []))
    else:
        parts.append("current")
        parts.extend(_replaced_label(replaced or []))
    if ev.pinned:
        parts.append("pinned")
    if ev.criticality in ("safety", "identity"):
        parts.append(ev.criticality)
    parts.append(f"said {_day(ev.mentioned_at)}")
    if ev.happened_start:
        window = _day(ev.happened_start)
        if ev.happened_end and _day(ev.happened_end) != window:
            window = f"{window}–{_day(ev.happened_end)}"
        parts.append(f"{ev.time_status} {window}" if ev.time_status != "unknown" else f"when {window}")
    elif ev.time_status in ("planned", "cancelled"):
        parts.append(ev.time_status)
    return heading(*parts)


def _event_body(ev: EventRow, short: bool) -> str:
    if short or ev.summary.strip() == ev.title.strip():
        return ev.title
    summary = ev.summary if len(ev.summary) <= SUMMARY_CHARS else ev.summary[: SUMMARY_CHARS - 1].rstrip() + "…"
    return f"{ev.title}\n{summary}"


EVENTS_TITLE = "Long-term memory relevant to this step (events):"

Chosen = tuple[EventRow, EventRow | None]
"""An event to show and, for a superseded one, the current version it is labelled with."""


async def _choose(
    conn: Connection, candidates: list[EventRow], viewer: Viewer, in_open_turns: Callable[[EventRow], bool]
) -> list[Chosen]:
    """Up to ``MAX_EVENTS`` events in admission order; a superseded one brings its current successor along."""
    chosen: list[Chosen] = []
    seen: set[int] = set()
    for ev in candidates:
        if ev.id in seen or in_open_turns(ev):
            continue
        successor = None
        if ev.status == "superseded":
            chain = [e for e in await events.successor_chain(conn, ev) if e.visible_to(viewer)]
            successor = chain[-1] if chain else None
            if successor is not None and successor.status in ("forgotten", "archived"):
                successor = None
        group: list[Chosen] = [(ev, successor)]
        if successor is not None and successor.id not in seen and not in_open_turns(successor):
            group.append((successor, None))  # the current version travels with the labelled old one
        for item in group:
            if item[0].id not in seen and len(chosen) < MAX_EVENTS:
                chosen.append(item)
                seen.add(item[0].id)
        if len(chosen) >= MAX_EVENTS:
            break
    return chosen


async def _event_entries(
    conn: Connection,
    chosen: list[Chosen],
    viewer: Viewer,
    count: Callable[[str], int],
    quote: Callable[[str], str],
    budget: int,
    shown_out: list[str],
) -> tuple[list[str], int]:
    """The chosen events' entries that fit ``budget`` (each at its longest form that fits), their ids appended to
    ``shown_out``: (entries, tokens used with the title; 0 without an entry)."""
    used = count(EVENTS_TITLE)
    entries: list[str] = []
    shown_ids = {ev.id for ev, _ in chosen}
    before = await events.predecessors_of(conn, [ev.id for ev, _ in chosen])  # one statement for every entry
    for ev, successor in chosen:
        # What it replaced, unless that is shown here anyway (a pinned superseded event, labelled with its successor).
        replaced = [
            old for old in before[ev.id]
            if old.status == "superseded" and old.visible_to(viewer) and old.id not in shown_ids
        ]
        for short, label in ((False, True), (True, True), (True, False)):
            entry = (_event_heading(ev, successor, viewer, replaced if label else None) + "\n"
                     + quote(_event_body(ev, short)))
            cost = count(entry) + 1
            if used + cost <= budget:
                entries.append(entry)
                used += cost
                shown_out.append(ev.public_id)
                break
    return entries, used if entries else 0


def _sections(entries: list[str], node_entries: list[str]) -> list[str]:
    sections = []
    if entries:
        sections.append(EVENTS_TITLE + "\n" + "\n".join(entries))
    if node_entries:
        sections.append(NODES_TITLE + "\n" + "\n".join(node_entries))
    return sections


def _fit(out: LongTerm, entries: list[str], node_entries: list[str], count: Callable[[str], int], budget: int) -> None:
    """Piecewise counts can differ from the joined text's by a token at a seam: enforce the budget on the whole,
    dropping the last node entries first, then the last events."""
    out.sections = _sections(entries, node_entries)
    out.tokens = count("\n\n".join(out.sections)) if out.sections else 0
    while out.tokens > budget and (node_entries or entries):
        if node_entries:
            node_entries.pop()
            out.node_ids.pop()
        else:
            entries.pop()
            out.event_ids.pop()
        out.sections = _sections(entries, node_entries)
        out.tokens = count("\n\n".join(out.sections)) if out.sections else 0


async def render_longterm(
    conn: Connection,
    ns: int | None,
    sess: int | None,
    human: str | None,
    count: Callable[[str], int],
    quote: Callable[[str], str],
    budget: int = MAX_TOKENS,
) -> LongTerm:
    out = LongTerm()
    budget = min(budget, MAX_TOKENS)
    viewer = await visibility.viewer(conn, ns, sess)
    step = Step.of([human or "", await context_text(conn, sess)])
    sealed_until = await _sealed_until(conn, sess)

    def in_open_turns(ev: EventRow) -> bool:
        return sess is not None and ev.session_id == sess and ev.block_id is None and ev.created_at > sealed_until

    memo = await search_memo.Memo.of(conn)  # the database version read once for every search of the render
    ranked = [ev for ev in await _ranked_events(memo, ns, sess, step, viewer) if not in_open_turns(ev)]
    pinned = [ev for ev in await _pinned(conn, ns, sess) if not in_open_turns(ev)]
    safety = [ev for ev in await _safety(conn, ns, sess) if not in_open_turns(ev)]
    chosen = await _choose(conn, admission_order(safety, ranked, pinned), viewer, in_open_turns)
    entries, used = await _event_entries(conn, chosen, viewer, count, quote, budget, out.event_ids)
    nodes = await graph_recall.matched_nodes(memo, ns, sess, step.matches, step.about) if ns is not None else []
    node_entries = await graph_recall.node_entries(conn, nodes, sess, count, quote, budget - used, out.node_ids)
    _fit(out, entries, node_entries, count, budget)
    return out


def summary(lt: LongTerm) -> dict[str, Any]:
    return {"event_ids": lt.event_ids, "node_ids": lt.node_ids, "longterm_tokens": lt.tokens}
