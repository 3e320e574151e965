"""Reciprocal rank fusion: merge ranked lists (BM25, dense, graph…) without comparing their scores.

Each list contributes ``weight / (k + rank)`` (rank from 1) to every item in it; items are ordered by the sum.
Scores of different retrievers live on different scales (BM25 is unbounded, cosine is in [-1, 1]); ranks do not,
which is why RRF needs no calibration. ``k`` (60 in the original paper, Cormack et al. 2009) damps the head of each
list: with k = 60 the first and tenth places differ by 13 %, so agreement across lists beats one list's top spot.
"""

from __future__ import annotations

import math
from collections.abc import Hashable, Sequence
from typing import TypeVar

K = TypeVar("K", bound=Hashable)


def rrf(
    rankings: Sequence[Sequence[K]], k: float = 60, weights: Sequence[float] | None = None
) -> list[tuple[K, float]]:
    """Fuse rankings (best first) into ``[(item, score)]``, best first.

    - An item counts once per list, at its best (first) place there; a repeat lower in the same list adds nothing.
    - Ties (equal scores) keep the order of first appearance, reading the lists in the order given, each from
      its top. Scores are exact sums (``math.fsum``), so the same contributions always give the same float
      whatever the order of the lists.
    - ``weights`` scale each list's contributions (default 1 each); a weight of 0 keeps the list's items in the
      result (at the tie-break position) without moving them.
    """
    if k < 0 or not math.isfinite(k):
        raise ValueError(f"k must be a finite number >= 0 (got {k})")
    if weights is None:
        weights = [1.0] * len(rankings)
    if len(weights) != len(rankings):
        raise ValueError(f"got {len(weights)} weights for {len(rankings)} rankings")
    for w in weights:
        if w < 0 or not math.isfinite(w):
            raise ValueError(f"weights must be finite and >= 0 (got {w})")
    parts: dict[K, list[float]] = {}
    for ranking, weight in zip(rankings, weights, strict=True):
        seen: set[K] = set()
        for rank, item in enumerate(ranking, start=1):
            if item in seen:
                continue
            seen.add(item)
            parts.setdefault(item, []).append(weight / (k + rank))
    scored = [(item, math.fsum(contributions)) for item, contributions in parts.items()]
    order = sorted(range(len(scored)), key=lambda i: (-scored[i][1], i))
    return [scored[i] for i in order]
