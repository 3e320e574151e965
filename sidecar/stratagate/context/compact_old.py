"""Keeping the history term bounded in cost mode, where the pressure digests fire only above 0.5/0.6·W.

Below those lines every finished round would otherwise stay for good as a card plus its assistant call message
(~120 tokens a round), so a long session's requests keep growing. Two rules, both batched so a landing (one
prefix-cache miss) is rare:

* **History budget** (turn end): once the finished history *older than the last* ``history_keep_turns`` turns —
  raw rounds, cards, user messages; never an earlier checkpoint (no re-folding), never the protected region or a
  span claimed by another op — holds ``history_budget`` tokens or more, it is folded into automatic T1 digests
  (one per contiguous run; runs that would save less than ``card_min_tokens`` stay). The result still goes
  through the cost rule with the rest of the turn-end batch.
* **Mid-turn min batch** (pre-step above the pressure line, cost rule on): cards wait until they save at least the
  min batch (below the force line), instead of one small card — and one cache miss — per step.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from stratagate.context.cost import Decision, min_batch
from stratagate.context.settings import ContextSettings

if TYPE_CHECKING:  # plan.py imports this module: the types only, to keep the import one-way at run time
    from stratagate.context.plan import Candidate, Protected
    from stratagate.context.surface import Surface


def keep_from(surface: Surface, turn: int | None, keep_turns: int) -> int | None:
    """The first position of the last ``keep_turns`` turns (everything from it on stays); None: no old history."""
    if turn is None:
        return None
    first_kept = turn - keep_turns + 1
    return next((n.pos for n in surface.nodes if n.node.turn is not None and n.node.turn >= first_kept), None)


def _folded(surface: Surface, pos: int) -> bool:
    """A checkpoint (ours or DSH's) or another non-card replacement: budget digests never re-fold it."""
    n = surface.nodes[pos]
    return n.kind == "checkpoint" or (n.layer is not None and n.layer.kind != "card")


def old_history(surface: Surface, protected: Protected, claimed: set[int], cutoff: int) -> set[int]:
    """Positions before ``cutoff`` a budget digest may fold: not protected, not claimed, not a checkpoint."""
    out: set[int] = set()
    for start, end in surface.atoms:
        if end >= cutoff:
            break
        span = range(start, end + 1)
        if protected.reason(start, end) is not None or any(pos in claimed for pos in span):
            continue
        if any(_folded(surface, pos) for pos in span):
            continue
        out.update(span)
    return out


def budget_digests(
    surface: Surface, protected: Protected, claimed: set[int], turn: int | None, s: ContextSettings,
    count: Callable[[str], int],
    digest: Callable[..., list[Candidate]],
) -> list[Candidate]:
    """Turn-end digests of the old history once it holds ``history_budget`` tokens (none when the budget is 0 or
    automatic digests are off). ``digest`` is the planner's digest_candidates (it claims what it takes)."""
    if s.history_budget <= 0 or not s.auto_fold:
        return []
    cutoff = keep_from(surface, turn, s.history_keep_turns)
    if cutoff is None:
        return []
    eligible = old_history(surface, protected, claimed, cutoff)
    material = sum(surface.nodes[pos].tokens for pos in eligible)
    if material < s.history_budget:
        return []
    blocked = set(range(len(surface.nodes))) - eligible
    # Target 0 with the material as F: take every eligible atom (F − size ≥ −size/2 holds for each in turn).
    out = [c for c in digest(surface, protected, blocked, 0.0, s, count, material)
           if c.saved() >= s.card_min_tokens]
    for c in out:
        c.budget = True
        claimed.update(range(c.start, c.end + 1))
    return out


def mid_turn_decision(saved: int, used: int, window: int, s: ContextSettings) -> Decision | None:
    """A deferral when mid-turn cards save less than the min batch (cost rule on, below the force line), else
    None (they land)."""
    floor = min_batch(window, False, s)
    if not s.cost_aware or used >= s.force_line * window or saved >= floor:
        return None
    return Decision(False, f"mid-turn: cards save {saved / 1000:.1f}K < min batch {floor / 1000:.1f}K", min_batch=floor)
