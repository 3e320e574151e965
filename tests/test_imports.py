"""Memory imports (import.run / remove / list / get and `stratagate import`) against a real sidecar and SQLite file."""

from __future__ import annotations

import asyncio
import hashlib
import json
import os
import sqlite3
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from conftest import model_env
from stratagate.events import store as events
from stratagate.imports.parsers import parse_text
from stratagate.imports.store import event_type, run_import
from stratagate.namespaces import ResolveParams, resolve
from stratagate.redact import redact
from stratagate.storage.db import Database
from support.model_server import ScriptedModelServer
from support.sidecar import REPO, RpcFailure, SidecarClient

NS = "proj"
FIXTURES = REPO / "tests" / "fixtures" / "imports"


async def tool(client: SidecarClient, name: str, args: dict[str, Any]) -> Any:
    return await client.tool(NS, "s1", name, args)


async def rpc_error(client: SidecarClient, method: str, params: dict[str, Any]) -> RpcFailure:
    with pytest.raises(RpcFailure) as err:
        await client.call(method, params)
    return err.value


def db_rows(db: Path, sql: str, params: tuple[Any, ...] = ()) -> list[dict[str, Any]]:
    """Read the sidecar's database directly (read-only; fine while it runs: WAL)."""
    conn = sqlite3.connect(f"{db.resolve().as_uri()}?mode=ro", uri=True)
    conn.row_factory = sqlite3.Row
    try:
        return [dict(r) for r in conn.execute(sql, params)]
    finally:
        conn.close()


def mem0(*memories: str | dict[str, Any]) -> str:
    return json.dumps([{"memory": m} if isinstance(m, str) else m for m in memories], ensure_ascii=False)


async def test_mem0_import_becomes_traceable_events(sidecar: SidecarClient, tmp_path: Path):
    path = FIXTURES / "mem0_get_all.json"
    report = await sidecar.call("import.run", {"namespace": NS, "path": str(path)})
    assert report["import_id"] == "imp_1" and report["format"] == "mem0"
    assert report["source_name"] == "mem0_get_all.json" and report["items"] == 3
    assert report["inserted"] == ["evt_1", "evt_2", "evt_3"] and report["merged"] == []
    assert report["suppressed"] == 0 and report["skipped_inactive"] == 0
    assert report["warnings"] == ["$[2]: empty 'memory' — skipped"]

    first = await tool(sidecar, "memory_expand_event", {"id": "evt_1"})
    assert first["origin"] == "import" and first["import_id"] == "imp_1" and first["scope"] == "user"
    assert first["narrative"] == "Prefers morning meetings and async communication"
    assert first["type"] == "preference" and first["criticality"] == "preference"  # metadata.type
    assert first["tags"] == ["work", "communication", "import:mem0"]
    assert first["temporal"]["mentioned_at"].startswith("2024-11-07T05:31:56")  # the source's created_at
    assert [s["quote"] for s in first["sources"]] == [first["narrative"]]
    second = await tool(sidecar, "memory_expand_event", {"id": "evt_2"})
    assert second["type"] == "fact" and second["narrative"] == "住在上海，喜欢吃小笼包 🥟"

    sources = db_rows(tmp_path / "memory.db", "SELECT * FROM event_sources ORDER BY id")
    assert [(s["event_id"], s["import_id"], s["source_ref"], s["message_id"]) for s in sources] == [
        (1, 1, "$[0]", None),
        (2, 1, "$[1]", None),
        (3, 1, "$[3]", None),
    ]
    assert sources[2]["quote"] == 'Is allergic to "shellfish" — avoid suggesting it'

    hits = (await tool(sidecar, "memory_search_events", {"query": "shellfish"}))["hits"]
    assert [h["id"] for h in hits] == ["evt_3"] and "import:mem0" in hits[0]["tags"]

    got = await sidecar.call("import.get", {"namespace": NS, "id": "imp_1"})
    assert got["source_text"] == path.read_bytes().decode("utf-8")
    assert got["source_sha256"] == hashlib.sha256(path.read_bytes()).hexdigest()
    assert got["status"] == "active" and got["report"]["inserted"] == report["inserted"]
    listed = (await sidecar.call("import.list", {"namespace": NS}))["imports"]
    # Host methods never cross namespaces: another namespace's id is unknown there, and listing needs a namespace.
    for method in ("import.get", "import.remove"):
        err = await rpc_error(sidecar, method, {"namespace": "elsewhere", "id": "imp_1"})
        assert err.code == -32004 and "unknown import imp_1 in namespace 'elsewhere'" in err.message
    err = await rpc_error(sidecar, "import.list", {})
    assert err.code == -32602 and "namespace" in err.message
    assert (await sidecar.call("import.get", {"namespace": NS, "id": "imp_1"}))["id"] == "imp_1"
    assert [(i["id"], i["item_count"], i["counts"]["events"]) for i in listed] == [("imp_1", 3, {"active": 3})]
    assert (await sidecar.call("import.list", {"namespace": "elsewhere"}))["imports"] == []

    created = db_rows(tmp_path / "memory.db", "SELECT * FROM audit_log WHERE action = 'import.created'")
    assert len(created) == 1 and created[0]["actor"] == "user" and created[0]["subject_id"] == "imp_1"
    assert "morning" not in created[0]["after"] and "shellfish" not in created[0]["after"]  # ids, not memories


async def test_same_file_twice_is_refused_unless_asked(sidecar: SidecarClient):
    path = str(FIXTURES / "chatgpt_manage_memories.txt")
    first = await sidecar.call("import.run", {"namespace": NS, "path": path})
    err = await rpc_error(sidecar, "import.run", {"namespace": NS, "path": path})
    assert err.code == -32602 and "already imported into proj as imp_1" in err.message
    assert err.data == {"import_id": "imp_1"}
    # The same bytes given as text are the same source.
    text = Path(path).read_bytes().decode("utf-8")  # CR/LF kept: the same bytes
    err = await rpc_error(sidecar, "import.run", {"namespace": NS, "text": text})
    assert err.data == {"import_id": "imp_1"}
    # Another namespace is another memory space, once it opts out of the user tier...
    await sidecar.call("namespace.settings.set", {"namespace": "other", "user_tier": False})
    other = await sidecar.call("import.run", {"namespace": "other", "path": path})
    assert len(other["inserted"]) == len(first["inserted"]) == 7
    # ...while in the user tier, user-scope items (the default) merge into the same events already there.
    shared = await sidecar.call("import.run", {"namespace": "third", "path": path})
    assert shared["inserted"] == [] and shared["merged"] == first["inserted"]

    again = await sidecar.call("import.run", {"namespace": NS, "path": path, "allow_duplicate": True})
    assert again["import_id"] == "imp_4" and again["inserted"] == [] and again["merged"] == first["inserted"]
    expanded = await tool(sidecar, "memory_expand_event", {"id": first["inserted"][0]})
    assert [(s["import_id"], s["quote"]) for s in expanded["sources"]] == [
        (imp, "Prefers concise answers.") for imp in ("imp_1", "imp_3", "imp_4")]


async def test_forgotten_is_suppressed_and_known_memory_gains_a_source(sidecar: SidecarClient, tmp_path: Path):
    known = await tool(sidecar, "memory_remember", {"text": "Prefers concise answers."})
    gone = await tool(sidecar, "memory_remember", {"text": "Lives in Berlin"})
    await tool(sidecar, "memory_forget", {"id": gone["id"]})

    report = await sidecar.call("import.run", {"namespace": NS, "path": str(FIXTURES / "chatgpt_manage_memories.txt")})
    assert report["merged"] == [known["id"]] and report["suppressed"] == 1 and report["tombstones"] == [gone["id"]]
    assert len(report["inserted"]) == 5 and report["items"] == 7

    expanded = await tool(sidecar, "memory_expand_event", {"id": known["id"]})
    assert expanded["origin"] == "remember" and expanded["import_id"] is None  # the event is the same one
    assert [s["quote"] for s in expanded["sources"]] == ["Prefers concise answers."] * 2
    refs = db_rows(tmp_path / "memory.db", "SELECT import_id, source_ref FROM event_sources WHERE event_id = 1")
    assert refs == [{"import_id": None, "source_ref": None}, {"import_id": 1, "source_ref": "line 3"}]

    assert (await tool(sidecar, "memory_expand_event", {"id": gone["id"]}))["status"] == "forgotten"
    berlin = await tool(sidecar, "memory_search_events", {"query": "Berlin"})
    assert berlin["hits"] == []
    stored = (await sidecar.call("import.get", {"namespace": NS, "id": "imp_1"}))["report"]
    assert "Berlin" not in json.dumps(stored, ensure_ascii=False)  # only the tombstone's id is reported
    assert (await sidecar.call("import.list", {"namespace": NS}))["imports"][0]["counts"]["merged_sources"] == 1


async def projected(client: SidecarClient, job: str) -> None:
    """Wait (no polling) until a graph projection job of an import has finished."""
    await client.wait_notification("jobs.changed", lambda p: p["job"] == job and p["status"] == "done")


async def test_remove_archives_imported_and_restores_what_they_superseded(
    sidecar: SidecarClient, tmp_path: Path, model_server: ScriptedModelServer
):
    db_path = tmp_path / "memory.db"
    old_text, new_text = "Deploys go out on Tuesdays", "Deploys now go out on Thursdays"
    old = await tool(sidecar, "memory_remember", {"text": old_text})
    report = await sidecar.call("import.run", {"namespace": NS, "text": mem0(new_text), "scope": "project"})
    new = report["inserted"][0]
    await projected(sidecar, report["projection_jobs"][0])
    await sidecar.close()

    # No RPC lets an import supersede an event by hand: make the link in the database while no sidecar runs.
    db = Database(db_path)
    await db.open()
    try:
        async with db.transaction() as conn:
            target, successor = await events.get_event(conn, 1), await events.get_event(conn, 2)
            assert target is not None and successor is not None and target.status == "active"
            assert (await events.supersede(conn, target, successor, "system"))["superseded"] is True
    finally:
        await db.close()

    client = await SidecarClient.start(db_path, env=model_env(model_server))
    try:
        before = await client.tool(NS, "s1", "memory_expand_event", {"id": old["id"]})
        assert before["status"] == "superseded" and before["successor_id"] == new

        removed = await client.call("import.remove", {"namespace": NS, "id": report["import_id"]})
        assert removed == {"import_id": "imp_1", "archived": [new], "restored": [old["id"]]}

        back = await client.tool(NS, "s1", "memory_expand_event", {"id": old["id"]})
        assert back["status"] == "active" and back["successor_id"] is None and back["weight_cap"] is None
        assert back["prior_status"] is None
        gone = await client.tool(NS, "s1", "memory_expand_event", {"id": new})
        assert gone["status"] == "archived" and gone["prior_status"] == "active" and gone["narrative"] == new_text
        current = await client.tool(NS, "s1", "memory_search_events", {"query": "deploys"})
        assert [h["id"] for h in current["hits"]] == [old["id"]]
        archived = await client.tool(NS, "s1", "memory_search_events", {"query": "deploys", "status": ["archived"]})
        assert [h["id"] for h in archived["hits"]] == [new]

        err = await rpc_error(client, "import.remove", {"namespace": NS, "id": "imp_1"})
        assert err.code == -32602 and err.message == "imp_1 was already removed"
        listed = (await client.call("import.list", {"namespace": NS}))["imports"][0]
        assert listed["status"] == "removed" and listed["removed_at"] is not None
        assert listed["counts"]["events"] == {"archived": 1}
        # The source stays readable after removal.
        assert (await client.call("import.get", {"namespace": NS, "id": "imp_1"}))["source_text"] == mem0(new_text)

        # A removed import no longer blocks importing the same text: it comes back as a new event.
        again = await client.call("import.run", {"namespace": NS, "text": mem0(new_text)})
        assert again["import_id"] == "imp_2" and again["inserted"] == ["evt_3"]
    finally:
        await client.close()

    actions = [(r["action"], r["subject_id"]) for r in db_rows(db_path, "SELECT action, subject_id FROM audit_log")]
    for expected in (
        ("import.created", "imp_1"),
        ("event.import", new),
        ("event.superseded", old["id"]),
        ("event.archived", new),
        ("event.unsuperseded", old["id"]),
        ("import.removed", "imp_1"),
    ):
        assert expected in actions
    assert actions.index(("event.archived", new)) < actions.index(("event.unsuperseded", old["id"]))
    assert actions.index(("event.unsuperseded", old["id"])) < actions.index(("import.removed", "imp_1"))


async def test_supersession_by_an_imported_event_through_the_graph_is_undone_on_removal(sidecar: SidecarClient):
    npm = await tool(sidecar, "memory_remember", {"text": "The project uses npm"})
    report = await sidecar.call("import.run", {"namespace": NS, "text": mem0("Switch to pnpm"), "scope": "project"})
    pnpm = report["inserted"][0]
    await projected(sidecar, report["projection_jobs"][0])  # the package-manager slot: pnpm replaces npm
    assert (await tool(sidecar, "memory_expand_event", {"id": npm["id"]}))["successor_id"] == pnpm

    removed = await sidecar.call("import.remove", {"namespace": NS, "id": report["import_id"]})
    assert removed["archived"] == [pnpm] and removed["restored"] == [npm["id"]]
    hits = (await tool(sidecar, "memory_search_events", {"query": "npm pnpm"}))["hits"]
    assert [(h["id"], h["status"]) for h in hits] == [(npm["id"], "active")]


async def test_bad_input_gives_clear_errors_and_stores_nothing(sidecar: SidecarClient, tmp_path: Path):
    empty = tmp_path / "empty.json"
    empty.write_text("")
    cases: list[tuple[str, dict[str, Any], int, str]] = [
        ("import.run", {"text": mem0("x"), "format": "yaml"}, -32602, "unknown import format 'yaml'"),
        ("import.run", {"text": "- a", "path": str(empty)}, -32602, "exactly one of path"),
        ("import.run", {}, -32602, "exactly one of path"),
        ("import.run", {"path": str(tmp_path / "nope.json")}, -32602, "nope.json: file not found"),
        ("import.run", {"path": "relative.json"}, -32602, "path must be absolute"),
        ("import.run", {"path": str(empty)}, -32602, "empty.json: is empty"),
        ("import.run", {"path": str(tmp_path)}, -32602, "is a directory"),
        ("import.run", {"text": "   \n"}, -32602, "is empty"),
        ("import.run", {"text": "- a", "scope": "session"}, -32602, "scope 'session' is not allowed for imports"),
        ("import.run", {"text": "- a", "format": "mem0"}, -32602, "<text>:"),
        ("import.run", {"text": "- a", "colour": "red"}, -32602, "colour"),
        ("import.remove", {"id": "evt_1"}, -32602, "import ids look like 'imp_3'"),
        ("import.remove", {"id": "imp_9"}, -32004, "unknown import imp_9"),
        ("import.get", {"id": "imp_9"}, -32004, "unknown import imp_9"),
    ]
    for method, params, code, text in cases:
        params = {"namespace": NS} | params
        err = await rpc_error(sidecar, method, params)
        assert err.code == code and text in err.message, (params, err.message)
    assert (await sidecar.call("system.ping"))["pong"] is True
    assert (await sidecar.call("import.list", {"namespace": NS}))["imports"] == []
    assert db_rows(tmp_path / "memory.db", "SELECT count(*) AS n FROM events") == [{"n": 0}]


async def test_chatgpt_text_and_markdown_imports(sidecar: SidecarClient, tmp_path: Path):
    chatgpt = await sidecar.call("import.run", {"namespace": NS, "path": str(FIXTURES / "chatgpt_manage_memories.txt")})
    assert chatgpt["format"] == "chatgpt" and len(chatgpt["inserted"]) == 7
    cat = await tool(sidecar, "memory_search_events", {"query": "cat Miso"})
    assert [(h["title"], h["tags"]) for h in cat["hits"]] == [("Has a cat named Miso 🐱", ["import:chatgpt"])]

    notes = (FIXTURES / "notes.md").read_text(encoding="utf-8")
    params = {"namespace": NS, "text": notes, "source_name": "notes.md", "scope": "project"}
    md = await sidecar.call("import.run", params)
    assert md["format"] == "markdown" and md["source_name"] == "notes.md" and len(md["inserted"]) == 10
    assert any("fenced code block" in w for w in md["warnings"])
    wrapped = (await tool(sidecar, "memory_search_events", {"query": "naming issues code reviews"}))["hits"][0]
    full = await tool(sidecar, "memory_expand_event", {"id": wrapped["id"]})
    assert "\n" not in full["narrative"] and full["narrative"].startswith("Wants code reviews to point out naming")
    assert full["sources"][0]["quote"].startswith("Wants code reviews to point out\n   naming issues first,")
    assert full["tags"] == ["About me", "Preferences", "import:markdown"] and full["scope"] == "project"
    sql = "SELECT source_ref FROM event_sources WHERE event_id = ?"
    ref = db_rows(tmp_path / "memory.db", sql, (int(wrapped["id"][4:]),))
    assert ref == [{"source_ref": "lines 16-18"}]


async def test_inactive_source_items_are_skipped(sidecar: SidecarClient):
    report = await sidecar.call("import.run", {"namespace": NS, "path": str(FIXTURES / "mem0_export.jsonl")})
    assert report["items"] == 2 and len(report["inserted"]) == 1
    assert report["skipped_inactive"] == 1 and report["skipped_statuses"] == {"archived": 1}
    assert (await tool(sidecar, "memory_search_events", {"query": "API redesign"}))["hits"] == []


def test_kind_maps_to_event_type():
    kinds = {
        "preference": "preference",
        "Preferences": "preference",
        "user_preferences": "preference",
        "goal": "plan",
        "todo": "plan",
        "Decision": "decision",
        "change": "change",
        "events": "event",
    }
    assert {k: event_type(k) for k in kinds} == kinds
    assert [event_type(k) for k in (None, "personal_details", "skill", "context")] == ["fact"] * 4


# --- in-process property: what the source said is what the provenance keeps -------------------------------------

_TEXT = st.text(st.characters(blacklist_categories=("Cs",), blacklist_characters="\x00"), min_size=1, max_size=80)
_SECRET = st.sampled_from(["api_key=sk-abcdefghijklmnopqrstuvwxyz0123", "Bearer abcdefghijklmnopqrstuvwxyz.0123456789"])


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(texts=st.lists(st.one_of(_TEXT, _SECRET, st.builds("{} {}".format, _TEXT, _SECRET)), min_size=1, max_size=8))
def test_item_texts_round_trip_into_sources_after_redaction(texts: list[str]):
    texts = [t for t in texts if t.strip()]
    if not texts:
        return
    batch = parse_text(mem0(*texts), "mem0", "prop.json")

    async def check(db_path: Path) -> None:
        db = Database(db_path)
        await db.open()
        try:
            report = await run_import(db, "prop", batch)
            rows = await db.fetchall("SELECT source_ref, quote FROM event_sources WHERE import_id = 1 ORDER BY id")
            expected = [(i.source_ref, redact(i.text)) for i in batch.items]
            assert [(r["source_ref"], r["quote"]) for r in rows] == expected
            assert len(report["inserted"]) + len(report["merged"]) == len(batch.items)
            for evt in report["inserted"]:
                row = await db.fetchone("SELECT narrative, import_id, origin FROM events WHERE id = ?", (int(evt[4:]),))
                assert row is not None and row["import_id"] == 1 and row["origin"] == "import"
                assert any(row["narrative"] == redact(i.flat_text) for i in batch.items)
            assert "sk-abcdefghijklmnopqrstuvwxyz0123" not in json.dumps([dict(r) for r in rows])
        finally:
            await db.close()

    with tempfile.TemporaryDirectory() as tmp:
        asyncio.run(check(Path(tmp) / "m.db"))


# --- CLI --------------------------------------------------------------------------------------------------------


def cli(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("STRATAGATE_")}
    env["PYTHONPATH"] = str(REPO / "sidecar")
    return subprocess.run(
        [sys.executable, "-m", "stratagate", "import", *args],
        capture_output=True,
        text=True,
        env=env,
        cwd=cwd,
        timeout=60,
    )


def test_cli_import_list_and_remove(tmp_path: Path):
    db = str(tmp_path / "cli.db")
    done = cli(str(FIXTURES / "mem0_get_all.json"), "--db", db, "--namespace", NS, "--scope", "project")
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0] == "import: imp_1 (mem0, mem0_get_all.json, ns=proj)"
    assert "items: 3" in lines and "inserted: 3 (evt_1, evt_2, evt_3)" in lines and "suppressed: 0" in lines
    assert "warning: $[2]: empty 'memory' — skipped" in lines

    again = cli(str(FIXTURES / "mem0_get_all.json"), "--db", db, "--namespace", NS)
    assert again.returncode == 1 and "already imported into proj as imp_1" in again.stderr
    assert "Traceback" not in again.stderr and again.stdout == ""

    listed = json.loads(cli("--list", "--db", db, "--json").stdout)["imports"]
    assert [(i["id"], i["namespace"], i["status"], i["counts"]["events"]) for i in listed] == [
        ("imp_1", NS, "active", {"active": 3})
    ]
    removed = cli("--remove", "imp_1", "--db", db, "--json")
    assert removed.returncode == 0 and json.loads(removed.stdout)["archived"] == ["evt_1", "evt_2", "evt_3"]
    twice = cli("--remove", "imp_1", "--db", db)
    assert twice.returncode == 1 and twice.stderr.strip() == "stratagate import: imp_1 was already removed"
    human = cli("--list", "--db", db, "--namespace", NS).stdout.splitlines()
    assert human[0].startswith("imp_1 removed mem0 mem0_get_all.json ns=proj ")
    assert human[1].strip() == "items: 3; events: archived 3; merged sources: 0"


def test_cli_defaults_to_the_project_namespace_and_reports_bad_input(tmp_path: Path):
    db = str(tmp_path / "cli.db")
    project = tmp_path / "myproject"
    project.mkdir()
    done = cli(str(FIXTURES / "plain.txt"), "--db", db, "--json", cwd=project)
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert report["namespace"] == resolve(ResolveParams(mode="project", cwd=str(project)))["namespace"]
    assert report["format"] == "text" and report["inserted"]

    for args, message in [
        ((str(tmp_path / "missing.json"), "--db", db), "missing.json: file not found"),
        ((str(FIXTURES / "plain.txt"), "--db", db, "--format", "yaml"), "unknown import format 'yaml'"),
        (("--db", db), "give exactly one of FILE, --remove IMPORT_ID or --list"),
        ((str(FIXTURES / "plain.txt"), "--list", "--db", db), "give exactly one of"),
        (("--remove", "imp_x", "--db", db), "import ids look like 'imp_3'"),
        (("--remove", "imp_7", "--db", db), "unknown import imp_7"),
        (("--list", "--db", str(tmp_path / "none.db")), "no database at"),
    ]:
        bad = cli(*args, cwd=project)
        code = 2 if message == "no database at" else 1  # a bad --db exits 2, like every command
        assert bad.returncode == code and message in bad.stderr and "Traceback" not in bad.stderr, (args, bad.stderr)
    assert not (tmp_path / "none.db").exists()


async def test_struck_out_markdown_is_skipped_and_reported(sidecar: SidecarClient):
    notes = (
        "# Tooling\n"
        "- ~~We use Jest~~ (old)\n"
        "- We use Vitest for unit tests\n"
        "- ~~We deploy with Heroku~~\n"
        "- We use ~~npm~~ pnpm\n"
    )
    report = await sidecar.call(
        "import.run", {"namespace": NS, "text": notes, "source_name": "tooling.md", "scope": "project"}
    )
    assert report["items"] == 4 and len(report["inserted"]) == 2
    assert report["skipped_struck"] == 2 and report["struck_refs"] == ["line 2", "line 4"]
    assert report["partly_struck_refs"] == ["line 5"]
    assert report["skipped_inactive"] == 0  # struck-out is markup, not a source status
    assert "Jest" not in json.dumps(report) and "Heroku" not in json.dumps(report)  # refs, never memory text
    assert (await tool(sidecar, "memory_search_events", {"query": "Jest"}))["hits"] == []
    assert (await tool(sidecar, "memory_search_events", {"query": "Heroku"}))["hits"] == []
    [pnpm] = (await tool(sidecar, "memory_search_events", {"query": "pnpm"}))["hits"]
    full = await tool(sidecar, "memory_expand_event", {"id": pnpm["id"]})
    assert full["narrative"] == "We use pnpm" and full["status"] == "active"
    assert full["sources"][0]["quote"] == "We use ~~npm~~ pnpm"  # the quote stays verbatim
    listed = (await sidecar.call("import.list", {"namespace": NS}))["imports"]
    assert listed[0]["counts"]["skipped_struck"] == 2


def test_cli_import_reports_struck_items(tmp_path: Path):
    notes = tmp_path / "notes.md"
    notes.write_text("- ~~We use Jest~~ (old)\n- We use ~~npm~~ pnpm\n- Plain line\n", encoding="utf-8")
    done = cli(str(notes), "--db", str(tmp_path / "cli.db"), "--namespace", NS)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert "skipped_struck: 1 (line 1)" in lines
    assert "partly_struck (struck words left out): line 2" in lines


async def test_a_long_import_gives_the_event_loop_back(tmp_path: Path) -> None:
    """Readers are served during a long import: the admission yields to the loop every few items, so a task that
    counts its turns on the loop advances while the import runs, not only after it."""
    from stratagate.events.admit import YIELD_EVERY

    count = YIELD_EVERY * 12
    text = "\n".join(f"- Service {i} runs on port {10000 + i} behind the {i % 7}th proxy" for i in range(count))
    batch = parse_text(text, "markdown", "long.md")
    db = Database(tmp_path / "m.db")
    await db.open()
    turns = 0
    importing = True

    async def ticker() -> None:
        nonlocal turns
        while importing:
            turns += 1
            await asyncio.sleep(0)

    try:
        task = asyncio.create_task(ticker())
        await asyncio.sleep(0)
        before = turns
        report = await run_import(db, "long", batch)
        during = turns - before
        importing = False
        await task
    finally:
        await db.close()
    assert len(report["inserted"]) + len(report["merged"]) == count
    # One turn per yield at least (more where a statement or the source's redaction ran off the loop).
    assert during >= count // YIELD_EVERY - 1
