"""The Memory page's read routes (overview, jobs, sessions, blocks, block views, messages, changes, export), driven
over JSON-RPC ``page.request`` in a real sidecar, seeded through turn.capture and the memory tools (zero-model mode:
blocks and events by rule), and a host-route sidecar whose model calls the test holds or fails."""

from __future__ import annotations

import asyncio
import json
import re
import sqlite3
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from conftest import turn
from support.sidecar import SidecarClient

A, B = "alpha", "beta"
FACT = "The deploy bucket is named purple-otter-77."
ERASE_FACT = "The staging pager code is zebra-quartz-4471."
SECRET = "ghp_" + "Z8m2Qv7Lx4Rt9Kp1Nw6Yb3Hc5Jd0Fg2Se8Ua"


async def page(client: SidecarClient, path: str, expect: int = 200, **query: Any) -> Any:
    reply = await client.call(
        "page.request", {"method": "GET", "path": path, "query": {k: str(v) for k, v in query.items()}}, timeout=60
    )
    assert reply["status"] == expect, reply
    return reply["body"]


def zero_env() -> dict[str, str]:
    # No maintenance pass (due 60 s after a first start) commits behind the change polls' backs.
    return {"STRATAGATE_MODEL_ROUTE": "none", "STRATAGATE_DENSE": "off", "STRATAGATE_MAINTENANCE_INTERVAL_HOURS": "0"}


async def seed(client: SidecarClient) -> dict[str, Any]:
    """alpha: sessions s1 (5 turns, one with a tool call; 2 blocks + 1 open turn) and s2 (2 turns); a remembered fact
    restated in s1 and forgotten; another remembered, restated and erased. beta: one session of its own words."""
    for i in range(1, 5):
        extra: dict[str, Any] = {}
        if i == 2:
            extra["tools"] = [{"name": "shell", "call_id": "c2", "arguments": {"cmd": "ls build"},
                               "result": {"stdout": "app.js"}}]
        if i == 3:
            extra["user"] = f"Remember this: {FACT}"
        if i == 4:
            extra["user"] = f"Also note: {ERASE_FACT}"
        await client.call("turn.capture", turn(i, namespace=A, session="s1", **extra))
    await client.call("turn.capture", turn(5, namespace=A, session="s1"))
    for i in range(1, 3):
        await client.call("turn.capture", turn(i, namespace=A, session="s2"))
    for i in range(1, 3):
        await client.call("turn.capture", turn(i, namespace=B, session="b1", user=f"Beta only words betaword{i}."))
    await client.settled()
    kept = await client.tool(A, "s1", "memory_remember", {"text": FACT, "type": "fact"})
    erased = await client.tool(A, "s1", "memory_remember", {"text": ERASE_FACT, "type": "fact"})
    await client.tool(A, "s1", "memory_forget", {"id": kept["id"]})
    await client.tool(A, "s1", "memory_forget", {"id": erased["id"], "erase": True})
    await client.settled()
    return {"forgotten": kept["id"], "erased": erased["id"]}


@pytest.fixture
async def zero(tmp_path: Path) -> AsyncIterator[tuple[SidecarClient, dict[str, Any], Path]]:
    db = tmp_path / "memory.db"
    client = await SidecarClient.start(db, env=zero_env(), args=["--block-turns", "2"])
    try:
        yield client, await seed(client), db
    finally:
        await client.close()


def strings(value: Any) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        return [s for k, v in value.items() for s in (k, *strings(v))]
    if isinstance(value, list):
        return [s for v in value for s in strings(v)]
    return []


async def every_read(client: SidecarClient, namespace: str) -> list[Any]:
    """Every namespace-scoped read of the page, for one namespace."""
    out: list[Any] = [await page(client, "/sessions", namespace=namespace),
                      await page(client, "/jobs", namespace=namespace, limit=200)]
    for s in out[0]["sessions"]:
        blocks = await page(client, "/blocks", namespace=namespace, session=s["name"])
        out.append(blocks)
        for b in blocks["blocks"]:
            out.append(await page(client, "/block", namespace=namespace, id=b["id"], level=5))
    for fmt in ("json", "markdown"):
        out.append(await page(client, "/export", namespace=namespace, format=fmt))
    return out


async def test_overview_counts_each_namespace(zero: Any) -> None:
    client, _, db = zero
    body = await page(client, "/overview")
    assert body["model_mode"] == "none" and body["model_route"] == "none:rules"
    assert body["db_path"] == str(db) and body["storage"]["db_bytes"] > 0
    assert set(body["jobs"]) == {"queued", "running", "done", "failed", "scheduled"}
    assert body["jobs"]["failed"] == 0 and body["failed_jobs"] == []
    spaces = {n["name"]: n for n in body["namespaces"]}
    assert set(spaces) == {A, B}
    alpha = spaces[A]
    assert alpha["sessions"] == 2 and alpha["turns"] == 7
    assert alpha["blocks"]["ready"] + alpha["blocks"]["pending"] == 3
    assert alpha["events"]["forgotten"] >= 2
    assert spaces[B]["turns"] == 2 and spaces[B]["events"]["forgotten"] == 0
    assert alpha["last_turn_at"].startswith("2026-05-01T10:")
    jobs = await page(client, "/jobs", namespace=A, status="done", limit=2)
    assert len(jobs["jobs"]) == 2 and jobs["total"] >= 3
    assert all(j["status"] == "done" and j["namespace"] == A and j["id"].startswith("job_") for j in jobs["jobs"])
    assert (await page(client, "/jobs", 404, namespace="nowhere"))["error"].startswith("unknown namespace")
    bad = await page(client, "/jobs", 400, status="sleeping")
    assert bad["details"][0]["loc"] == ["status"]


async def test_sessions_blocks_and_views_equal_the_agent_tools(zero: Any) -> None:
    client, seeded, _ = zero
    sessions = (await page(client, "/sessions", namespace=A))["sessions"]
    assert [s["name"] for s in sessions] == ["s1", "s2"]  # s1's last turn (10:05) is newer than s2's (10:02)
    assert sessions[0]["turns"] == 5 and sessions[0]["blocks"] == {"ready": 2, "pending": 0}
    listed = await page(client, "/blocks", namespace=A, session="s1")
    assert listed["total"] == 2
    first, second = listed["blocks"]
    assert (first["first_turn"], first["last_turn"], second["first_turn"]) == (1, 2, 3)
    assert first["tool_records"] == 1 and second["tool_records"] == 0
    assert first["summary_source"] == "extractive" and first["title"]
    assert set(first["tokens"]) == {"0", "1", "2", "3", "4", "5"}
    page2 = await page(client, "/blocks", namespace=A, session="s1", limit=1, offset=1)
    assert [b["id"] for b in page2["blocks"]] == [second["id"]] and page2["total"] == 2
    for block in (first, second):
        for level in range(6):
            shown = await page(client, "/block", namespace=A, id=block["id"], level=level)
            agent = await client.tool(A, "s2", "memory_expand_block", {"id": block["id"], "level": level})
            assert shown["text"] == agent["view"], (block["id"], level)
            assert shown["level"] == level
    l5 = await page(client, "/block", namespace=A, id=first["id"], level=5)
    (record,) = l5["tool_records"]
    assert record == {"name": "shell", "call_id": "c2", "arguments": {"cmd": "ls build"},
                      "result": {"stdout": "app.js"}, "hidden": None}
    assert [m["role"] for m in l5["messages"]].count("tool") == 1
    assert (await page(client, "/block", namespace=A, id=first["id"], level=2)).get("messages") is None
    # The page only reads: viewing never re-anchors a block (no block.expanded by the user).
    export = json.loads((await page(client, "/export", namespace=A, format="json"))["content"])
    assert not [e for e in export["audit"] if e["action"] == "block.expanded" and e["actor"] == "user"]
    assert (await page(client, "/block", 400, namespace=A, id=first["id"], level=6))["details"]
    assert (await page(client, "/block", 400, namespace=A, id="evt_1", level=1))["error"].startswith("id must")
    assert (await page(client, "/blocks", 404, namespace=A, session="nope"))["error"]
    assert seeded


async def test_forgotten_and_erased_messages_are_hidden(zero: Any) -> None:
    client, seeded, _ = zero
    second = (await page(client, "/blocks", namespace=A, session="s1"))["blocks"][1]
    l5 = await page(client, "/block", namespace=A, id=second["id"], level=5)
    said = [m for m in l5["messages"] if m["role"] == "user"]
    assert len(said) == 2
    forgotten_msg, erased_msg = said
    assert forgotten_msg["hidden"] and seeded["forgotten"] in forgotten_msg["hidden"]
    assert "purple-otter" not in json.dumps(l5)
    assert erased_msg["content"] == "[erased]" and "zebra-quartz" not in json.dumps(l5)
    one = await page(client, "/message", namespace=A, id=forgotten_msg["id"], around=10)
    assert one["message"]["hidden"] == forgotten_msg["hidden"] and one["message"]["session"] == "s1"
    assert "purple-otter" not in json.dumps(one)
    turns = [m["turn"] for m in one["around"]]
    assert turns == sorted(turns) and all(m["session"] == "s1" for m in one["around"])
    assert len(one["around"]) >= 5  # up to 10 either side, in s1 only
    none = await page(client, "/message", namespace=A, id=forgotten_msg["id"], around=0)
    assert none["around"] == []
    assert (await page(client, "/message", 404, namespace=B, id=forgotten_msg["id"]))["error"]


async def test_export_json_round_trips_and_markdown_marks(zero: Any) -> None:
    client, seeded, _ = zero
    out = await page(client, "/export", namespace=A, format="json")
    assert out["filename"].startswith("stratagate-alpha-") and out["filename"].endswith(".json")
    doc = json.loads(out["content"])
    assert doc["format"] == "stratagate.namespace-export" and doc["namespace"]["name"] == A
    assert {s["name"] for s in doc["sessions"]} == {"s1", "s2"}
    exported = {e["id"]: e for e in doc["events"]}
    db_events = await page(client, "/overview")
    alpha = next(n for n in db_events["namespaces"] if n["name"] == A)
    assert len(exported) == sum(alpha["events"].values())  # every event is there
    assert exported[seeded["forgotten"]]["status"] == "forgotten"
    erased = exported[seeded["erased"]]
    assert erased["title"] == erased["summary"] == erased["narrative"] == "[erased]" and erased["quotes"] == []
    for b in doc["blocks"]:
        assert set(b["views"]) == {"0", "1", "2", "3", "4", "5"}
    messages = [m for s in doc["sessions"] for t in s["turns"] for m in t["messages"]]
    assert len(messages) == alpha["messages"]
    assert not [m for m in messages if "zebra-quartz" in json.dumps(m)]  # erased text is absent from every message
    assert any(m.get("forgotten") == seeded["forgotten"] for m in messages)
    assert doc["audit"] and all(isinstance(e["id"], int) for e in doc["audit"])
    md = await page(client, "/export", namespace=A, format="markdown")
    assert md["content_type"].startswith("text/markdown") and md["filename"].endswith(".md")
    text = md["content"]
    assert text.startswith("# StrataGate memory: alpha")
    assert f"_(forgotten)_ `{seeded['forgotten']}`" in text and "purple-otter" not in text
    assert "## Sessions" in text and "### s1" in text and "## Events" in text and "## Graph facts" in text
    assert (await page(client, "/export", 400, namespace=A, format="pdf"))["details"]


async def test_markdown_export_keeps_a_secrets_placeholder_whole(tmp_path: Path) -> None:
    """Markdown escaping must not touch a placeholder: escaped, the reply's redaction pass read it as a new secret
    and wrote "[secret:token#…]]"."""
    secret = "ghp_" + "Z9y8X7w6V5u4T3s2R1q0P9o8N7m6L5k4J3i2"
    client = await SidecarClient.start(tmp_path / "memory.db", env=zero_env(), args=["--block-turns", "1"])
    try:
        await client.call("turn.capture", turn(1, namespace=A, user=f"The *CI* token is {secret} [keep it]."))
        await client.settled()
        stored = (await page(client, "/message", namespace=A, id="msg_1"))["message"]["content"]
        (placeholder,) = re.findall(r"\[secret:[a-z0-9-]+#[0-9a-f]{4}\]", stored)
        text = (await page(client, "/export", namespace=A, format="markdown"))["content"]
        assert secret not in text and placeholder in text and f"{placeholder}]" not in text
        assert "\\*CI\\*" in text and "\\[keep it\\]" in text  # the rest is still escaped
    finally:
        await client.close()


async def test_namespace_isolation(zero: Any) -> None:
    client, _, _ = zero
    beta_text = " ".join(s for body in await every_read(client, B) for s in strings(body))
    alpha_text = " ".join(s for body in await every_read(client, A) for s in strings(body))
    assert "betaword" in beta_text and "betaword" not in alpha_text
    assert "topic1" in alpha_text and "topic1" not in beta_text
    assert "purple-otter" not in beta_text


@settings(max_examples=4, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(words=st.lists(st.from_regex(r"[a-z]{6,10}", fullmatch=True), min_size=2, max_size=2, unique=True))
def test_isolation_over_generated_namespaces(tmp_path_factory: pytest.TempPathFactory, words: list[str]) -> None:
    """Two namespaces with generated words: nothing of one shows in any read of the other."""
    first, second = (f"uniq{w}" for w in words)

    async def run() -> None:
        db = tmp_path_factory.mktemp("iso") / "memory.db"
        client = await SidecarClient.start(db, env=zero_env(), args=["--block-turns", "1"])
        try:
            for ns, word in (("one", first), ("two", second)):
                await client.call("turn.capture", turn(1, namespace=ns, session="s", user=f"We talk about {word}."))
            await client.settled()
            for ns, own, other in (("one", first, second), ("two", second, first)):
                text = " ".join(s for body in await every_read(client, ns) for s in strings(body))
                assert own in text and other not in text
        finally:
            await client.close()

    asyncio.run(run())


async def test_changes_long_poll(zero: Any) -> None:
    client, seeded, db = zero
    start = await page(client, "/changes", wait=0)
    assert start["changed"] == ["jobs", "blocks", "events", "graph", "imports", "audit", "evidence", "settings",
                                "namespaces"]
    cursor = start["cursor"]
    assert (await page(client, "/changes", since=cursor, wait=0)) == {"cursor": cursor, "changed": []}
    assert (await page(client, "/changes", since=cursor, wait=1)) == {"cursor": cursor, "changed": []}
    # A capture (sealing a block, queueing its summary job) while the poll waits.
    waiting = asyncio.ensure_future(page(client, "/changes", since=cursor, wait=25))
    (sealed,) = (await client.call("turn.capture", turn(6, namespace=A, session="s1")))["sealed_block_ids"]
    got = await waiting
    assert {"blocks", "jobs", "audit"} <= set(got["changed"]) and got["cursor"] != cursor
    await client.wait_notification(
        "jobs.changed", lambda n: n["kind"] == "event_extraction" and n["subject"] == sealed and n["status"] == "done")
    await client.settled()
    cursor = (await page(client, "/changes", wait=0))["cursor"]
    # A stale cursor returns at once with what changed since.
    ev = await client.tool(A, "s1", "memory_remember", {"text": "The release train leaves on Fridays."})
    await client.tool(A, "s1", "memory_forget", {"id": ev["id"]})
    got = await page(client, "/changes", since=cursor, wait=25)
    assert "events" in got["changed"] and "blocks" not in got["changed"]
    cursor = got["cursor"]
    # A commit by ANOTHER process (a sqlite3 connection) wakes a waiting poll: the stored settings area.
    waiting = asyncio.ensure_future(page(client, "/changes", since=cursor, wait=25))

    def other_process() -> None:
        conn = sqlite3.connect(db, isolation_level=None)
        try:
            conn.execute("INSERT INTO meta(key, value) VALUES ('page.test', 'x')")
        finally:
            conn.close()

    await asyncio.to_thread(other_process)
    got = await waiting
    assert got["changed"] == ["settings"]
    bad = await page(client, "/changes", 400, since="nonsense")
    assert "cursor" in bad["error"]
    assert seeded


async def test_pending_blocks_and_a_failed_job_with_a_secret(tmp_path: Path) -> None:
    """Host route: the first model call fails with a secret in its message (one attempt: the job fails), the
    others are held until the end, so the next block stays pending."""
    gate = asyncio.Event()
    calls = 0

    async def host(method: str, params: dict[str, Any]) -> Any:
        nonlocal calls
        calls += 1
        if calls == 1:
            raise RuntimeError(f"upstream refused token {SECRET}")
        await gate.wait()
        raise RuntimeError("released")

    env = {"STRATAGATE_DENSE": "off", "STRATAGATE_JOB_MAX_ATTEMPTS": "1", "STRATAGATE_MAINTENANCE_INTERVAL_HOURS": "0"}
    client = await SidecarClient.start(tmp_path / "memory.db", env=env, args=["--block-turns", "1"], host_handler=host)
    try:
        await client.call("turn.capture", turn(1, namespace=A, session="s1"))
        await client.wait_notification("jobs.changed", lambda p: p["status"] == "failed")
        await client.call("turn.capture", turn(2, namespace=A, session="s1"))
        await client.wait_for(lambda: len(client.host_requests) >= 2)  # the next model call is held
        body = await page(client, "/overview")
        assert SECRET not in json.dumps(body)
        (failed,) = body["failed_jobs"]
        assert failed["status"] == "failed" and failed["kind"] == "block_summary" and failed["error"]
        assert body["last_error"] and SECRET not in body["last_error"]
        listed = await page(client, "/jobs", status="failed")
        assert [j["id"] for j in listed["jobs"]] == [failed["id"]] and SECRET not in json.dumps(listed)
        blocks = (await page(client, "/blocks", namespace=A, session="s1"))["blocks"]
        assert [b["status"] for b in blocks] == ["ready", "pending"]
        pending = blocks[1]
        assert pending["title"] is None and set(pending["tokens"]) == {"3", "4", "5"}
        view = await page(client, "/block", namespace=A, id=pending["id"], level=1)
        assert view["level"] == 3 and "pending" in view["note"]
        agent = await client.tool(A, "s1", "memory_expand_block", {"id": pending["id"], "level": 3})
        assert view["text"] == agent["view"]
        sessions = (await page(client, "/sessions", namespace=A))["sessions"]
        assert sessions[0]["blocks"] == {"ready": 1, "pending": 1}
        # A job change names the jobs area (and not the memory areas).
        cursor = (await page(client, "/changes", wait=0))["cursor"]
        assert (await client.call("jobs.retry", {"id": failed["id"]}))["retried"] == [failed["id"]]
        got = await page(client, "/changes", since=cursor, wait=25)
        assert "jobs" in got["changed"] and "events" not in got["changed"] and "blocks" not in got["changed"]
        assert (await page(client, "/jobs", status="failed"))["total"] == 0
    finally:
        gate.set()
        await client.close()


async def test_database_committed_is_set_by_a_commit_not_by_a_rollback(tmp_path: Path) -> None:
    from stratagate.storage.db import Database

    db = Database(tmp_path / "memory.db")
    await db.open()
    try:
        before, event = db.revision, db.committed()
        with pytest.raises(RuntimeError):
            async with db.transaction() as conn:
                await conn.execute("INSERT INTO meta(key, value) VALUES ('page.a', '1')")
                raise RuntimeError("roll back")
        assert not event.is_set() and db.revision == before
        seen = await db.reader_data_version()
        async with db.transaction() as conn:
            await conn.execute("INSERT INTO meta(key, value) VALUES ('page.b', '1')")
        assert event.is_set() and db.revision == before + 1 and not db.committed().is_set()
        assert await db.reader_data_version() != seen  # the reader sees the writer's commit too
    finally:
        await db.close()


async def test_the_source_says_how_many_secrets_it_shows_as_placeholders(tmp_path: Path) -> None:
    """L5 and the page's messages are the source as captured, but a secret was redacted before it was stored: both
    count the placeholders, and a message without one says nothing of the kind."""
    token = "ghp_" + "4fJ9kQ2mZx7Lp0Wc3Vb8Nn1Rt6Yh5Ds2Ae9Kq"
    client = await SidecarClient.start(tmp_path / "memory.db", env=zero_env(), args=["--block-turns", "1"])
    try:
        await client.call("turn.capture", turn(1, namespace=A, user=f"Push with {token} please.",
                                               tools=[{"name": "shell", "call_id": "c1",
                                                              "arguments": {"cmd": f"git push https://{token}@x"},
                                                              "result": {"stdout": "ok"}}]))
        await client.call("turn.capture", turn(2, namespace=A, user="Nothing secret here."))
        await client.settled()
        blocks = (await client.tool(A, "s1", "memory_get_blocks", {}))["blocks"]
        with_secret = await client.tool(A, "s1", "memory_expand_block", {"id": blocks[0]["id"], "level": 5})
        plain = await client.tool(A, "s1", "memory_expand_block", {"id": blocks[1]["id"], "level": 5})
        assert token not in json.dumps(with_secret)
        assert with_secret["placeholders"] == 2 and "2 secrets redacted before storage" in with_secret["note"]
        assert plain["placeholders"] == 0 and "note" not in plain
        shown = await page(client, "/block", namespace=A, id=blocks[0]["id"], level=5)
        user, tool = (m for m in shown["messages"] if m["role"] in ("user", "tool"))
        assert (user["placeholders"], tool["placeholders"]) == (1, 1)
        other = await page(client, "/block", namespace=A, id=blocks[1]["id"], level=5)
        assert {m["placeholders"] for m in other["messages"]} == {0}
    finally:
        await client.close()
