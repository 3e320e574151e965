"""Recall reads a node's current facts as plain rows (graph.read.current_fact_rows): the same facts, in the same order,
by the same rules as the validated read the graph tools use (graph.read.current_facts): current status, visible to
the caller's session, window holding now."""

from __future__ import annotations

from pathlib import Path

from stratagate.activation import nodes
from stratagate.graph import read
from stratagate.storage.db import Database
from stratagate.storage.lookup import namespace_key, session_key
from support.sidecar import SidecarClient

NS = "project:shop:0123456789abcdef"


async def _memory(path: Path) -> None:
    client = await SidecarClient.start(path)
    try:
        for text, session, scope in [
            ("We use npm.", "s1", "project"),
            ("We switched from npm to pnpm.", "s1", "project"),  # npm's fact superseded
            ("We use vitest.", "s1", "session"),  # only s1 sees it
            ("The API depends on redis.", "s2", "project"),
            ("The worker depends on redis.", "s2", "project"),  # redis: facts pointing at it (in-edges)
            ("The API depends on postgresql.", "s2", "project"),
            ("The API uses docker.", "s2", "project"),
        ]:
            await client.tool(NS, session, "memory_remember", {"text": text, "scope": scope})
    finally:
        await client.close()


async def test_plain_rows_are_the_current_facts_for_every_node_and_caller(tmp_path: Path):
    path = tmp_path / "memory.db"
    await _memory(path)
    db = Database(path)
    await db.open()
    try:
        async with db.transaction() as conn:  # windows the remembered texts do not give: not yet, and over
            first, second = [r[0] for r in await conn.execute_fetchall("SELECT id FROM graph_facts WHERE"
                             " status = 'active' AND scope = 'project' ORDER BY id LIMIT 2")]
            await conn.execute("UPDATE graph_facts SET valid_from = '2999-01-01T00:00:00.000Z' WHERE id = ?", (first,))
            await conn.execute("UPDATE graph_facts SET valid_to = '2000-01-01T00:00:00.000Z' WHERE id = ?", (second,))
        conn = db.reader
        ns = await namespace_key(conn, NS)
        assert ns is not None
        sessions = [None, await session_key(conn, ns, "s1"), await session_key(conn, ns, "s2")]
        nodes = [node for node, _ in await read.search(conn, ns, None, None, None, 1000)]
        assert len(nodes) >= 6
        seen = 0
        for node in nodes:
            for sess in sessions:
                rows = await read.current_fact_rows(conn, node.id, sess)
                facts = await read.current_facts(conn, node, sess)
                assert [(r.id, r.node_id, r.object_id, r.attribute, r.value, r.status, r.valid_from) for r in rows] == [
                    (f.id, f.node_id, f.object_id, f.attribute, f.value, f.status, f.valid_from) for f in facts
                ]
                assert read.neighbours(node.id, rows) == read.neighbours(node.id, facts)
                seen += len(rows)
        assert seen > 0
        for sess in sessions:  # many nodes in one statement: each node's list as read alone (a fact linking two of
            together = await read.current_fact_rows_of(conn, [node.id for node in nodes], sess)  # them in both)
            assert together == {node.id: await read.current_fact_rows(conn, node.id, sess) for node in nodes}
            assert any(r.object_id in together for rows in together.values() for r in rows)
        ids = {r.id for node in nodes for r in await read.current_fact_rows(conn, node.id, sessions[1])}
        assert first not in ids and second not in ids  # a window that does not hold now hides its fact
    finally:
        await db.close()


async def test_a_node_shows_its_six_oldest_facts_and_the_hop_shows_only_the_rest(tmp_path: Path):
    """Recall renders FACTS_PER_NODE facts of a node, oldest first; a neighbour reached by the hop repeats none of
    them, so the neighbours linked by an unshown fact are the ones that appear (the others have nothing left)."""
    client = await SidecarClient.start(tmp_path / "memory.db")
    tools = ["redis", "postgresql", "kafka", "nginx", "docker", "vitest", "grafana", "sentry", "celery"]
    try:
        for tool in tools:
            claim = {"subject": "Zephyrpay", "subject_kind": "project", "predicate": "depends_on", "object": tool}
            await client.tool(NS, "s1", "memory_remember", {"text": f"Zephyrpay depends on {tool}.", "claims": [claim]})
        out = await client.call("activation.render", {"namespace": NS, "session": "s2",
                                                      "query": "what does Zephyrpay depend on?"})
    finally:
        await client.close()
    graph = out["text"].split(nodes.NODES_TITLE + "\n", 1)[1].split("\n\n", 1)[0].splitlines()
    assert nodes.FACTS_PER_NODE == 6
    assert graph[0].startswith("[") and graph[0].endswith('"Zephyrpay"]')
    assert graph[1:7] == [f"│ Zephyrpay depends on {tool}" for tool in tools[:6]]
    rest = graph[7:]
    assert [line for line in rest if line.startswith("│ ")] == [f"│ Zephyrpay depends on {t}" for t in tools[6:]]
    assert [line.rsplit('"', 2)[1] for line in rest if line.startswith("[")] == tools[6:]
    assert len(out["node_ids"]) == 4
