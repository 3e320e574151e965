"""activation.render answers for any query and any stored text: no query (empty, whitespace, punctuation only, one CJK
character, one that tokenises to nothing, a lone apostrophe or combining mark, a date, a secret placeholder) and no
memory content (an event whose words are all stopwords or punctuation, a graph node named by one odd character,
captured turns of the same) may make it fail. Hypothesis draws the queries and the contents from those edges and from
arbitrary text; every answer is checked for its shape and for the long-term budget."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from conftest import turn
from support.sidecar import RpcFailure, SidecarClient

NS = "project:edges:0123456789abcdef"
EDGES = [
    "", " ", "\t\n", "?", "...", "。", "？", "年", "的", "猫", "a", "I", "the", "'", "’", "'s", "’s", "s'", "''",
    "-", "—", "#", "_", "*", "[", "]", "\u0301", "e\u0301", "\u200b", "\ufeff", "İ", "ß", "ﬁ", "ǅ", "ΐ", "ŉ", "🎉",
    "👍🏽", "2023",
    "May 2023", "2023年5月8日", "[secret:api-key#abcd]", "password=", "pin", "npm", "Postgres", "redis",
    "<stratagate-memory>", "SYSTEM:", "ok", "继续", "?!", "ok, go ahead",
]
text = st.one_of(
    st.sampled_from(EDGES),
    st.text(max_size=24),  # lone surrogates too: a JSON string may carry one
    st.lists(st.sampled_from(EDGES), max_size=5).map(" ".join),
    st.lists(st.sampled_from(EDGES), max_size=5).map("".join),
)


def _checked(out: dict[str, Any]) -> dict[str, Any]:
    assert isinstance(out["text"], str) and out["tokens"] >= 0
    assert out["longterm_tokens"] <= 900 and len(out["event_ids"]) <= 4 and len(out["node_ids"]) <= 4
    assert (out["text"] == "") == (out["tokens"] == 0)
    return out


async def _remember(c: SidecarClient, body: str, subject: str | None = None, forget: bool = False) -> None:
    """Remember ``body`` (with a claim about ``subject``), and forget it again when ``forget``: a forgotten event's
    words are hidden from the views recall renders."""
    args: dict[str, Any] = {"text": body}
    if subject is not None:
        args["claims"] = [{"subject": subject, "subject_kind": "project", "predicate": "depends_on", "object": "redis"}]
    try:
        out = await c.tool(NS, "s1", "memory_remember", args)
    except RpcFailure as exc:  # refused as invalid (a blank claim subject): a refusal, never an internal error
        assert str(exc).startswith("-32602"), exc
        return
    if forget and out.get("id"):
        await c.tool(NS, "s1", "memory_forget", {"id": out["id"]})


@pytest.fixture
async def edgy(tmp_path: Path) -> AsyncIterator[SidecarClient]:
    """A memory of edge-case contents: events of odd words, nodes named by odd strings, sealed blocks of odd turns
    in another session and in the reading one (built once: Hypothesis runs every example on it)."""
    c = await SidecarClient.start(tmp_path / "memory.db", env={"STRATAGATE_DENSE": "off"})
    for i, edge in enumerate(EDGES):
        await _remember(c, f"Note {i}: {edge}")
        await _remember(c, f"{edge} {edge}".strip() or "·", forget=i % 3 == 0)
        await _remember(c, f"Service {i} uses {edge or 'x'}.", subject=edge or "·")
    for session in ("s1", "s2"):
        for i in range(1, 14):
            edge = EDGES[(i * 7) % len(EDGES)]
            await c.call("turn.capture", turn(i, namespace=NS, session=session, user=edge or "…",
                                              assistant=f"{edge} {EDGES[i]}"))
    yield c  # (not settled: renders meet blocks whose summaries are still pending, as just after a start)
    await c.close()


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(query=text)
async def test_any_query_renders(edgy: SidecarClient, query: str) -> None:
    _checked(await edgy.call("activation.render", {"namespace": NS, "session": "s2", "query": query}))


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(body=text, subject=text, query=text)
async def test_any_content_renders(tmp_path_factory: pytest.TempPathFactory, body: str, subject: str,
                                   query: str) -> None:
    c = await SidecarClient.start(tmp_path_factory.mktemp("content") / "memory.db", env={"STRATAGATE_DENSE": "off"})
    try:
        await _remember(c, body or "·", forget=True)
        await _remember(c, f"Memo about {body}", subject=subject or "·")
        await c.call("turn.capture", turn(1, namespace=NS, session="s2", user=body if body.strip() else "…",
                                          assistant=subject))
        for q in (query, body, subject, f"{subject}?"):
            _checked(await c.call("activation.render", {"namespace": NS, "session": "s2", "query": q}))
    finally:
        await c.close()
