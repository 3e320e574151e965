"""Short-term decay: older blocks are shown at shorter views.

age = ready blocks of the same session sealed after the block's anchor; weight = exp(-λ·age).
With λ = 0.30 and an L5 anchor: age 0–1 → L5, 2 → L4, 3–4 → L3, 5–6 → L2, 7–8 → L1, 9+ → L0.
"""

from __future__ import annotations

import math

# (weight strictly above, levels dropped from the anchor level)
_BANDS: tuple[tuple[float, int], ...] = ((0.7, 0), (0.5, 1), (0.3, 2), (0.15, 3), (0.08, 4))


def weight(age: int, lam: float) -> float:
    return math.exp(-lam * max(0, age))


def levels_dropped(w: float) -> int:
    for threshold, dropped in _BANDS:
        if w > threshold:
            return dropped
    return 5


def display_level(anchor_level: int, age: int, lam: float, ready: bool) -> int:
    """Level at which a block is shown now. Pending blocks have no L0–L2 yet, so they never decay."""
    if not ready:
        return max(3, min(5, anchor_level))
    return max(0, min(5, anchor_level - levels_dropped(weight(age, lam))))
