"""The planner behind ``context.plan``: archive the reported surface, classify it, and return the replacements the
shim applies now (cards, ready blocks at their decayed level, pending model folds, automatic digests) — or none,
with the reason.

Rules (docs/architecture.md, "Context engine"): ops never overlap, never split a tool round and never touch the
protected region; model folds land at turn end; in cost mode a batch lands only when the cost rule says so (or
above the force line, or when a model fold has waited its turn ends); mid-turn (pre-step) only cards, and only in
quality mode or above the pressure line; overflow and ``/compact`` land whatever helps. Per-session bookkeeping
(the last surface order, reminders, digest cool-down, deferrals) lives in ``context_sessions.state``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from stratagate.blocks.views import BlockRow, session_blocks
from stratagate.context import queries
from stratagate.context.archive import archive_surface
from stratagate.context.cards import card_body, card_tag
from stratagate.context.cost import Batch, Decision, decide, min_batch
from stratagate.context.digest import digest_body, digest_tag
from stratagate.context.models import Op, PlanParams, PlanResult
from stratagate.context.records import TAG_PREFIX, Layer, session_ref
from stratagate.context.reminders import update_reminders
from stratagate.context.settings import ContextSettings
from stratagate.context.surface import Surface, classify_surface, tagged_ref
from stratagate.events.forgotten import load as load_forgotten
from stratagate.events.forgotten import shown_view
from stratagate.safety.inert import quote
from stratagate.storage import lookup
from stratagate.storage.db import Database
from stratagate.storage.sqlite import Connection

NEVER_CARDED = frozenset({"decompress"})
"""Tools whose output the model asked for on purpose (restored history): carding it again would undo the ask."""
MAX_BLOCK_LEVEL = 4
"""A block replaces native history at most at L4 (L5 is the history itself)."""


# --- the protected region ----------------------------------------------------------------------------------------


@dataclass
class Protected:
    """Positions (surface order) no op may touch, each with the reason (for the tools' refusals)."""

    reasons: dict[int, str] = field(default_factory=dict)
    tail_start: int | None = None

    def add(self, pos: int, reason: str) -> None:
        self.reasons.setdefault(pos, reason)

    def __contains__(self, pos: object) -> bool:
        return pos in self.reasons

    def reason(self, start: int, end: int) -> str | None:
        """Why the span start…end (positions, inclusive) may not be replaced (None: it may)."""
        for pos in range(start, end + 1):
            if pos in self.reasons:
                return self.reasons[pos]
        return None


def protected_region(surface: Surface, window: int, settings: ContextSettings) -> Protected:
    """The latest user message, the live runtime context, the protected tail (the last ``protected_rounds`` tool
    rounds within ``protected_share``·W — the newest always whole — and everything after them), unfinished rounds,
    and DSH's own summaries."""
    p = Protected()
    latest = surface.latest_user()
    if latest is not None:
        p.add(latest, "the latest user message")
    runtime = surface.live_runtime()
    if runtime is not None:
        p.add(runtime, "the live runtime context")
    for r in surface.rounds:
        if not r.complete:
            for pos in range(r.start, r.end + 1):
                p.add(pos, "an unfinished tool round")
    for pos in surface.foreign_summaries():
        p.add(pos, "DSH's own summary")
    cap = settings.protected_share * window
    kept = 0
    used = 0
    tail: int | None = None
    for r in reversed(surface.rounds):
        if kept >= settings.protected_rounds:
            break
        if kept > 0 and used + r.tokens > cap:
            break
        kept += 1
        used += r.tokens
        tail = r.start
    if tail is None and latest is not None:
        tail = latest + 1  # no rounds yet: the work after the latest user message
    if tail is not None:
        p.tail_start = tail
        for pos in range(tail, len(surface.nodes)):
            p.add(pos, "the protected tail (the latest tool rounds)")
    return p


def foldable_tokens(surface: Surface, protected: Protected) -> int:
    return sum(n.tokens for n in surface.nodes if n.pos not in protected)


# --- candidate operations ----------------------------------------------------------------------------------------


@dataclass
class Candidate:
    kind: str  # card | block | fold
    start: int  # positions, inclusive
    end: int
    text: Callable[[str], str] | str
    shadowed: int
    tier: int = 0
    auto: bool = True
    ref: str | None = None
    layer: Layer | None = None
    block_id: int | None = None
    level: int | None = None
    topic: str | None = None
    tokens: int = 0
    reland: bool = False
    """A landed block shown again at its decayed (shorter) level, in place of its own replacement node."""

    def saved(self) -> int:
        return self.shadowed - self.tokens


def _aligned(surface: Surface, start: int, end: int) -> bool:
    """The span starts and ends on atom edges (so it never splits a tool round)."""
    return surface.atom_of(start)[0] == start and surface.atom_of(end)[1] == end


def _free(claimed: set[int], start: int, end: int) -> bool:
    return all(pos not in claimed for pos in range(start, end + 1))


def _children(surface: Surface, start: int, end: int) -> list[str]:
    return [n.layer.ref for n in surface.nodes[start : end + 1] if n.layer is not None]


def _tier(surface: Surface, start: int, end: int) -> int:
    tiers = [n.layer.tier for n in surface.nodes[start : end + 1] if n.layer is not None and n.layer.kind == "fold"]
    return min(3, max(tiers, default=0) + 1)


def pending_folds(surface: Surface, protected: Protected) -> tuple[list[Candidate], list[Layer]]:
    """Model folds (``compress``) waiting to land, and those whose range left the surface (to drop)."""
    by_seq = surface.by_seq
    out: list[Candidate] = []
    gone: list[Layer] = []
    for layer in surface.layers:
        if layer.state != "pending" or layer.kind != "fold" or layer.auto:
            continue
        start, end = by_seq.get(layer.start_seq), by_seq.get(layer.end_seq)
        if start is None or end is None or start > end:
            gone.append(layer)
            continue
        if not _aligned(surface, start, end) or protected.reason(start, end):
            continue  # waits (e.g. its range is still in the protected tail)
        out.append(Candidate("fold", start, end, layer.text, surface.tokens(start, end), layer.tier, False,
                             layer.ref, layer, topic=layer.topic, tokens=layer.tokens))
    return out, gone


def reserved_by_folds(surface: Surface) -> set[int]:
    """Positions inside the ranges of pending model folds (as the surface holds them now)."""
    by_seq = surface.by_seq
    out: set[int] = set()
    for layer in surface.layers:
        if layer.state == "pending" and layer.kind == "fold" and not layer.auto:
            start, end = by_seq.get(layer.start_seq), by_seq.get(layer.end_seq)
            if start is not None and end is not None and start <= end:
                out.update(range(start, end + 1))
    return out


def card_candidates(surface: Surface, protected: Protected, claimed: set[int], s: ContextSettings,
                    count: Callable[[str], int]) -> list[Candidate]:
    out: list[Candidate] = []
    calls = {c.call_id: c for n in surface.nodes for c in n.node.calls}
    for n in surface.nodes:
        node = n.node
        # Ours already (a card, mapped or not) stays; another engine's replacement (DSH's pruner) may be carded.
        ours = n.layer is not None or node.text.startswith(TAG_PREFIX)
        if node.kind != "tool" or ours or n.pos in protected or n.pos in claimed:
            continue
        if n.round is None or not surface.rounds[n.round].complete or node.tokens <= s.card_min_tokens:
            continue
        call = calls.get(node.call_id or "")
        if (node.tool_name or (call.name if call else "")) in NEVER_CARDED:
            continue
        arguments = call.arguments if call else ""
        name = node.tool_name or (call.name if call else None)

        body = card_body(name, arguments, node.text, node.is_error, node.tokens)

        def text(ref: str, body: str = body) -> str:
            return card_tag(ref) + "\n" + body

        tokens = count(text("c000000"))
        if tokens >= node.tokens:
            continue  # a card would not save anything
        out.append(Candidate("card", n.pos, n.pos, text, n.tokens, tokens=tokens))
    return out


def block_text(ref: str, level: int, view: str, first: str, last: str, turns: tuple[int, int]) -> str:
    return (
        f"[stratagate:block id={ref} level=L{level} · older context {first}–{last} (turns {turns[0]}–{turns[1]}), "
        f"not an instruction · decompress(\"{ref}\") shows the next level]\n" + quote(view)
    )


async def block_candidates(
    db: Database, surface: Surface, protected: Protected, claimed: set[int], blocks: list[BlockRow],
    receipts: dict[int, list[str]], session_key: str, count: Callable[[str], int],
) -> list[Candidate]:
    """Each ready block whose DSH turns form one clean surface span outside the protected region, at its decayed
    display level (at most L4); and each landed block whose level has decayed since, re-landed shorter in place."""
    done = {la.ref: la for la in surface.layers if la.kind == "block" and la.state in ("landed", "superseded")}
    on_surface = {n.layer.ref: n for n in surface.nodes if n.layer is not None and n.layer.kind == "block"}
    prefix = f"dsh:{session_key}:turn:"
    by_turn = surface.turns()
    forgotten = None
    out: list[Candidate] = []
    for block in blocks:
        if not block.ready:
            continue
        turns = set()
        for receipt in receipts.get(block.id, []):
            if receipt.startswith(prefix) and receipt[len(prefix):].isdigit():
                turns.add(int(receipt[len(prefix):]))
        if not turns:
            continue
        level = min(block.level, MAX_BLOCK_LEVEL)
        span = (min(turns), max(turns))
        landed = done.get(block.ref)
        if landed is not None:
            node = on_surface.get(block.ref)
            if node is None or landed.level is None or level >= landed.level or node.pos in protected \
                    or node.pos in claimed or not landed.covers:
                continue
            if forgotten is None:
                forgotten = await load_forgotten(db, block.namespace_id, block.session_id)
            view = await shown_view(db, block, level, forgotten)
            first, last = session_ref(landed.covers[0]), session_ref(landed.covers[-1])
            text = block_text(block.ref, level, view, first, last, span)
            tokens = count(text)
            if tokens >= node.tokens:
                continue
            out.append(Candidate("block", node.pos, node.pos, text, node.tokens, ref=block.ref, layer=landed,
                                 block_id=block.id, level=level, tokens=tokens, reland=True))
            claimed.add(node.pos)
            continue
        positions = sorted(pos for t in turns for pos in by_turn.get(t, []))
        if not positions:
            continue
        start, end = positions[0], positions[-1]
        if positions != list(range(start, end + 1)) or not _aligned(surface, start, end):
            continue
        if protected.reason(start, end) or not _free(claimed, start, end):
            continue
        if any(n.layer is not None and n.layer.kind in ("fold", "block") for n in surface.nodes[start : end + 1]):
            continue  # a fold inside: its range may reach outside the block's turns
        if forgotten is None:
            forgotten = await load_forgotten(db, block.namespace_id, block.session_id)
        view = await shown_view(db, block, level, forgotten)
        first, last = session_ref(surface.nodes[start].seq), session_ref(surface.nodes[end].seq)

        def text_of(ref: str, level: int = level, view: str = view, first: str = first, last: str = last,
                    span: tuple[int, int] = span) -> str:
            return block_text(ref, level, view, first, last, span)

        shadowed = surface.tokens(start, end)
        tokens = count(text_of(block.ref))
        if tokens >= shadowed:
            continue
        out.append(Candidate("block", start, end, text_of, shadowed, ref=block.ref, block_id=block.id, level=level,
                             tokens=tokens))
        claimed.update(range(start, end + 1))
    return out


def digest_candidates(surface: Surface, protected: Protected, claimed: set[int], target: float,
                      s: ContextSettings, count: Callable[[str], int], foldable: int) -> list[Candidate]:
    """Fold the oldest atoms (never split, small ones merged, protected and claimed ones skipped) until foldable
    context is about ``target``: take atom a only while F − size(a) ≥ target − size(a)/2."""
    runs: list[tuple[int, int]] = []
    f = float(foldable)
    run: tuple[int, int] | None = None
    for start, end in surface.atoms:
        size = surface.tokens(start, end)
        blocked = protected.reason(start, end) is not None or not _free(claimed, start, end)
        if blocked:
            if run is not None:
                runs.append(run)
                run = None
            continue
        if f - size < target - size / 2:
            break
        f -= size
        run = (run[0], end) if run is not None else (start, end)
    if run is not None:
        runs.append(run)
    return _digests(surface, runs, claimed, s, count)


def _digests(surface: Surface, runs: list[tuple[int, int]], claimed: set[int], s: ContextSettings,
             count: Callable[[str], int]) -> list[Candidate]:
    """One extractive digest (a T1 fold, or higher over folds) per span (positions, inclusive)."""
    out: list[Candidate] = []
    for start, end in runs:
        nodes = [n.node for n in surface.nodes[start : end + 1]]
        body = digest_body(nodes, s.digest_share, s.digest_min_chars)
        first, last = session_ref(surface.nodes[start].seq), session_ref(surface.nodes[end].seq)
        tier = _tier(surface, start, end)

        def text(ref: str, body: str = body, first: str = first, last: str = last, tier: int = tier) -> str:
            return digest_tag(ref, first, last).replace("fold:t1", f"fold:t{tier}", 1) + "\n" + quote(body)

        shadowed = surface.tokens(start, end)
        tokens = count(text("f000000"))
        if tokens >= shadowed:
            continue
        out.append(Candidate("fold", start, end, text, shadowed, tier=tier, auto=True, tokens=tokens))
        claimed.update(range(start, end + 1))
    return out


def old_history_candidates(surface: Surface, protected: Protected, claimed: set[int], s: ContextSettings,
                           count: Callable[[str], int], turn: int | None, window: int) -> list[Candidate]:
    """Finished rounds older than ``old_rounds_age`` turns (raw or carded, never folds or blocks) are digested at
    turn end once they pass ``max(old_rounds_budget, old_rounds_share·W)`` tokens: the history term stops growing
    by a card and a call per round long before the window's digest lines."""
    if not s.old_rounds_budget or turn is None:
        return []
    cutoff = turn - s.old_rounds_age
    runs: list[tuple[int, int]] = []
    run: tuple[int, int] | None = None
    total = 0
    for start, end in surface.atoms:
        nodes = surface.nodes[start : end + 1]
        eligible = (
            protected.reason(start, end) is None and _free(claimed, start, end)
            and all(n.node.turn is not None and n.node.turn <= cutoff for n in nodes)
            and not any(n.node.kind == "checkpoint" or (n.layer is not None and n.layer.kind != "card") for n in nodes)
        )
        if not eligible:
            if run is not None:
                runs.append(run)
                run = None
            continue
        total += surface.tokens(start, end)
        run = (run[0], end) if run is not None else (start, end)
    if run is not None:
        runs.append(run)
    if total < max(s.old_rounds_budget, int(s.old_rounds_share * window)):
        return []
    return _digests(surface, runs, claimed, s, count)


# --- digests and state --------------------------------------------------------------------------------------------


def wants_digest(state: dict[str, Any], phase: str, used: int, window: int, foldable: int,
                 s: ContextSettings) -> bool:
    if phase == "manual":
        return True
    if phase not in ("turn-end", "overflow") or not s.auto_fold:
        return False
    if phase == "overflow":
        return True
    unanswered = int(state.get("reminders", {}).get("unanswered", 0))
    line = used > s.digest_line * window and (unanswered >= s.digest_reminders or not s.reminders)
    if not (line or used > s.digest_force_line * window):
        return False
    last = state.get("last_digest_foldable")
    return last is None or foldable >= last + s.digest_cooldown or used > s.force_line * window


# --- the plan -------------------------------------------------------------------------------------------------------


async def _map_tagged(conn: Connection, surface: Surface, state: dict[str, Any]) -> bool:
    """A replacement node whose tag names a pending layer (or a block being re-landed) lands it: the shim's
    context.landed was lost."""
    changed = False
    relands = state.get("relands", {})
    for n in surface.nodes:
        if n.layer is not None or not n.node.replaces:
            continue
        ref = tagged_ref(n.node.text)
        layer = surface.layer(ref) if ref else None
        if layer is not None and layer.state == "pending":
            await queries.mark_landed(conn, layer.id, n.seq)
            changed = True
        elif layer is not None and layer.ref in relands and layer.state == "landed":
            await apply_reland(conn, layer, relands.pop(layer.ref), n.seq)
            changed = True
    return changed


async def apply_reland(conn: Connection, layer: Layer, shown: dict[str, Any], replacement_seq: int) -> None:
    await queries.reland(conn, layer.id, str(shown["text"]), int(shown["tokens"]), int(shown["level"]),
                         replacement_seq)


async def plan(
    db: Database,
    p: PlanParams,
    settings: ContextSettings,
    count: Callable[[str], int],
    lam: float,
) -> PlanResult:
    """Archive, classify and plan in one write transaction (the writer lock orders plans of one session)."""
    async with db.transaction() as conn:
        ns_id = await lookup.ensure_namespace(conn, p.namespace)
        session_id, _ = await lookup.ensure_session(conn, ns_id, p.session)
        order, _new = await archive_surface(conn, ns_id, session_id, p.surface, count, p.turn)
        state = await queries.session_state(conn, session_id) or {}
        surface = await _surface(conn, session_id, order)
        if await _map_tagged(conn, surface, state):
            surface = await _surface(conn, session_id, order)
        through = await queries.archived_through(conn, session_id)
        window = p.window
        overhead = p.overhead_tokens or 0
        local = surface.total + overhead
        used = p.usage.prompt_tokens if p.usage and p.usage.prompt_tokens else local
        requests = p.usage.requests if p.usage and p.usage.requests else await queries.count_requests(conn, session_id)
        protected = protected_region(surface, window, settings)
        foldable = foldable_tokens(surface, protected)
        reminder = update_reminders(state, surface, protected, foldable, used, window, settings)
        state.update(surface=order, window=window, overhead=overhead, used=used, local_tokens=local,
                     foldable=foldable, turn=p.turn, phase=p.phase, requests=requests)
        if p.usage is not None:
            state["usage"] = p.usage.model_dump()
        by_seq = surface.by_seq
        gone = [la.id for la in surface.layers if la.state == "pending"
                and (la.start_seq not in by_seq or la.end_seq not in by_seq)]
        if gone:  # its range was replaced by something else (DSH's summary, another engine): it can never land
            await queries.set_state(conn, gone, "dropped", "its range left the surface")
            surface = await _surface(conn, session_id, order)

        candidates, decision = await _choose(db, conn, ns_id, session_id, p, surface, protected, settings, count,
                                             state, used, window, overhead, foldable, requests, lam)
        ops: list[Op] = []
        if decision.land and candidates:
            relands = state.setdefault("relands", {})
            for c in candidates:
                if c.reland:  # the landed row changes only when context.landed says the new text is in place
                    text = c.text if isinstance(c.text, str) else c.text(c.ref or "")
                    relands[c.ref] = {"level": c.level, "text": text, "tokens": c.tokens}
                    seq = surface.nodes[c.start].seq
                    auto = c.layer.auto if c.layer is not None else True
                    ops.append(Op(ref=c.ref or "", kind="block", tier=0, auto=auto, start=seq, end=seq, text=text,
                                  tokens=c.tokens, shadowed_tokens=c.shadowed))
                    continue
                layer = await _persist(conn, ns_id, session_id, surface, c, count)
                ops.append(Op(ref=layer.ref, kind=layer.kind, tier=layer.tier, auto=layer.auto,
                              start=surface.nodes[c.start].seq, end=surface.nodes[c.end].seq, text=layer.text,
                              tokens=layer.tokens, shadowed_tokens=c.shadowed))
            if any(c.kind == "fold" and c.auto for c in candidates):
                state["last_digest_foldable"] = foldable - sum(c.saved() for c in candidates)
            state["in_flight"] = [o.ref for o in ops]
        elif p.phase == "turn-end":
            waiting = [c.layer.id for c in candidates if c.layer is not None and c.kind == "fold" and not c.auto]
            await queries.add_deferrals(conn, waiting)
        state["decision"] = decision.reason
        await queries.put_session_state(conn, ns_id, session_id, state)
    return PlanResult(ops=ops, archived_through=through, reminder=reminder, decision=decision.reason,
                      used_tokens=used, window=window)


async def _persist(conn: Connection, ns_id: int, session_id: int, surface: Surface, c: Candidate,
                   count: Callable[[str], int]) -> Layer:
    """The layer row of a landing candidate: a model fold's own row, a re-planned pending row, or a new one."""
    covers = [n.seq for n in surface.nodes[c.start : c.end + 1]]
    children = _children(surface, c.start, c.end)
    start, end = covers[0], covers[-1]
    if c.layer is not None:  # a model fold: its text is the model's; the span's size may have changed since
        await queries.refresh_pending(conn, c.layer.id, c.layer.text, c.layer.tokens, c.shadowed, covers, children,
                                      c.layer.level)
        return (await queries.layer_by_id(conn, c.layer.id)) or c.layer
    existing = await queries.find_pending(conn, session_id, c.kind, start, end, c.auto)
    if c.ref is not None and existing is None:
        existing = await queries.layer_by_ref(conn, session_id, c.ref)
    if existing is not None and existing.state == "dropped":  # its range is back in one piece: plan it again
        await queries.set_state(conn, [existing.id], "pending")
        existing.state = "pending"
    if existing is not None and existing.state == "pending":
        text = c.text(existing.ref) if callable(c.text) else c.text
        await queries.refresh_pending(conn, existing.id, text, count(text), c.shadowed, covers, children, c.level)
        return (await queries.layer_by_id(conn, existing.id)) or existing
    prefix = {"card": "c", "fold": "f"}.get(c.kind)
    return await queries.insert_layer(
        conn, ns_id, session_id, prefix=prefix, kind=c.kind, start_seq=start, end_seq=end, covers=covers,
        text=c.text, tokens=count, shadowed_tokens=c.shadowed, tier=c.tier, auto=c.auto, topic=c.topic,
        children=children, block_id=c.block_id, level=c.level, ref=c.ref,
    )


async def _surface(conn: Connection, session_id: int, order: list[int]) -> Surface:
    nodes = await queries.nodes_by_seqs(conn, session_id, order)
    layers = await queries.session_layers(conn, session_id)
    return classify_surface(order, nodes, layers)


async def _choose(
    db: Database, conn: Connection, ns_id: int, session_id: int, p: PlanParams, surface: Surface,
    protected: Protected, s: ContextSettings, count: Callable[[str], int], state: dict[str, Any], used: int,
    window: int, overhead: int, foldable: int, requests: int, lam: float,
) -> tuple[list[Candidate], Decision]:
    """The batch for this phase and whether it lands now."""
    if not s.enabled:
        return [], Decision(False, "the context engine is off (settings)")
    # Ranges of model folds waiting to land are theirs: nothing else replaces a node inside them meanwhile.
    claimed: set[int] = reserved_by_folds(surface)
    batch: list[Candidate] = []
    if p.phase == "pre-step":
        if not (s.mid_turn_cards or used >= s.pressure_line * window):
            return [], Decision(False, f"mid-turn: {s.mode} mode waits for turn end below the pressure line")
        batch = card_candidates(surface, protected, claimed, s, count)
        saved = sum(c.saved() for c in batch)
        if saved <= 0:
            return [], Decision(False, "mid-turn: no finished round to card")
        floor = min_batch(window, False, s)
        if s.cost_aware and not s.mid_turn_cards and saved < floor and used < s.force_line * window:
            # Above the pressure line in cost mode: batch the cards (each landing is a cache miss from its round on).
            return [], Decision(False, f"mid-turn: deferred: saves {saved / 1000:.1f}K < min batch {floor / 1000:.1f}K")
        return batch, Decision(True, f"mid-turn cards: saves {saved / 1000:.1f}K")

    folds, _ = pending_folds(surface, protected)
    taken: set[int] = set()
    for c in folds:  # oldest first; a fold overlapping an earlier one waits for it
        if _free(taken, c.start, c.end):
            batch.append(c)
            taken.update(range(c.start, c.end + 1))
    block_rows = [b for b in await session_blocks(db, ns_id, session_id, lam) if b.ready]
    if block_rows:
        receipts = await queries.block_turn_receipts(conn, session_id)
        batch += await block_candidates(db, surface, protected, claimed, block_rows, receipts, p.session, count)
    if wants_digest(state, p.phase, used, window, foldable, s):
        target = s.digest_target * max(0, window - overhead)
        remaining = foldable - sum(c.saved() for c in batch)
        if p.phase == "manual":  # /compact asks for relief below the pressure lines too: fold the older half at least
            target = min(target, remaining / 2)
        batch += digest_candidates(surface, protected, claimed, target, s, count, remaining)
    if p.phase == "turn-end" and s.auto_fold:
        batch += old_history_candidates(surface, protected, claimed, s, count, p.turn, window)
    if p.phase != "manual":  # /compact runs between turns: DSH refuses a tool/result replacement outside a turn
        batch += card_candidates(surface, protected, claimed, s, count)
    batch.sort(key=lambda c: c.start)
    saved = sum(c.saved() for c in batch)
    if not batch:
        return [], Decision(False, "nothing to replace outside the protected region")
    if p.phase in ("overflow", "manual"):
        return batch, Decision(True, f"{p.phase}: lands everything that helps; saves {saved / 1000:.1f}K")
    overdue = any(c.layer is not None and not c.auto and c.layer.deferrals >= s.max_deferrals for c in batch)
    only_upgrades = all(c.kind == "fold" and all(
        n.layer is not None and n.layer.kind == "fold" for n in surface.nodes[c.start : c.end + 1]) for c in batch)
    share = 1.0  # 0 cached tokens may only mean "not reported": then assume the prefix is cached (defer more)
    if p.usage is not None and p.usage.prompt_tokens and p.usage.cached_tokens:
        share = p.usage.cached_tokens / p.usage.prompt_tokens
    decision = decide(
        Batch(saved=saved, suffix=surface.tokens(batch[0].start), used=used, window=window, requests=requests,
              only_upgrades=only_upgrades, overdue_fold=overdue, cache_share=share),
        s,
    )
    return batch, decision
