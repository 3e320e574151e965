"""Team memory between two real sidecar processes (``stratagate serve``, each with its own database as two DSH homes
have) and one real PostgreSQL server: what one remembers, the other's search and recall return; and neither a
server outage while both write nor a sidecar killed with SIGKILL in the middle of its push loses or doubles a
change."""

from __future__ import annotations

import asyncio
import sqlite3
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import asyncpg

from support.postgres import PostgresServer
from support.sidecar import SidecarClient

DEADLINE_S = 120  # a bound on a wait for a condition, never a measured time (bench/bench_team.py measures)
OUTAGE_S = 60  # how long the server is down while both sidecars write


async def start(tmp_path: Path, name: str, dsn: str, member: str) -> tuple[SidecarClient, str]:
    """A sidecar process for ``member`` and its session's namespace: the folder ``.../<name>/work/shop``, so both
    machines' namespaces are the team project ``shop`` though their paths differ."""
    folder = tmp_path / name / "work" / "shop"
    folder.mkdir(parents=True, exist_ok=True)
    env = {"STRATAGATE_TEAM_DSN": dsn, "STRATAGATE_TEAM_MEMBER": member, "STRATAGATE_MODEL_ROUTE": "none"}
    client = await SidecarClient.start(tmp_path / name / "memory.db", env=env, process=True)
    found = await client.call("namespace.for_session", {"mode": "project", "session": "s1", "cwd": str(folder)})
    return client, found["namespace"]


async def until(client: SidecarClient, check: Callable[[], Awaitable[Any]]) -> Any:
    """``check()`` once it is truthy, asked again after each message from ``client`` (a memory pulled from the team
    server is projected into the graph by a job, and each finished job is a ``jobs.changed`` notification), within
    DEADLINE_S (then the test fails)."""
    async with asyncio.timeout(DEADLINE_S):
        while True:
            seen = len(client.notifications)
            if value := await check():
                return value
            await client.wait_for(lambda seen=seen: len(client.notifications) > seen, timeout=DEADLINE_S)


def local_team_events(db: Path) -> list[str]:
    with sqlite3.connect(f"file:{db}?mode=ro", uri=True) as conn:
        return [r[0] for r in conn.execute("SELECT title FROM events WHERE team_member IS NOT NULL ORDER BY title")]


async def test_a_decision_remembered_on_one_sidecar_is_searched_and_recalled_on_the_other(
    tmp_path: Path, team_dsn: str
) -> None:
    a, ns_a = await start(tmp_path, "a", team_dsn, "alice")
    b, ns_b = await start(tmp_path, "b", team_dsn, "bob")
    try:
        said = await a.tool(ns_a, "s1", "memory_remember", {
            "text": "We decided the shop's search runs on OpenSearch 2", "type": "decision", "scope": "team"})
        assert said["scope"] == "team" and said["member"] == "alice"

        async def on_b() -> list[dict[str, Any]]:
            found = await b.tool(ns_b, "s1", "memory_search_events", {"query": "OpenSearch"})
            return found["hits"]

        (hit,) = await until(b, on_b)
        assert hit["scope"] == "team" and hit["member"] == "alice" and hit["title"] == said["title"]
        recall = await b.call("activation.render", {"namespace": ns_b, "session": "s2",
                                                    "query": "what does the shop's search run on?"})
        assert "OpenSearch 2" in recall["text"] and '· team · "alice" ·' in recall["text"]
        info = await b.call("system.info")
        assert info["team"]["enabled"] and info["team"]["member"] == "bob" and info["team"]["outbox"] == 0
    finally:
        await a.close()
        await b.close()


async def test_an_outage_and_a_sigkill_mid_push_lose_and_double_nothing(
    tmp_path: Path, team_dsn: str, postgres_server: PostgresServer
) -> None:
    a, ns_a = await start(tmp_path, "a", team_dsn, "alice")
    b, ns_b = await start(tmp_path, "b", team_dsn, "bob")
    many, few = 400, 20
    try:
        postgres_server.stop()  # both write while the server is down, for a minute
        stopped = asyncio.get_running_loop().time()
        for i in range(few):
            await b.tool(ns_b, "s1", "memory_remember", {
                "text": f"Bob's team rule {i}: the nightly job {i} must finish before six", "type": "decision",
                "scope": "team"})
        for i in range(many):
            await a.tool(ns_a, "s1", "memory_remember", {
                "text": f"Alice's team rule {i}: service s{i} owns its own schema", "type": "decision",
                "scope": "team"})
        paced = 0  # then one more on each side every second until the server has been down for OUTAGE_S
        while asyncio.get_running_loop().time() - stopped < OUTAGE_S:
            for client, ns, text in (
                (a, ns_a, f"Alice's offline note {paced}: the cache warmer c{paced} runs every hour"),
                (b, ns_b, f"Bob's offline note {paced}: ticket T-{paced} waits for the QA review"),
            ):
                await client.tool(ns, "s1", "memory_remember", {"text": text, "type": "decision", "scope": "team"})
            paced += 1
            await asyncio.sleep(1)  # the pace of the writes over the outage, not a wait for anything
        assert (await a.call("system.info"))["team"]["outbox"] == many + paced
        assert (await b.call("system.info"))["team"]["last_error"]  # it said the server was unreachable
        postgres_server.start()
        # A's push is under way (a batch of its outbox is committed on the server, which notifies): kill it there.
        listener = await asyncpg.connect(team_dsn)
        batch = asyncio.Event()
        await listener.add_listener("stratagate_team", lambda *_: batch.set())
        try:
            await a.call("namespace.for_session", {"mode": "project", "session": "s1", "cwd": str(tmp_path / "a"
                                                                                                  / "work" / "shop")})
            async with asyncio.timeout(DEADLINE_S):
                while True:
                    batch.clear()
                    at_kill = int(await listener.fetchval("SELECT count(*) FROM team_changes WHERE member = 'alice'"))
                    if at_kill:
                        break
                    await batch.wait()
        finally:
            await listener.close()
        await a.kill9()
        a, ns_a = await start(tmp_path, "a", team_dsn, "alice")

        total = many + few + 2 * paced
        for client, db in ((a, tmp_path / "a" / "memory.db"), (b, tmp_path / "b" / "memory.db")):
            await until(client, lambda db=db: asyncio.to_thread(lambda: len(local_team_events(db)) == total))
            titles = await asyncio.to_thread(local_team_events, db)
            assert len(set(titles)) == len(titles) == total  # nothing lost, nothing doubled
        conn = await asyncpg.connect(team_dsn)
        try:
            assert await conn.fetchval("SELECT count(*) FROM team_events") == total
            assert await conn.fetchval("SELECT count(*) FROM team_changes") == total  # each create stored once
        finally:
            await conn.close()
        assert (await a.call("system.info"))["team"]["outbox"] == 0
        assert 0 < at_kill <= many
    finally:
        if postgres_server.running is False:
            postgres_server.start()
        await a.close()
        await b.close()
