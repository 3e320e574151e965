"""``compress``: the model folds a range of this session's surface into its own summary. The content is parsed and
validated at once against the current surface (the refs exist here; the range never covers the latest user message,
the live runtime context, the protected tail, an unfinished tool round or DSH's own summary; it never splits a tool
round or a pending fold), then recorded as a pending fold layer that lands at turn end with the next batch. Its tier
is one above the highest tier it contains (raw and cards are tier 0), capped at 3."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from stratagate.context import queries
from stratagate.context.plan import Protected, protected_region
from stratagate.context.queries_views import surface as load_surface
from stratagate.context.records import Layer, session_ref
from stratagate.context.reminders import mark_answered
from stratagate.context.settings import ContextSettings
from stratagate.context.surface import Surface
from stratagate.errors import NOT_FOUND, DomainError
from stratagate.protocol.types import Result
from stratagate.safety.inert import inert
from stratagate.storage.db import Database, audit
from stratagate.tokens import count_tokens

MAX_TIER = 3
MAX_TOPIC = 200
MAX_CONTENT = 60_000
_SESSION_REF = re.compile(r"^s(\d{1,12})$")
_DASHES = re.compile(r"(?<!\s)\s*(?:–|—|\.\.|\s-\s)\s*")  # tried where blanks start: linear on a long run
_HYPHENATED = re.compile(r"^((?:s\d+|[cf]\d+|blk_\d+))-((?:s\d+|[cf]\d+|blk_\d+))(\s.*)$")
"""'s00012-s00040 topic': a plain hyphen only between refs of ours (a tool call id may hold hyphens)."""


class CompressArgs(BaseModel):
    model_config = ConfigDict(extra="forbid")

    content: str = Field(
        min_length=1,
        max_length=MAX_CONTENT,
        description="'<startRef>–<endRef> <topic>' on the first line, then your summary of that range. Refs are "
        "surface refs from memory_context_status: s00042, c7, f9, blk_3 or a tool call id. The range must leave the "
        "latest user message, the recent tool rounds and unfinished work alone; it lands at turn end.",
    )


class CompressResult(Result):
    accepted: bool
    text: str = Field(description="First line: accepted (lands at turn end), or why it was refused; then the estimate.")
    ref: str | None = None
    tier: int | None = None
    start: str | None = None
    end: str | None = None
    nodes: int = 0
    shadowed_tokens: int = 0
    tokens: int = 0
    saves: int = 0


class ContentError(DomainError):
    """The content cannot be read as a range and a summary (-32602)."""


class RefNotFound(DomainError):
    code = NOT_FOUND


@dataclass(frozen=True)
class Request:
    start: str
    end: str
    topic: str
    summary: str


def parse(content: str) -> Request:
    head, _, body = content.strip().partition("\n")
    head = head.strip()
    summary = body.strip()
    pieces = _DASHES.split(head, maxsplit=1)
    if len(pieces) != 2 and (m := _HYPHENATED.match(head)):
        pieces = [m.group(1), m.group(2) + m.group(3)]
    if len(pieces) != 2:
        raise ContentError(
            "compress content must start with '<startRef>–<endRef> <topic>' (e.g. 's00012–s00040 test fixes'), "
            "then the summary on the following lines"
        )
    start, rest = pieces[0].strip(), pieces[1].strip()
    end, _, topic = rest.partition(" ")
    topic = topic.strip()
    if not start or " " in start or not end:
        raise ContentError(f"compress: cannot read a range from {head[:120]!r}; write '<startRef>–<endRef> <topic>'")
    if not topic:
        raise ContentError("compress: name the topic after the range, e.g. 's00012–s00040 test fixes'")
    if len(topic) > MAX_TOPIC:
        raise ContentError(f"compress: the topic is over {MAX_TOPIC} characters; put the detail in the summary")
    if not summary:
        raise ContentError("compress: the summary is missing (write it on the lines after the range)")
    return Request(start, end, topic, summary)


def _layer_positions(surface: Surface, layer: Layer) -> list[int]:
    by_seq = surface.by_seq
    if layer.state == "landed" and layer.replacement_seq in by_seq:
        return [by_seq[layer.replacement_seq]]
    return sorted(by_seq[s] for s in layer.covers if s in by_seq)


def locate(surface: Surface, ref: str, as_end: bool) -> int:
    """The surface position ``ref`` names (a call id: the first or last node of its round)."""
    key = ref.strip()
    layer = surface.layer(key)
    if layer is not None:
        if layer.state in ("dropped", "superseded"):
            raise ContentError(f"compress: {key} is no longer on the surface ({layer.state})")
        positions = _layer_positions(surface, layer)
        if not positions:
            raise ContentError(f"compress: {key} is not on the current surface")
        return positions[-1] if as_end else positions[0]
    m = _SESSION_REF.match(key)
    if m:
        seq = int(m.group(1))
        if seq in surface.by_seq:
            return surface.by_seq[seq]
        holder = next((la for la in surface.layers if la.state == "landed" and seq in la.covers), None)
        if holder is not None:
            raise ContentError(f"compress: {session_ref(seq)} is inside {holder.ref} now; use {holder.ref} as the ref")
    for r in surface.rounds:
        if key in r.call_ids:
            return r.end if as_end else r.start
    raise RefNotFound(
        f"compress: unknown ref {ref!r} in this session's surface (use refs from memory_context_status: s00042, c7, "
        "f9, blk_3 or a tool call id)"
    )


def _fmt(tokens: int) -> str:
    return f"{tokens / 1000:.1f}K" if tokens >= 1000 else str(tokens)


def _refused(why: str, **extra: Any) -> CompressResult:
    return CompressResult(accepted=False, text=f"refused: {why}", **extra)


def tag(ref: str, tier: int, first: str, last: str) -> str:
    return (
        f"[stratagate:fold:t{tier} id={ref} · older context {first}–{last}, not an instruction · "
        f'decompress("{ref}") restores it]'
    )


def fold_text(ref: str, tier: int, first: str, last: str, topic: str, summary: str) -> str:
    """The tag line, the topic (one line) and the model's summary, each through the rendering rule."""
    return f"{tag(ref, tier, first, last)}\n{inert(topic, inline=True)}\n{inert(summary)}"


def check(surface: Surface, protected: Protected, first: int, last: int) -> tuple[str | None, list[Layer]]:
    """Why the range ``first…last`` may not be folded (None when it may), and the pending layers it wholly holds."""
    reason = protected.reason(first, last)
    if reason is not None:
        at = next(p for p in range(first, last + 1) if p in protected)
        return f"the range covers {reason} ({session_ref(surface.nodes[at].seq)}), which stays as it is", []
    for edge in (first, last):
        a, b = surface.atom_of(edge)
        if (edge == first and a != first) or (edge == last and b != last):
            ra, rb = session_ref(surface.nodes[a].seq), session_ref(surface.nodes[b].seq)
            return f"the range splits the tool round {ra}–{rb}; include all of it or none", []
    span = set(range(first, last + 1))
    inside: list[Layer] = []
    for la in surface.layers:
        if la.state != "pending":
            continue
        positions = set(_layer_positions(surface, la))
        if not positions or not positions & span:
            continue
        if not positions <= span:
            return f"the range covers part of the pending {la.kind} {la.ref}; include all of it or none", []
        inside.append(la)
    return None, inside


def min_batch(window: int | None, s: ContextSettings) -> int:
    return max(s.min_batch_tokens, int(s.min_batch_share * window)) if window else s.min_batch_tokens


async def compress(
    db: Database, keys: tuple[int, int] | None, args: CompressArgs, settings: ContextSettings
) -> CompressResult:
    request = parse(args.content)
    found = await load_surface(db, keys[1]) if keys is not None else None
    if keys is None or found is None or not found.nodes:
        raise RefNotFound("compress: this session's context is not managed yet (no surface reported), nothing to fold")
    namespace_id, session_id = keys
    surface = found
    state = await queries.session_state(db.reader, session_id) or {}
    window = state.get("window") if isinstance(state.get("window"), int) else None
    first, last = locate(surface, request.start, as_end=False), locate(surface, request.end, as_end=True)
    if first > last:
        raise ContentError(f"compress: {request.start} comes after {request.end} on the surface; swap them")
    span = surface.nodes[first : last + 1]
    shadowed = surface.tokens(first, last)
    estimate = {
        "start": session_ref(span[0].seq),
        "end": session_ref(span[-1].seq),
        "nodes": len(span),
        "shadowed_tokens": shadowed,
    }
    protected = protected_region(surface, window or 0, settings)
    why, inside = check(surface, protected, first, last)
    if why is not None:
        return _refused(f"{why}. The range holds {len(span)} nodes, {_fmt(shadowed)} tokens.", **estimate)
    tiers = [n.layer.tier for n in span if n.layer is not None and n.layer.kind == "fold"]
    tier = min(MAX_TIER, max(tiers + [la.tier for la in inside if la.kind == "fold"], default=0) + 1)
    first_ref, last_ref = session_ref(span[0].seq), session_ref(span[-1].seq)
    probe = count_tokens(fold_text("f000000", tier, first_ref, last_ref, request.topic, request.summary))
    if probe >= shadowed:
        return _refused(
            f"the summary ({_fmt(probe)} tokens) is not shorter than the {_fmt(shadowed)} tokens it would fold; "
            "fold a longer range or write less",
            **estimate,
        )
    children = [n.layer.ref for n in span if n.layer is not None] + [la.ref for la in inside]
    async with db.transaction() as conn:
        layer = await queries.insert_layer(
            conn,
            namespace_id,
            session_id,
            prefix="f",
            kind="fold",
            start_seq=span[0].seq,
            end_seq=span[-1].seq,
            covers=[n.seq for n in span],
            text=lambda ref: fold_text(ref, tier, first_ref, last_ref, request.topic, request.summary),
            tokens=count_tokens,
            shadowed_tokens=shadowed,
            tier=tier,
            topic=inert(request.topic, inline=True),
            children=children,
        )
        # Pending layers wholly inside are its children now: they will not land on their own.
        await queries.set_state(conn, [la.id for la in inside], "superseded")
        after = {"tier": tier, "start_seq": layer.start_seq, "end_seq": layer.end_seq, "shadowed_tokens": shadowed}
        await audit(conn, namespace_id, "agent", "context.fold_requested", "context_layer", layer.ref, after=after)
        await mark_answered(conn, namespace_id, session_id)  # the reminder leaves the next step's recall
    saves = shadowed - layer.tokens
    batch = min_batch(window, settings)
    folds = f"{layer.ref} (T{tier}) folds {estimate['start']}–{estimate['end']} ({len(span)} nodes): "
    folds += f"{_fmt(shadowed)} → {_fmt(layer.tokens)} tokens, saves ~{_fmt(saves)}."
    if saves >= batch:
        first_line = f"accepted, lands at turn end: {folds}"
    else:
        first_line = (
            f"accepted, lands at turn end once the batch is worth the cache miss (saves ~{_fmt(saves)}, under the "
            f"{_fmt(batch)} minimum batch; it lands by its 3rd turn end at the latest): {folds}"
        )
    return CompressResult(
        accepted=True, text=first_line, ref=layer.ref, tier=tier, tokens=layer.tokens, saves=saves, **estimate
    )
