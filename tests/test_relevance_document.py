"""Recall judges a new candidate event relevant from the query terms its index document holds when those already
reach the floor (activation/relevance.py, ``event_relevant`` with a document): the same verdict as tokenising the
event's own words, for any query and any event (types, dates, times said in words, secret placeholders, CJK)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from stratagate.activation import relevance
from stratagate.activation.longterm import topic
from stratagate.events import store
from stratagate.events.models import EventRow
from stratagate.storage.db import Database
from support.sidecar import SidecarClient

NS = "project:relevance:0123456789abcdef"
TEXTS = [
    "We decided to move the billing worker from redis to postgres on 2024-03-05.",
    "Plan: migrate the checkout API to pnpm next Tuesday; Priya owns it.",
    "Priya prefers small pull requests for the checkout code (said in May 2023).",
    "The deploy of the ledger cron failed in production because the disk filled up.",
    "The staging token is sk-live-4f9a8b7c6d5e4f3a2b1c0d9e8f7a6b5c; rotate it after the audit.",
    "支付服务在2023年5月8日迁移到了新的数据库。",
    "Incident INC-4521: the search indexer was down for 42 minutes in eu-west.",
    "Marcus likes Postgres over MySQL for local work on the export service.",
]
WORDS = ["billing", "worker", "redis", "postgres", "postgresql", "decide", "decision", "plan", "migrate", "checkout",
         "pnpm", "priya", "prefer", "pull", "request", "deploy", "ledger", "cron", "production", "token", "secret",
         "staging", "audit", "支付", "数据库", "2023", "May 2023", "2024", "March", "Tuesday", "incident", "search",
         "indexer", "eu-west", "marcus", "mysql", "export", "event", "fact", "what", "the", "?", "年", "minutes",
         "worker", "code", "request", "small", "local", "service", "change", "preference", "down"]


@pytest.fixture
async def memory(tmp_path: Path) -> AsyncIterator[tuple[list[EventRow], dict[int, str]]]:
    """The events and their index documents (built once: Hypothesis runs every example on them)."""
    client = await SidecarClient.start(tmp_path / "memory.db", env={"STRATAGATE_DENSE": "off"})
    try:
        for text in TEXTS:
            await client.tool(NS, "s1", "memory_remember", {"text": text})
    finally:
        await client.close()
    db = Database(tmp_path / "memory.db")
    await db.open()
    try:
        events = [EventRow.from_row(r) for r in await db.reader.execute_fetchall(f"{store._SELECT} ORDER BY e.id")]
        relevance._EVENT_TERMS.clear()
        documents = await relevance.event_documents(db.reader, events)
    finally:
        await db.close()
    assert len(events) == len(TEXTS) and set(documents) == {ev.id for ev in events}
    yield events, documents


def _judged(about: frozenset[str], ev: EventRow, document: str) -> tuple[bool, bool]:
    """(the verdict from the document, whether the document alone decided it), as for a new candidate."""
    relevance._EVENT_TERMS.clear()
    verdict = relevance.event_relevant(about, ev, document)
    return verdict, not relevance._EVENT_TERMS


async def test_a_clear_match_is_decided_from_the_document_alone(memory: tuple[list[EventRow], dict[int, str]]):
    events, documents = memory
    assert _judged(topic(["why did we move the billing worker off redis?"]), events[0], documents[events[0].id]) == (
        True, True)
    assert _judged(topic(["what is the plan?"]), events[1], documents[events[1].id])[0] is False  # an everyday word


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(words=st.lists(st.sampled_from(WORDS), min_size=1, max_size=5))
async def test_the_index_document_gives_the_same_verdict_as_the_events_words(
    memory: tuple[list[EventRow], dict[int, str]], words: list[str]
):
    events, documents = memory
    about = topic([" ".join(words)])
    for ev in events:
        exact = relevance.relevant(about, relevance.text_terms(relevance.event_text(ev)))
        assert _judged(about, ev, documents[ev.id])[0] == exact, (words, ev.title)
