"""Cost-aware landing: a batch lands only when what it saves over the expected remaining requests outweighs the
one-time prefix-cache miss it causes (pure; the numbers come from the planner).

R = Σ(shadowed − replacement) tokens; S_suf = tokens from the first changed node to the end of the prompt;
C = (S_suf − R)·(miss − hit) (the suffix after the change is read once at the miss price instead of the hit price),
scaled by the share of the prompt the provider reported as cached (a cold cache loses nothing);
B = R·hit·N with N = clamp(requests so far, 4, 200) (R tokens fewer in every later request, each a cache hit);
min batch = max(5000, 0.01·W), ×1.5 when the batch only re-folds folds. Land if R ≥ min batch and B ≥ C, or when
U ≥ 0.75·W (forced), or when a model fold has waited its turn ends; else defer.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from stratagate.context.settings import ContextSettings


@dataclass(frozen=True)
class Batch:
    saved: int
    """R: tokens the batch removes from every later request."""
    suffix: int
    """S_suf: tokens from the first changed node to the end of the prompt."""
    used: int
    window: int
    requests: int
    only_upgrades: bool = False
    overdue_fold: bool = False
    """A model fold that has waited ``max_deferrals`` turn ends (it lands anyway)."""
    cache_share: float = 1.0
    """The share of the latest prompt the provider served from its cache (1 when not reported): a suffix that would
    not have been a cache hit anyway costs nothing extra to change."""


@dataclass(frozen=True)
class Decision:
    land: bool
    reason: str
    one_time_cost: float = 0.0
    benefit: float = 0.0
    min_batch: int = 0


def _k(tokens: float) -> str:
    return f"{tokens / 1000:.1f}K"


def expected_requests(requests: int, s: ContextSettings) -> int:
    return max(s.requests_min, min(s.requests_max, requests))


def min_batch(window: int, only_upgrades: bool, s: ContextSettings) -> int:
    base = max(s.min_batch_tokens, int(s.min_batch_share * window))
    return int(base * s.upgrade_factor) if only_upgrades else base


def decide(b: Batch, s: ContextSettings) -> Decision:
    n = expected_requests(b.requests, s)
    cost = max(0, b.suffix - b.saved) * (s.price_miss - s.price_hit) * min(1.0, max(0.0, b.cache_share))
    benefit = b.saved * s.price_hit * n
    floor = min_batch(b.window, b.only_upgrades, s)
    numbers: dict[str, Any] = {"one_time_cost": cost, "benefit": benefit, "min_batch": floor}
    if b.saved <= 0:
        return Decision(False, "nothing to land: the batch saves no tokens", **numbers)
    if b.used >= s.force_line * b.window:
        return Decision(True, f"forced: {_k(b.used)} used ≥ {s.force_line:.2f}·W; saves {_k(b.saved)}", **numbers)
    if b.overdue_fold:
        return Decision(True, f"a model fold waited {s.max_deferrals} turn ends; saves {_k(b.saved)}", **numbers)
    if not s.cost_aware:
        return Decision(True, f"lands (cost rule off): saves {_k(b.saved)}", **numbers)
    if b.saved < floor:
        return Decision(False, f"deferred: saves {_k(b.saved)} < min batch {_k(floor)}", **numbers)
    if benefit < cost:
        return Decision(
            False, f"deferred: saves {_k(benefit)} over ~{n} requests < {_k(cost)} one-time miss", **numbers
        )
    return Decision(True, f"lands: saves {_k(benefit)} over ~{n} requests ≥ {_k(cost)} one-time miss", **numbers)
