"""An event's shape for near-duplicate search: what ``events.store.near_same`` compares, computed once per event and
kept between passes (``event_shapes``), so a pass never tokenises an unchanged event again.

Two texts are near duplicates when they share the bucket (the same namespace, type, time status, scope, session for
session scope, field, numbers and negation) and ≥ 80 % of their words. Words are stored as short hashes (an erased
memory leaves no readable words behind). The prefix words of a shape, in one fixed global order, index it: a pair
with Jaccard ≥ t shares a word among the first |x| − ⌈t·|x|⌉ + 1 words of each (the prefix filter of set-similarity
joins; the order only changes how many candidates are read, never which pairs are found).
"""

from __future__ import annotations

import functools
import hashlib
import math
from dataclasses import dataclass
from typing import Any

from stratagate.events.store import NEAR_DUPLICATE, _shape

FIELDS = ("summary", "narrative")
MIN_WORDS = 3  # near_same needs three words on each side


@dataclass(frozen=True)
class Shape:
    field: int
    bucket: str
    words: frozenset[str]
    prefix: tuple[str, ...]

    @property
    def size(self) -> int:
        return len(self.words)


@functools.lru_cache(maxsize=1 << 16)
def _hash(word: str) -> str:
    return hashlib.blake2b(word.encode(), digest_size=6).hexdigest()


def group_key(row: Any) -> str:
    """The events that could have been one: namespace, type, time status, scope, and the session of session scope."""
    session = row["session_id"] if row["scope"] == "session" else None
    return f"{row['namespace_id']}|{row['type']}|{row['time_status']}|{row['scope']}|{session}"


def shapes(row: Any) -> list[Shape]:
    """The shapes of an event row (summary, narrative) that can have near duplicates (three words or more)."""
    out = []
    group = group_key(row)
    for field, name in enumerate(FIELDS):
        words, numbers, negated = _shape(row[name])
        if len(words) < MIN_WORDS:
            continue
        key = f"{group}|{field}|{int(negated)}|{' '.join(sorted(numbers))}"
        # Words with digits are in the bucket already (they filter nothing); longer words tend to be rarer.
        ordered = sorted(words, key=lambda w: (w in numbers, -len(w), w))
        keep = len(words) - math.ceil(NEAR_DUPLICATE * len(words)) + 1
        out.append(Shape(field, _hash(key), frozenset(_hash(w) for w in words),
                         tuple(_hash(w) for w in ordered[:keep])))
    return out


def size_bounds(size: int) -> tuple[int, int]:
    """Sizes a near duplicate can have: Jaccard ≥ t needs t·|a| ≤ |b| ≤ |a| / t."""
    return math.ceil(NEAR_DUPLICATE * size - 1e-9), math.floor(size / NEAR_DUPLICATE + 1e-9)


def jaccard(a: frozenset[str], b: frozenset[str]) -> float:
    union = len(a | b)
    return len(a & b) / union if union else 0.0


def near(a: frozenset[str], b: frozenset[str]) -> float | None:
    """The Jaccard of two shapes' words of one bucket when they are near duplicates, else None."""
    score = jaccard(a, b)
    return score if score >= NEAR_DUPLICATE else None
