"""Team memory on a real PostgreSQL server: two machines (two memories with their own SQLite files, as two DSH
homes) share one project's team decisions through the server — found, recalled, superseded, forgotten, erased and
disputed across them — while transcripts stay on the machine that captured them, and nothing is lost or doubled
when the server goes away and comes back.

Each machine's sync runs its own loop; ``TeamSync.round()`` waits for a whole round that began after the call (push,
then pull to the server's head), so a test orders "A pushed" before "B pulled" without timing."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import asyncpg
import pytest

from stratagate import Memory
from stratagate.config import Settings
from stratagate.errors import RpcError
from stratagate.events import team
from stratagate.safety.dsn import shown
from stratagate.team import server
from stratagate.team.sync import TeamSync
from support.postgres import PostgresServer
from support.sidecar import REPO


class Machine:
    def __init__(self, memory: Memory):
        self.memory = memory

    @property
    def sync(self) -> TeamSync:
        sync = self.memory._app.team
        assert sync is not None
        return sync

    async def find(self, query: str, **filters: Any) -> list[Any]:
        return list((await self.memory.search(query, **filters)).hits)

    async def recalled(self, prompt: str) -> str:
        return (await self.memory.recall(prompt)).text


def settings(tmp_path: Path, name: str, dsn: str | None, member: str | None) -> Settings:
    return Settings(db=tmp_path / name / "memory.db", model_route="none", team_dsn=dsn, team_member=member,
                    team_poll_seconds=3600)  # a round only when woken: by a local change, a notification or a test


async def machine(tmp_path: Path, name: str, dsn: str | None, member: str | None) -> Machine:
    folder = tmp_path / name / "work" / "shop"  # the same project folder name on both machines: one team project
    folder.mkdir(parents=True)
    return Machine(await Memory.open(workspace=folder, settings=settings(tmp_path, name, dsn, member)))


@pytest.fixture
async def pair(tmp_path: Path, team_dsn: str) -> AsyncIterator[tuple[Machine, Machine]]:
    a = await machine(tmp_path, "a", team_dsn, "alice")
    b = await machine(tmp_path, "b", team_dsn, "bob")
    try:
        yield a, b
    finally:
        await a.memory.close()
        await b.memory.close()


async def exchange(*machines: Machine) -> None:
    """Each pushes and pulls, twice over: every change made before is everywhere after."""
    async with asyncio.timeout(120):  # a sync that keeps failing fails the test, never hangs it
        for _ in range(2):
            for m in machines:
                await m.sync.round()


async def test_a_team_decision_on_a_is_found_and_recalled_on_b(pair: tuple[Machine, Machine]) -> None:
    a, b = pair
    said = await a.memory.remember("We decided to deploy the shop with Helm charts on the staging cluster",
                                   type="decision", scope="team")
    assert said.scope == "team" and said.member == "alice"
    await exchange(a, b)
    found = await b.find("Helm charts deploy")
    assert [e.title for e in found] == [said.title]
    assert found[0].scope == "team"
    text = await b.recalled("how do we deploy the shop?")
    assert "Helm charts" in text and '· team · "alice" ·' in text
    # A project memory stays on its machine.
    await a.memory.remember("The staging cluster password rotation is handled by Vault", type="fact")
    await exchange(a, b)
    assert await b.find("Vault rotation") == []


async def test_supersession_on_b_is_seen_on_a_and_forget_on_a_leaves_b(pair: tuple[Machine, Machine]) -> None:
    a, b = pair
    old = await a.memory.remember("We use npm for the shop's packages", type="decision", scope="team")
    await exchange(a, b)
    (on_b,) = await b.find("npm packages")
    new = await b.memory.remember("We switched from npm to pnpm for the shop's packages", type="change",
                                  scope="team", supersedes=[on_b.id])
    await exchange(a, b)
    got = await a.memory.get(old.id)
    assert got.status == "superseded"
    (current,) = await a.find("pnpm", include_inactive=False)
    assert current.title == new.title and current.scope == "team"
    # A forget on A: gone from B's recall and search.
    await a.memory.forget(current.id, reason="not decided after all")
    await exchange(a, b)
    assert await b.find("pnpm") == []
    assert "pnpm" not in await b.recalled("which package manager does the shop use?")


async def test_an_erase_on_a_removes_the_text_from_b_and_from_the_server(
    pair: tuple[Machine, Machine], team_dsn: str
) -> None:
    a, b = pair
    said = await a.memory.remember("The shop's payment provider is Quokkapay since the March review",
                                   type="decision", scope="team")
    await exchange(a, b)
    assert len(await b.find("Quokkapay")) == 1
    async with pg(team_dsn) as conn:  # the server's own full-text search finds it too
        assert [r["title"] for r in await server.search(conn, "shop", "quokkapay", 5)] == [said.title]
    await a.memory.forget(said.id, erase=True)
    # B pulls the erase and a later memory in one batch: the erase runs on its own, the rest after it.
    later = await a.memory.remember("The shop's refunds go through the support desk", type="decision", scope="team")
    await exchange(a, b)
    assert [e.title for e in await b.find("refunds support desk")] == [later.title]
    assert await b.find("Quokkapay") == [] and "Quokkapay" not in await b.recalled("payment provider")
    assert "Quokkapay" not in await server_text(team_dsn)
    async with pg(team_dsn) as conn:
        assert await server.search(conn, "shop", "quokkapay", 5) == []


async def test_concurrent_changes_of_one_decision_become_a_dispute_on_both(
    pair: tuple[Machine, Machine], postgres_server: PostgresServer
) -> None:
    a, b = pair
    base = await a.memory.remember("The shop's database is MySQL 8", type="decision", scope="team")
    await exchange(a, b)
    (on_b,) = await b.find("MySQL")
    postgres_server.stop()  # both change it while neither can reach the server
    try:
        await a.memory.remember("The shop moved its database to PostgreSQL 16", type="change", scope="team",
                                supersedes=[base.id])
        await b.memory.remember("The shop moved its database to MariaDB 11", type="change", scope="team",
                                supersedes=[on_b.id])
        assert (await status(a))["outbox"] == 2 and (await status(b))["outbox"] == 2
    finally:
        postgres_server.start()
    await exchange(a, b)
    assert (await a.memory.get(base.id)).status == "disputed"
    assert (await b.memory.get(on_b.id)).status == "disputed"
    assert "DISPUTED" in await b.recalled("which database does the shop use?")
    # Nothing lost, nothing doubled: each machine has both successors once, and the outboxes are empty.
    for m in (a, b):
        titles = sorted(e.title for e in await m.find("shop moved its database") if "moved" in e.title)
        assert titles == ["The shop moved its database to MariaDB 11", "The shop moved its database to PostgreSQL 16"]
        assert (await status(m))["outbox"] == 0


async def test_while_the_server_is_down_memory_works_and_the_outbox_drains_once_it_is_back(
    pair: tuple[Machine, Machine], postgres_server: PostgresServer, team_dsn: str
) -> None:
    a, b = pair
    postgres_server.stop()
    try:
        for i in range(5):
            await a.memory.remember(f"Team rule {i}: review every migration {i} twice", type="decision", scope="team")
            await b.memory.remember(f"Team note {i}: the release train {i} leaves on Thursday", type="decision",
                                    scope="team")
        assert len(await a.find("review migration twice")) == 5  # local memory works offline
        st = await status(a)
        assert st["outbox"] == 5
    finally:
        postgres_server.start()
    await exchange(a, b)
    for m in (a, b):
        assert len(await m.find("review migration twice")) == 5
        assert len(await m.find("release train Thursday")) == 5
    async with pg(team_dsn) as conn:
        assert await conn.fetchval("SELECT count(*) FROM team_events") == 10
        assert await conn.fetchval("SELECT count(DISTINCT op_id) FROM team_changes") == await conn.fetchval(
            "SELECT count(*) FROM team_changes")


async def test_a_push_repeated_after_a_crash_is_stored_once(tmp_path: Path, team_dsn: str) -> None:
    """The crash between the server's commit and the local delete: the same operations pushed again."""
    a = await machine(tmp_path, "a", team_dsn, "alice")
    try:
        await a.sync.stop()  # no loop: this test pushes by hand
        await a.memory.remember("Deploys freeze on Fridays", type="decision", scope="team")
        app = a.memory._app
        ops = await team.pending(app.db.reader, 100)
        me = server.Identity("alice", (await team.state(app.db.reader)).replica)
        async with pg(team_dsn) as conn:
            from stratagate.team import server_schema

            await server_schema.ensure(conn)
            await server.push(conn, me, [(op, "shop") for op in ops])
            await server.push(conn, me, [(op, "shop") for op in ops])
            assert await conn.fetchval("SELECT count(*) FROM team_changes") == len(ops) == 1
            assert await conn.fetchval("SELECT count(*) FROM team_events") == 1
    finally:
        await a.memory.close()


async def test_no_transcript_or_block_text_reaches_the_server(pair: tuple[Machine, Machine], team_dsn: str) -> None:
    a, b = pair
    await a.memory.capture_turn("Please look at the flamingoquartz module before lunch",
                                "I looked at flamingoquartz: it parses the cart totals.")
    await a.memory.remember("We decided the cart totals are computed in cents", type="decision", scope="team")
    await exchange(a, b)
    text = await server_text(team_dsn)
    assert "computed in cents" in text and "flamingoquartz" not in text and "before lunch" not in text


async def test_team_scope_without_a_team_database_is_refused_clearly(tmp_path: Path) -> None:
    a = await machine(tmp_path, "a", None, "alice")
    try:
        with pytest.raises(RpcError, match="scope 'team' needs a team database"):
            await a.memory.remember("We deploy on Mondays", type="decision", scope="team")
        assert await a.find("deploy Mondays") == []
    finally:
        await a.memory.close()


async def test_a_project_that_shares_by_default_makes_its_decisions_team_memory(pair: tuple[Machine, Machine]) -> None:
    a, b = pair
    app = a.memory._app
    async with app.db.transaction() as conn:
        from stratagate.storage import lookup

        ns = await lookup.ensure_namespace(conn, a.memory.namespace)
        await team.set_namespace_team(conn, ns, default=True)
    decision = await a.memory.remember("We decided to pin Node 20 for the shop", type="decision")
    fact = await a.memory.remember("The shop's repository has 40 packages", type="fact")
    assert decision.scope == "team" and fact.scope == "project"
    await exchange(a, b)
    assert [e.title for e in await b.find("pin Node")] == [decision.title]
    assert await b.find("repository packages") == []


async def test_a_bad_server_is_reported_without_its_password(tmp_path: Path, postgres_server: PostgresServer) -> None:
    dsn = postgres_server.dsn("postgres").replace("stratagate@", "stratagate:hunter2secretpw@").replace(
        "/postgres", "/no_such_team_db")
    a = await machine(tmp_path, "a", dsn, "alice")
    try:
        said = await a.memory.remember("We review pull requests within a day", type="decision", scope="team")
        assert said.scope == "team"
        st = await status(a)
        assert st["outbox"] == 1 and st["server"] == shown(dsn) and "hunter2" not in st["server"]
        info = await a.memory._app.info()
        assert "hunter2secretpw" not in json.dumps(info)
    finally:
        await a.memory.close()


def test_a_dsn_is_shown_without_secrets() -> None:
    assert shown("postgresql://team:s3cr3t@db.example.com:5433/shop?sslmode=require&password=x") == (
        "postgresql://team@db.example.com:5433/shop")
    assert shown("not a dsn") == "(unreadable DSN)"


# --- helpers -------------------------------------------------------------------------------------------------------


async def status(m: Machine) -> dict[str, Any]:
    from stratagate.team.sync import status_of

    return await status_of(m.memory._app.db.reader)


class pg:
    def __init__(self, dsn: str):
        self.dsn = dsn

    async def __aenter__(self) -> Any:
        self.conn = await asyncpg.connect(self.dsn)
        return self.conn

    async def __aexit__(self, *exc: object) -> None:
        await self.conn.close()


async def server_text(dsn: str) -> str:
    """Every row of every table of the server's public schema, as text."""
    async with pg(dsn) as conn:
        rows = await conn.fetch("SELECT tablename FROM pg_tables WHERE schemaname = 'public'")
        tables = [r["tablename"] for r in rows]
        out = []
        for t in tables:
            out += [str(dict(r)) for r in await conn.fetch(f'SELECT * FROM "{t}"')]
    return "\n".join(out)


async def test_team_status_command_shows_the_outbox_and_the_lag(
    pair: tuple[Machine, Machine], team_dsn: str, tmp_path: Path
) -> None:
    a, b = pair
    await a.sync.stop()  # A's changes stay in its outbox
    await a.memory.remember("Every release gets a changelog entry", type="decision", scope="team")
    await b.memory.remember("Hotfixes go through the release branch", type="decision", scope="team")
    await b.sync.round()  # on the server; A has not pulled it
    env = {k: v for k, v in os.environ.items() if not k.startswith("STRATAGATE_")}
    env |= {"PYTHONPATH": str(REPO / "sidecar"), "STRATAGATE_TEAM_DSN": team_dsn, "STRATAGATE_TEAM_MEMBER": "alice"}
    db = str(a.memory._app.settings.db)
    out = await asyncio.to_thread(subprocess.run, [sys.executable, "-m", "stratagate", "team", "status", "--db", db,
                                  "--json"], env=env, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    st = json.loads(out.stdout)
    assert st["enabled"] and st["member"] == "alice" and st["outbox"] == 1 and st["behind"] == {"shop": 1}
    text = (await asyncio.to_thread(subprocess.run, [sys.executable, "-m", "stratagate", "team", "status", "--db", db],
                                    env=env, capture_output=True, text=True, timeout=120)).stdout
    assert "outbox: 1 change(s) not pushed" in text and "shop: 1 server change(s) not pulled yet" in text


def test_team_share_command_sets_the_project_default(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("STRATAGATE_")}
    env["PYTHONPATH"] = str(REPO / "sidecar")
    db = str(tmp_path / "memory.db")
    base = [sys.executable, "-m", "stratagate", "team"]
    out = subprocess.run([*base, "share", "--db", db, "--namespace", "project:shop:0123456789abcdef", "--json"],
                         env=env, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout) == {"namespace": "project:shop:0123456789abcdef", "team_default": True,
                                      "team_project": "shop"}
    out = subprocess.run([*base, "unshare", "--db", db, "--namespace", "project:shop:0123456789abcdef",
                          "--project", "shop-team"], env=env, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0 and "kept in the project" in out.stdout and "team project shop-team" in out.stdout


async def test_a_round_that_fails_midway_does_not_hold_up_the_next_wait(tmp_path: Path, team_dsn: str) -> None:
    """A round cut off by the server going away never completes; ``round()`` asked afterwards waits for the next
    round that does (not for one more than will ever run: that hung a CI run)."""
    from stratagate.storage.db import Database

    failed = asyncio.Event()

    class FailsOnce(TeamSync):
        async def sync_once(self, conn: Any) -> dict[str, int]:
            if not failed.is_set():
                failed.set()
                raise ConnectionError("the server went away mid-round")
            return await super().sync_once(conn)

    db = Database(tmp_path / "memory.db")
    await db.open()
    sync = FailsOnce(db, team_dsn, "alice", poll_seconds=3600)
    try:
        await sync.start()
        async with asyncio.timeout(120):
            await failed.wait()
            done = await sync.round()
        assert done >= 2 and (await team.state(db.reader)).last_error is None  # the success cleared the error
    finally:
        await sync.stop()
        await db.close()


async def test_the_graph_on_b_holds_the_facts_of_a_team_memory_and_follows_its_status(
    pair: tuple[Machine, Machine]
) -> None:
    """A team memory carries its claims: each machine projects them into its own graph, and a forget on A takes the
    fact out of B's current state (the graph follows its events' status)."""
    from stratagate.embedded.results import Evidence
    from stratagate.protocol.tool_results import SearchGraphResult

    class GraphSearch(SearchGraphResult, Evidence):
        """memory_search_graph's result with its evidence batch (as Memory's own results carry it)."""

    a, b = pair
    said = await a.memory.remember("The shop caches sessions in Redis", type="decision", scope="team", claims=[
        {"subject": "this project", "predicate": "uses", "object": "Redis", "object_kind": "tool"}])
    await exchange(a, b)
    await b.memory.settle()  # B's graph projection job

    async def redis_facts() -> list[str]:
        found = await b.memory._tool("memory_search_graph", {"query": "Redis"}, GraphSearch)
        return [f.statement for hit in found.hits for f in hit.current_state]

    assert any("redis" in s.lower() for s in await redis_facts())
    await a.memory.forget(said.id)
    await exchange(a, b)
    await b.memory.settle()
    assert not any("redis" in s.lower() for s in await redis_facts())


async def test_the_evidence_gate_and_use_receipts_work_on_a_team_memory_and_stay_on_the_machine(
    pair: tuple[Machine, Machine], team_dsn: str
) -> None:
    from stratagate.protocol.tool_results import AssessResult, RecordUseResult

    a, b = pair
    await a.memory.remember("We decided to ship the shop's mobile app through TestFlight first", type="decision",
                            scope="team")
    await exchange(a, b)
    async with pg(team_dsn) as conn:
        changes = await conn.fetchval("SELECT count(*) FROM team_changes")
    found = await b.memory.search("TestFlight mobile app")
    (hit,) = found.hits
    assessed = await b.memory._tool("memory_assess", {
        "batch_id": found.batch_id, "verdict": "sufficient", "evidence_refs": [hit.id],
        "fit": "It says how the mobile app ships.", "next_strategy": "answer"}, AssessResult)
    assert assessed.verdict == "sufficient" and assessed.evidence_refs == [hit.id]
    used = await b.memory._tool("memory_record_use", {"batch_id": found.batch_id, "evidence_refs": [hit.id]},
                                RecordUseResult)
    assert [c.ref for c in used.counted] == [hit.id] and [r.id for r in used.reinforced] == [hit.id]
    await exchange(a, b)
    async with pg(team_dsn) as conn:  # reinforcement stays per machine: nothing of it went to the server
        assert await conn.fetchval("SELECT count(*) FROM team_changes") == changes
    assert (await status(b))["outbox"] == 0


async def test_the_memory_page_turns_team_memory_on_and_never_stores_or_shows_a_password(
    tmp_path: Path, team_dsn: str
) -> None:
    """The page's Settings tab sets the team database and member (applied at once: the sync starts), refuses a DSN
    with a password (memory.db holds no credential), and shows and audits an environment DSN without its password."""
    a = await machine(tmp_path, "a", None, None)
    try:
        page = a.memory._call
        refused = None
        try:
            await page("page.settings.set", {"settings": {
                "team_member": "alice", "team_dsn": team_dsn.replace("stratagate@", "stratagate:pw123secret@")}})
        except RpcError as exc:
            refused = exc
        assert refused is not None and "never stores a password" in str(refused)
        with pytest.raises(RpcError, match="STRATAGATE_TEAM_MEMBER"):  # a database needs a member
            await page("page.settings.set", {"settings": {"team_dsn": team_dsn}})
        got = await page("page.settings.set", {"settings": {"team_dsn": team_dsn, "team_member": "alice"}})
        assert got["settings"]["team_dsn"] == team_dsn and got["settings"]["team_member"] == "alice"
        assert a.memory._app.team is not None  # on without a restart
        said = await a.memory.remember("We decided to keep the shop's API versioned by date", type="decision",
                                       scope="team")
        await a.sync.round()
        async with pg(team_dsn) as conn:
            assert await conn.fetchval("SELECT count(*) FROM team_events") == 1
        # Reset from the page: team memory is off again, and the decision stays a team memory here.
        off = await page("page.settings.set", {"settings": {"team_dsn": None, "team_member": None}})
        assert off["settings"]["team_dsn"] is None and a.memory._app.team is None
        assert (await a.memory.get(said.id)).scope == "team"
    finally:
        await a.memory.close()
    # A DSN with a password from the environment: the page and the audit show it without.
    secret_dsn = team_dsn.replace("stratagate@", "stratagate:pw123secret@")
    b = await machine(tmp_path, "b", secret_dsn, "bob")
    try:
        shown_now = await b.memory._call("page.settings.get", {})
        assert "pw123secret" not in json.dumps(shown_now) and shown_now["settings"]["team_dsn"] == shown(secret_dsn)
        await b.memory._call("page.settings.set", {"settings": {"team_member": "bobby"}})
        audit = await b.memory._app.db.reader.execute_fetchall("SELECT before, after FROM audit_log")
        assert "pw123secret" not in json.dumps([tuple(r) for r in audit])
        assert b.memory._app.team is not None and b.memory._app.team.member == "bobby"
    finally:
        await b.memory.close()
