"""A step's searches are bounded by what it says most specifically, not by how long it is: the human message and the
recent turns (whole assistant answers) each search at most ``relevance.STEP_TERMS`` terms, the most specific ones in
the order said; a query within the bound searches exactly what it always did."""

from __future__ import annotations

from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from stratagate.activation import relevance
from stratagate.activation.longterm import Step
from stratagate.events.store import _or_terms
from stratagate.text.specificity import weight
from stratagate.text.terms import fts_query

REPO = Path(__file__).resolve().parents[1]
WORDS = ["the", "and", "deploy", "service", "make", "time", "redis", "pnpm", "kubernetes", "zookeeper", "people",
         "work", "new", "good", "nestjs", "vite", "billing", "worker", "concurrency", "听说", "缓存", "数据库", "2026"]


@settings(max_examples=300, deadline=None)
@given(st.lists(st.sampled_from(WORDS) | st.text(max_size=12), max_size=80), st.integers(1, 20))
def test_at_most_the_limit_the_most_specific_in_the_order_said(words: list[str], limit: int):
    text = " ".join(words)
    every = _or_terms(fts_query(text) or "") or []
    kept = _or_terms(relevance.query_match(text, limit) or "") or []
    if len(every) <= limit:
        assert kept == every
        return
    assert len(kept) == limit and kept == [t for t in every if t in set(kept)]  # a subsequence: the order said
    dropped = [t for t in every if t not in set(kept)]
    assert min(weight(t) for t in kept) >= max(weight(t) for t in dropped)


def test_a_long_answer_in_the_recent_turns_searches_its_most_specific_terms():
    answer = (REPO / "docs" / "architecture.md").read_text(encoding="utf-8")[:20_000] + " zookeeper"
    step = Step.of(["what did we decide about the billing worker concurrency?", answer])
    human, recent = (_or_terms(m or "") or [] for m in step.matches)
    assert human == _or_terms(fts_query("what did we decide about the billing worker concurrency?") or "")
    assert len(recent) == relevance.STEP_TERMS < len(_or_terms(fts_query(answer) or "") or [])
    assert {"sidecar", "asyncio"} <= set(recent) and not {"the", "and", "make"} & set(recent)
    assert step.about == relevance.text_terms("what did we decide about the billing worker concurrency?")
