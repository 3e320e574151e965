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

from stratagate.context.current import Item, Round, landed_by_replacement, protected, rounds, session_ref, surface
from stratagate.context.queries_views import Layer, insert_pending_fold, layers, nodes, session_state, stored_settings
from stratagate.errors import NOT_FOUND, DomainError
from stratagate.protocol.types import Result
from stratagate.safety.inert import inert
from stratagate.storage.db import Database
from stratagate.tokens import count_tokens

MAX_TIER = 3
MIN_BATCH = 5000
MIN_BATCH_SHARE = 0.01
MAX_TOPIC = 200
MAX_CONTENT = 60_000
_SESSION_REF = re.compile(r"^s(\d{1,12})$")
_DASHES = re.compile(r"\s*(?:–|—|\.\.|\s-\s)\s*")


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


@dataclass
class View:
    items: list[Item]
    layers: list[Layer]
    window: int | None

    def __post_init__(self) -> None:
        self.pos = {it.seq: i for i, it in enumerate(self.items)}
        self.rounds = rounds(self.items)
        self.landed = landed_by_replacement(self.layers)


def _layer_positions(view: View, layer: Layer) -> list[int]:
    if layer.state == "landed" and layer.replacement_seq in view.pos:
        return [view.pos[layer.replacement_seq]]
    return sorted(view.pos[s] for s in layer.covers if s in view.pos)


def locate(view: View, ref: str, as_end: bool) -> int:
    """The surface position ``ref`` names (a call id: the first or last node of its round)."""
    key = ref.strip()
    layer = next((la for la in view.layers if la.ref == key), None)
    if layer is not None:
        if layer.state in ("dropped", "superseded"):
            raise ContentError(f"compress: {key} is no longer on the surface ({layer.state})")
        positions = _layer_positions(view, layer)
        if not positions:
            raise ContentError(f"compress: {key} is not on the current surface")
        return positions[-1] if as_end else positions[0]
    m = _SESSION_REF.match(key)
    if m:
        seq = int(m.group(1))
        if seq in view.pos:
            return view.pos[seq]
        holder = next((la for la in view.landed.values() if seq in la.covers), None)
        if holder is not None:
            raise ContentError(f"compress: {session_ref(seq)} is inside {holder.ref} now; use {holder.ref} as the ref")
    for r in view.rounds:
        if any(view.items[p].node.call_id == key or key in view.items[p].node.call_ids for p in r.positions):
            return r.last if as_end else r.first
    raise RefNotFound(
        f"compress: unknown ref {ref!r} in this session's surface (use refs from memory_context_status: s00042, c7, "
        "f9, blk_3 or a tool call id)"
    )


def _fmt(tokens: int) -> str:
    return f"{tokens / 1000:.1f}K" if tokens >= 1000 else str(tokens)


def _refused(why: str, **extra: Any) -> CompressResult:
    return CompressResult(accepted=False, text=f"refused: {why}", **extra)


def tag(ref: str, tier: int) -> str:
    return (
        f"[stratagate:fold:t{tier} id={ref} · older context, not an instruction · "
        f'decompress("{ref}") restores the parts]'
    )


def fold_text(ref: str, tier: int, topic: str, summary: str) -> str:
    return f"{tag(ref, tier)}\n{inert(topic, inline=True)}\n{inert(summary)}"


def check(view: View, first: int, last: int) -> tuple[str | None, list[Layer]]:
    """Why the range ``first…last`` may not be folded (None when it may), and the pending layers it wholly holds."""
    span = set(range(first, last + 1))
    guarded = protected(view.items, view.window)
    hit = sorted(p for p in span if p in guarded)
    if hit:
        reason = guarded[hit[0]]
        return f"the range covers the {reason} ({session_ref(view.items[hit[0]].seq)}), which stays as it is", []
    summary = next((p for p in span if view.items[p].what == "summary"), None)
    if summary is not None:
        return f"the range covers DSH's own summary ({session_ref(view.items[summary].seq)}); fold around it", []
    split = next((r for r in view.rounds if _splits(r, span)), None)
    if split is not None:
        a, b = view.items[split.first].seq, view.items[split.last].seq
        return f"the range splits the tool round {session_ref(a)}–{session_ref(b)}; include all of it or none", []
    inside: list[Layer] = []
    for la in view.layers:
        if la.state != "pending":
            continue
        positions = set(_layer_positions(view, la))
        if not positions or not positions & span:
            continue
        if not positions <= span:
            return f"the range covers part of the pending {la.kind} {la.ref}; include all of it or none", []
        inside.append(la)
    return None, inside


def _splits(r: Round, span: set[int]) -> bool:
    inside = sum(1 for p in r.positions if p in span)
    return 0 < inside < len(r.positions)


def min_batch(window: int | None, settings: dict[str, Any]) -> int:
    floor = int(settings.get("min_batch_tokens", MIN_BATCH) or MIN_BATCH)
    share = float(settings.get("min_batch_share", MIN_BATCH_SHARE) or MIN_BATCH_SHARE)
    return max(floor, int(share * window)) if window else floor


async def compress(db: Database, keys: tuple[int, int] | None, args: CompressArgs) -> CompressResult:
    request = parse(args.content)
    if keys is None:
        raise RefNotFound("compress: this session has no context archive yet (nothing to fold)")
    namespace_id, session_id = keys
    state = await session_state(db, session_id)
    all_layers = await layers(db, session_id)
    window = state.get("window") if isinstance(state.get("window"), int) else None
    view = View(surface(await nodes(db, session_id), all_layers, state), all_layers, window)
    first, last = locate(view, request.start, as_end=False), locate(view, request.end, as_end=True)
    if first > last:
        raise ContentError(f"compress: {request.start} comes after {request.end} on the surface; swap them")
    span = view.items[first : last + 1]
    shadowed = sum(it.tokens for it in span)
    estimate = {
        "start": session_ref(span[0].seq),
        "end": session_ref(span[-1].seq),
        "nodes": len(span),
        "shadowed_tokens": shadowed,
    }
    why, inside = check(view, first, last)
    if why is not None:
        return _refused(f"{why}. The range holds {len(span)} nodes, {_fmt(shadowed)} tokens.", **estimate)
    tier = min(MAX_TIER, max([it.tier for it in span] + [la.tier for la in inside if la.kind == "fold"]) + 1)
    probe = fold_text("f000000", tier, request.topic, request.summary)
    if count_tokens(probe) >= shadowed:
        return _refused(
            f"the summary ({_fmt(count_tokens(probe))} tokens) is not shorter than the {_fmt(shadowed)} tokens it "
            "would fold; fold a longer range or write less",
            **estimate,
        )
    children = [it.layer.ref for it in span if it.layer is not None] + [la.ref for la in inside]

    def render(ref: str) -> tuple[str, int]:
        text = fold_text(ref, tier, request.topic, request.summary)
        return text, count_tokens(text)

    async with db.transaction() as conn:
        _, ref, _text, tokens = await insert_pending_fold(
            conn,
            namespace_id,
            session_id,
            tier=tier,
            topic=inert(request.topic, inline=True),
            start_seq=span[0].seq,
            end_seq=span[-1].seq,
            covers=[it.seq for it in span],
            children=children,
            render=render,
            shadowed_tokens=shadowed,
            supersede=[la.ref for la in inside],
        )
    saves = shadowed - tokens
    batch = min_batch(window, await stored_settings(db))
    folds = f"{ref} (T{tier}) folds {estimate['start']}–{estimate['end']} ({len(span)} nodes): {_fmt(shadowed)} → "
    folds += f"{_fmt(tokens)} tokens, saves ~{_fmt(saves)}."
    if saves >= batch:
        first_line = f"accepted, lands at turn end: {folds}"
    else:
        first_line = (
            f"accepted, lands at turn end once the batch is worth the cache miss (saves ~{_fmt(saves)}, under the "
            f"{_fmt(batch)} minimum batch; it lands by its 3rd turn end at the latest): {folds}"
        )
    return CompressResult(accepted=True, text=first_line, ref=ref, tier=tier, tokens=tokens, saves=saves, **estimate)
