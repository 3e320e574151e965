"""One-hop graph expansion in activation and memory_search_graph: the neighbours of matched nodes over current facts,
ranked after every direct match, inside the same 4-node / 900-token budget (tests/fixtures/recall/multihop.json:
questions whose answer sits one node beyond what they name). Real sidecar, real SQLite."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from stratagate.activation import nodes
from support.sidecar import SidecarClient

NS = "project:shop:0123456789abcdef"
CORPUS = json.loads((Path(__file__).parent / "fixtures" / "recall" / "multihop.json").read_text("utf-8"))


@pytest.fixture
def expansion() -> Iterator[None]:
    yield
    nodes.EXPAND = True  # the shipped default, whatever a test switched


@pytest.fixture
async def graph(tmp_path: Path, expansion: None) -> AsyncIterator[SidecarClient]:
    client = await SidecarClient.start(tmp_path / "memory.db")
    for item in CORPUS["memory"]:
        await client.tool(NS, "s1", "memory_remember", {"text": item["text"], "claims": item["claims"]})
    await client.settled(failed=True)
    yield client
    await client.close()


async def render(client: SidecarClient, query: str, expand: bool) -> dict[str, Any]:
    nodes.EXPAND = expand  # the sidecar runs in this process: the switch the bench uses
    return await client.call("activation.render", {"namespace": NS, "session": "s2", "query": query})


def shown_facts(text: str) -> list[str]:
    graph_part = text.split(nodes.NODES_TITLE, 1)[-1] if nodes.NODES_TITLE in text else ""
    return [line.removeprefix("│ ").split(" (since ")[0].casefold() for line in graph_part.splitlines()
            if line.startswith("│ ")]


async def test_neighbours_answer_multi_hop_questions_after_the_direct_matches(graph: SidecarClient):
    off_hits = on_hits = 0
    for q in CORPUS["questions"]:
        off = await render(graph, q["question"], expand=False)
        on = await render(graph, q["question"], expand=True)
        # The direct matches keep their places; neighbours only come after them, in the same budget.
        assert on["node_ids"][: len(off["node_ids"])] == off["node_ids"], q["question"]
        assert len(on["node_ids"]) <= 4 and on["longterm_tokens"] <= 900
        off_hits += q["answer"].casefold() in shown_facts(off["text"])  # tool names are stored lower-cased
        on_hits += q["answer"].casefold() in shown_facts(on["text"])
    # Every answer is shown with the hop; without it, those two nodes away from what the question names are not.
    assert on_hits == len(CORPUS["questions"]) and off_hits < on_hits


async def test_search_graph_lists_neighbours_below_every_match(graph: SidecarClient):
    for q in CORPUS["questions"]:
        args = {"query": q["question"], "limit": 10}
        off = (await graph.tool(NS, "s2", "memory_search_graph", args | {"expand": False}))["hits"]
        on = (await graph.tool(NS, "s2", "memory_search_graph", args))["hits"]
        assert [h["id"] for h in on[: len(off)]] == [h["id"] for h in off]
        direct = {h["id"] for h in off}
        neighbours = on[len(off):]
        assert len(on) <= 10 and len({h["id"] for h in on}) == len(on)
        for hit in neighbours:
            assert hit["via"] in direct and "via" not in off[0]
            assert hit["score"] < min(h["score"] for h in off)
        assert all(h.get("via") is None for h in on[: len(off)])


async def test_only_current_facts_lead_to_neighbours(tmp_path: Path, expansion: None):
    client = await SidecarClient.start(tmp_path / "memory.db")
    try:
        claim = {"subject": "Atlas", "subject_kind": "project", "predicate": "uses", "object_kind": "tool"}
        old = await client.tool(NS, "s1", "memory_remember", {"text": "Atlas builds with webpack.",
                                                              "claims": [claim | {"object": "webpack"}]})
        await client.tool(NS, "s1", "memory_remember", {"text": "Atlas builds with vite now.",
                                                        "supersedes": [old["id"]],
                                                        "claims": [claim | {"object": "vite"}]})
        await client.tool(NS, "s1", "memory_remember", {"text": "Atlas is owned by Quinn.", "claims": [
            {"subject": "Quinn", "subject_kind": "person", "predicate": "works_on", "object": "Atlas",
             "object_kind": "project"}]})
        await client.settled(failed=True)
        found = (await client.tool(NS, "s2", "memory_search_graph", {"query": "Quinn", "limit": 10}))["hits"]
        names = [h["name"] for h in found]
        assert names[0] == "Quinn" and "Atlas" in names
        assert "webpack" not in names  # the superseded fact leads nowhere
    finally:
        await client.close()


@settings(max_examples=4, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(st.text(alphabet=st.characters(codec="utf-8", exclude_categories=["Cs", "Cc"]), min_size=1,
                        max_size=600), min_size=1, max_size=7))
async def test_the_hop_stays_inside_four_nodes_and_900_tokens(tmp_path_factory: pytest.TempPathFactory,
                                                              values: list[str]):
    client = await SidecarClient.start(tmp_path_factory.mktemp("hop") / "memory.db")
    try:
        # Zephyr (codename Nimbus: only Zephyr's own index holds that word) links to many tools; each tool carries a
        # long value: the neighbours compete for what the match leaves.
        await client.tool(NS, "s1", "memory_remember", {"text": "Zephyr's codename is Nimbus.", "claims": [
            {"subject": "Zephyr", "subject_kind": "project", "predicate": "codename", "value": "Nimbus"}]})
        for i, value in enumerate(values):
            tool = f"tool{i}"
            await client.tool(NS, "s1", "memory_remember", {"text": f"Zephyr uses {tool}.", "claims": [
                {"subject": "Zephyr", "subject_kind": "project", "predicate": "uses", "object": tool,
                 "object_kind": "tool"}]})
            await client.tool(NS, "s1", "memory_remember", {"text": f"{tool} notes recorded.", "claims": [
                {"subject": tool, "subject_kind": "tool", "predicate": "notes", "value": value[:300]}]})
        await client.settled(failed=True)
        direct = (await client.tool(NS, "s2", "memory_search_graph", {"query": "Nimbus", "expand": False}))["hits"]
        assert [h["name"] for h in direct] == ["Zephyr"]
        out = await client.call("activation.render", {"namespace": NS, "session": "s2", "query": "Nimbus"})
        assert len(out["node_ids"]) <= 4 and out["longterm_tokens"] <= 900
        assert out["node_ids"][0] == direct[0]["id"]  # the match first, its neighbours in what is left
        assert len(out["node_ids"]) > 1 or len(values[0][:300]) > 100  # a short neighbour always fits
        hits = (await client.tool(NS, "s2", "memory_search_graph", {"query": "Nimbus", "limit": 3}))["hits"]
        assert len(hits) == min(3, 1 + len(values)) and hits[0]["id"] == direct[0]["id"]
        assert all(h["via"] == direct[0]["id"] for h in hits[1:])
    finally:
        await client.close()
