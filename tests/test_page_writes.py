"""The Memory page's write routes over ``page.request`` in a real sidecar: every change, its audit entry (actor
user, action, subject, before/after), its undo where there is one, and a clear 400/404 for each kind of bad input.

Seeding goes through JSON-RPC only (memory_remember, turn.capture, import routes; the scripted model server for a
disputed pair and a failed job); the audit log and the remaining rows are read from the real SQLite file."""

from __future__ import annotations

import asyncio
import json
import sqlite3
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from conftest import model_env, turn
from stratagate.page.undo_rules import undoable
from support.model_server import ScriptedModelServer, tool_call
from support.sidecar import SidecarClient
from test_events_extraction import Script, capture, draft, job_note, user_msg

NS = "proj"
OTHER = "elsewhere"
ZERO = {"STRATAGATE_MODEL_ROUTE": "none", "STRATAGATE_DENSE": "off"}


@pytest.fixture
async def client(tmp_path: Path) -> AsyncIterator[SidecarClient]:
    c = await SidecarClient.start(tmp_path / "memory.db", env=ZERO, args=["--block-turns", "1"])
    yield c
    await c.close()


async def page(client: SidecarClient, verb: str, path: str, body: Any = None, **query: str) -> tuple[int, Any]:
    reply = await client.call("page.request", {"method": verb, "path": f"/api/stratagate/memory{path}",
                                               "query": query, "body": body})
    return reply["status"], reply["body"]


async def post(client: SidecarClient, path: str, body: Any) -> dict[str, Any]:
    status, out = await page(client, "POST", path, body)
    assert status == 200, out
    return out


async def refused(client: SidecarClient, path: str, body: Any, status: int = 400) -> str:
    got, out = await page(client, "POST", path, body)
    assert got == status, out
    return out["error"]


async def remember(client: SidecarClient, text: str, namespace: str = NS, **args: Any) -> str:
    card = await client.tool(namespace, "s1", "memory_remember", {"text": text, **args})
    assert not card["duplicate"], card
    return card["id"]


async def event(client: SidecarClient, ref: str, namespace: str = NS) -> dict[str, Any]:
    return await client.tool(namespace, "s1", "memory_expand_event", {"id": ref})


def db_rows(db: Path, sql: str, params: tuple[Any, ...] = ()) -> list[dict[str, Any]]:
    conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    conn.row_factory = sqlite3.Row
    try:
        return [dict(r) for r in conn.execute(sql, params)]
    finally:
        conn.close()


def entries(db: Path, ids: list[int]) -> list[dict[str, Any]]:
    marks = ", ".join("?" for _ in ids)
    rows = db_rows(db, f"SELECT * FROM audit_log WHERE id IN ({marks}) ORDER BY id", tuple(ids))
    for row in rows:
        for key in ("before", "after"):
            row[key] = json.loads(row[key]) if row[key] else None
    assert len(rows) == len(ids)
    return rows


def one(db: Path, ids: list[int], action: str) -> dict[str, Any]:
    (found,) = [e for e in entries(db, ids) if e["action"] == action]
    assert found["actor"] == "user"
    return found


# --- forget / restore / pin ------------------------------------------------------------------------------------------


async def test_forget_hides_the_event_audits_it_and_undo_restores_it(client: SidecarClient, tmp_path: Path):
    db = tmp_path / "memory.db"
    evt = await remember(client, "The staging server is called nimbus-7.")
    out = await post(client, "/events/forget", {"namespace": NS, "id": evt, "reason": "wrong server"})
    assert out["event"]["status"] == "forgotten"
    entry = one(db, out["audit_ids"], "event.forgotten")
    assert entry["subject_type"] == "event" and entry["subject_id"] == evt
    assert entry["before"]["status"] == "active" and entry["after"]["status"] == "forgotten"
    assert entry["after"]["note"] == {"reason": "wrong server"}
    assert undoable(entry) == f"Restore {evt}"
    hits = await client.tool(NS, "s1", "memory_search_events", {"query": "staging server nimbus"})
    assert [h["id"] for h in hits["hits"]] == []
    assert "already forgotten" in await refused(client, "/events/forget", {"namespace": NS, "id": evt})

    undone = await post(client, "/undo", {"namespace": NS, "audit_id": entry["id"]})
    assert undone["undone"] == entry["id"] and undone["label"] == f"Restore {evt}"
    # What was undone, for the page's toast ("Undid: forgot evt_N", never the undo's own label).
    assert (undone["action"], undone["subject_id"]) == ("event.forgotten", evt)
    restored = one(db, undone["audit_ids"], "event.restored")
    assert restored["after"]["status"] == "active"
    marker = one(db, undone["audit_ids"], "audit.undone")
    assert marker["subject_type"] == "audit" and marker["subject_id"] == str(entry["id"])
    assert undoable(marker) is None
    assert (await event(client, evt))["status"] == "active"
    assert "already undone" in await refused(client, "/undo", {"namespace": NS, "audit_id": entry["id"]})
    # The restore the undo wrote is itself undoable: forget again.
    again = await post(client, "/undo", {"namespace": NS, "audit_id": restored["id"]})
    assert (await event(client, evt))["status"] == "forgotten"
    assert one(db, again["audit_ids"], "event.forgotten")["subject_id"] == evt


async def test_restore_route_and_its_undo(client: SidecarClient, tmp_path: Path):
    db = tmp_path / "memory.db"
    evt = await remember(client, "Releases are cut every second Tuesday.")
    await post(client, "/events/forget", {"namespace": NS, "id": evt})
    out = await post(client, "/events/restore", {"namespace": NS, "id": evt})
    assert out["event"]["status"] == "active"
    entry = one(db, out["audit_ids"], "event.restored")
    assert entry["before"]["status"] == "forgotten" and entry["after"]["status"] == "active"
    assert "not forgotten" in await refused(client, "/events/restore", {"namespace": NS, "id": evt})
    await post(client, "/undo", {"namespace": NS, "audit_id": entry["id"]})
    assert (await event(client, evt))["status"] == "forgotten"


async def test_pin_unpin_and_undo(client: SidecarClient, tmp_path: Path):
    db = tmp_path / "memory.db"
    evt = await remember(client, "Code review needs two approvals.")
    out = await post(client, "/events/pin", {"namespace": NS, "id": evt, "pinned": True})
    assert out["event"]["pinned"] is True
    entry = one(db, out["audit_ids"], "event.pinned")
    assert entry["before"]["pinned"] is False and entry["after"]["pinned"] is True
    assert "already pinned" in await refused(client, "/events/pin", {"namespace": NS, "id": evt, "pinned": True})
    undone = await post(client, "/undo", {"namespace": NS, "audit_id": entry["id"]})
    assert one(db, undone["audit_ids"], "event.unpinned")["after"]["pinned"] is False
    assert (await event(client, evt))["pinned"] is False
    out = await post(client, "/events/pin", {"namespace": NS, "id": evt, "pinned": "true"})  # a form's string
    unpin = await post(client, "/events/pin", {"namespace": NS, "id": evt, "pinned": False})
    entry = one(db, unpin["audit_ids"], "event.unpinned")
    await post(client, "/undo", {"namespace": NS, "audit_id": entry["id"]})
    assert (await event(client, evt))["pinned"] is True


# --- edit ------------------------------------------------------------------------------------------------------------


async def test_edit_admits_a_correction_that_supersedes_and_undo_puts_the_original_back(
        client: SidecarClient, tmp_path: Path):
    db = tmp_path / "memory.db"
    evt = await remember(client, "The project uses npm as its package manager.", type="decision",
                         when="2026-04-02", happened="occurred")
    original = await event(client, evt)
    out = await post(client, "/events/edit", {"namespace": NS, "id": evt, "title": "Package manager: pnpm",
                                              "summary": "The project uses pnpm as its package manager."})
    new, ids = out["id"], out["audit_ids"]
    assert out["replaces"] == evt and new != evt
    correction = await event(client, new)
    assert correction["origin"] == "remember" and correction["status"] == "active"
    assert correction["title"] == "Package manager: pnpm"
    assert correction["summary"] == "The project uses pnpm as its package manager."
    assert (correction["type"], correction["scope"]) == (original["type"], original["scope"])
    assert correction["temporal"] == original["temporal"]  # same mention and occurrence times
    old = await event(client, evt)
    assert old["status"] == "superseded" and old["successor_id"] == new
    assert old["title"] == original["title"]  # content is immutable: the original is untouched
    edited = one(db, ids, "event.edited")
    assert edited["subject_id"] == evt
    assert edited["before"] == {"title": original["title"], "summary": original["summary"],
                                "when": original["temporal"]["original"], "time_status": original["temporal"]["status"]}
    assert edited["after"]["id"] == new and edited["after"]["summary"].endswith("pnpm as its package manager.")
    assert undoable(edited) == f"Undo the edit of {evt} (archive {new})"
    step = one(db, ids, "event.superseded")
    assert step["after"]["note"] == {"part_of": "event.edited"} and undoable(step) is None
    assert "only a current" in await refused(client, "/events/edit", {"namespace": NS, "id": evt, "title": "x"})

    undone = await post(client, "/undo", {"namespace": NS, "audit_id": edited["id"]})
    actions = {e["action"] for e in entries(db, undone["audit_ids"])}
    # The graph follows in the same transaction: the correction's facts archived, the original's current again.
    assert actions - {"fact.archived", "fact.active"} == {"event.archived", "event.unsuperseded", "audit.undone"}
    assert (await event(client, new))["status"] == "archived"
    back = await event(client, evt)
    assert back["status"] == "active" and back["successor_id"] is None
    assert "already undone" in await refused(client, "/undo", {"namespace": NS, "audit_id": edited["id"]})


async def test_a_title_only_edit_keeps_the_narrative(client: SidecarClient):
    evt = await remember(client, "Deploys run from the release branch after the freeze.")
    out = await post(client, "/events/edit", {"namespace": NS, "id": evt, "title": "Deploys from release"})
    correction = await event(client, out["id"])
    assert correction["title"] == "Deploys from release"
    assert correction["narrative"] == (await event(client, evt))["narrative"]
    error = await refused(client, "/events/edit", {"namespace": NS, "id": out["id"], "title": "Deploys from release"})
    assert "nothing to change" in error


async def test_an_edit_changes_the_time_a_plan_no_longer_happens_next_week(client: SidecarClient, tmp_path: Path):
    evt = await remember(client, "We release the new dashboard next week.", type="plan", when="next week",
                         happened="planned")
    original = await event(client, evt)
    assert original["temporal"]["original"] == "next week"
    # The plan moved to a date: the correction's time is read from it (not from "next week").
    out = await post(client, "/events/edit", {"namespace": NS, "id": evt, "when": "2026-12-14"})
    moved = await event(client, out["id"])
    assert moved["temporal"]["original"] == "2026-12-14"
    assert moved["temporal"]["happened_start"].startswith("2026-12-14")
    assert moved["temporal"]["mentioned_at"] == original["temporal"]["mentioned_at"]
    assert moved["title"] == original["title"] and moved["summary"] == original["summary"]
    edited = one(tmp_path / "memory.db", out["audit_ids"], "event.edited")
    assert (edited["before"]["when"], edited["after"]["when"]) == ("next week", "2026-12-14")
    # Then it was called off: the status alone is a change; "" says no time at all.
    off = await post(client, "/events/edit", {"namespace": NS, "id": out["id"], "when": "", "time_status": "cancelled"})
    cancelled = await event(client, off["id"])
    assert cancelled["temporal"]["original"] is None and cancelled["temporal"]["happened_start"] is None
    assert cancelled["temporal"]["status"] == "cancelled"
    error = await refused(client, "/events/edit", {"namespace": NS, "id": off["id"], "time_status": "cancelled"})
    assert "nothing to change" in error


# --- merge -----------------------------------------------------------------------------------------------------------


async def test_merge_options_list_only_what_merge_accepts(client: SidecarClient):
    keep = await remember(client, "The staging database is refreshed every Monday night.")
    twin = await remember(client, "Staging gets a fresh copy of the database on Monday nights.")
    pinned = await remember(client, "The staging database copy is anonymised first.")
    gone = await remember(client, "Staging refreshes used to run on Sundays.")
    user = await remember(client, "I prefer staging refreshes announced in the team channel.", scope="user")
    await post(client, "/events/pin", {"namespace": NS, "id": pinned, "pinned": True})
    await post(client, "/events/forget", {"namespace": NS, "id": gone})

    async def options(ref: str, words: str | None = None) -> list[str]:
        query = {"namespace": NS, "id": ref} | ({"q": words} if words else {})
        status, out = await page(client, "GET", "/events/merge-options", **query)
        assert status == 200, out
        return [e["id"] for e in out["events"]]

    offered = await options(keep)
    # Not itself, not a pinned or forgotten event, not one of another scope: exactly what merge would refuse.
    assert twin in offered and not {keep, pinned, gone, user} & set(offered), offered
    for refused_id in (pinned, gone, user):
        await refused(client, "/events/merge", {"namespace": NS, "keep": keep, "merge": refused_id})
    assert await options(keep, "Monday") == [twin]
    assert await options(gone) == []  # a forgotten event survives no merge
    await post(client, "/events/merge", {"namespace": NS, "keep": keep, "merge": offered[0]})


async def test_merge_a_chosen_pair_and_undo_unmerges(client: SidecarClient, tmp_path: Path):
    db = tmp_path / "memory.db"
    keep = await remember(client, "Integration tests need the docker daemon running.")
    dup = await remember(client, "Start docker before running the integration suite.")
    out = await post(client, "/events/merge", {"namespace": NS, "keep": keep, "merge": dup})
    assert (out["survivor"], out["merged"]) == (keep, dup)
    entry = one(db, out["audit_ids"], "event.merged")
    assert entry["subject_id"] == dup and entry["after"]["note"]["into"] == keep
    assert entry["before"]["status"] == "active" and entry["after"]["status"] == "superseded"
    merged = await event(client, dup)
    assert merged["status"] == "superseded" and merged["successor_id"] == keep
    assert len((await event(client, keep))["sources"]) == 2  # the duplicate's evidence was copied
    assert "only active" in await refused(client, "/events/merge", {"namespace": NS, "keep": keep, "merge": dup})

    undone = await post(client, "/undo", {"namespace": NS, "audit_id": entry["id"]})
    assert one(db, undone["audit_ids"], "event.unmerged")["subject_id"] == dup
    assert (await event(client, dup))["status"] == "active"
    assert len((await event(client, keep))["sources"]) == 1
    assert "already undone" in await refused(client, "/undo", {"namespace": NS, "audit_id": entry["id"]})

    assert "into itself" in await refused(client, "/events/merge", {"namespace": NS, "keep": keep, "merge": keep})
    await post(client, "/events/pin", {"namespace": NS, "id": dup, "pinned": True})
    assert "pinned" in await refused(client, "/events/merge", {"namespace": NS, "keep": keep, "merge": dup})
    user = await remember(client, "I prefer tabs over spaces in every project.", scope="user")
    assert "scope" in await refused(client, "/events/merge", {"namespace": NS, "keep": keep, "merge": user})


# --- resolve (a disputed pair from the scripted extraction model) --------------------------------------------------


@pytest.fixture
def script(model_server: ScriptedModelServer) -> Script:
    s = Script()
    model_server.default = s
    return s


@pytest.fixture
async def model_client(tmp_path: Path, model_server: ScriptedModelServer, script: Script
                       ) -> AsyncIterator[SidecarClient]:
    c = await SidecarClient.start(tmp_path / "memory.db", env=model_env(model_server), args=["--block-turns", "1"])
    yield c
    await c.close()


async def disputed_pair(client: SidecarClient, script: Script) -> tuple[str, str]:
    script.answers.append(lambda p: {"events": [draft(
        "Deploys go out on Fridays.", user_msg(p), title="Deploy day", type="decision",
        quotes=["Deploys go out on Fridays."])]})
    await job_note(client, await capture(client, 1, "Deploys go out on Fridays."))
    friday = (await client.tool(NS, "s1", "memory_search_events", {"query": "deploys fridays"}))["hits"][0]["id"]
    script.answers.append(lambda p: {"events": [draft(
        "Deploys go out on Mondays.", user_msg(p), title="Deploy day (Monday)", type="decision",
        conflicts_with=[friday])]})
    await job_note(client, await capture(client, 2, "Deploys go out on Mondays."))
    monday = next(h["id"] for h in (await client.tool(NS, "s1", "memory_search_events",
                                                      {"query": "deploys mondays"}))["hits"] if h["id"] != friday)
    assert {(await event(client, e))["status"] for e in (friday, monday)} == {"disputed"}
    return friday, monday


async def test_resolve_keep_one_then_undo_back_to_disputed(model_client: SidecarClient, script: Script,
                                                           tmp_path: Path):
    db = tmp_path / "memory.db"
    friday, monday = await disputed_pair(model_client, script)
    out = await post(model_client, "/events/resolve", {"namespace": NS, "keep": monday, "other": friday})
    statuses = {e["id"]: e["status"] for e in out["events"]}
    assert statuses == {monday: "active", friday: "superseded"}
    assert (await event(model_client, friday))["successor_id"] == monday
    entry = one(db, out["audit_ids"], "event.resolved")
    assert entry["after"]["pair"] == [monday, friday] and entry["after"]["kept"] == monday
    assert entry["before"][friday]["status"] == entry["before"][monday]["status"] == "disputed"
    steps = [e for e in entries(db, out["audit_ids"]) if e["action"] != "event.resolved"]
    assert steps and all(e["after"]["note"]["part_of"] == "event.resolved" for e in steps)
    assert all(undoable(e) is None for e in steps)
    assert undoable(entry) == f"Reopen the dispute of {monday} and {friday}"
    assert "not disputed" in await refused(model_client, "/events/resolve",
                                           {"namespace": NS, "keep": monday, "other": friday})

    await post(model_client, "/undo", {"namespace": NS, "audit_id": entry["id"]})
    for ref in (friday, monday):
        ev = await event(model_client, ref)
        assert ev["status"] == "disputed" and ev["successor_id"] is None


async def test_resolve_keep_both_clears_the_dispute_and_undo_reopens_it(model_client: SidecarClient,
                                                                        script: Script, tmp_path: Path):
    db = tmp_path / "memory.db"
    friday, monday = await disputed_pair(model_client, script)
    assert "keep 'both' takes ids" in await refused(model_client, "/events/resolve",
                                                    {"namespace": NS, "keep": "both", "other": friday})
    out = await post(model_client, "/events/resolve", {"namespace": NS, "keep": "both", "ids": [friday, monday]})
    assert {e["status"] for e in out["events"]} == {"active"}
    entry = one(db, out["audit_ids"], "event.resolved")
    assert entry["after"]["kept"] == "both"
    await post(model_client, "/undo", {"namespace": NS, "audit_id": entry["id"]})
    assert {(await event(model_client, e))["status"] for e in (friday, monday)} == {"disputed"}


# --- jobs ------------------------------------------------------------------------------------------------------------


async def test_retry_failed_jobs_one_and_all(tmp_path: Path, model_server: ScriptedModelServer):
    db = tmp_path / "memory.db"
    model_server.default = lambda body: tool_call("stratagate_summarize_block", "not json at all")
    env = model_env(model_server, STRATAGATE_JOB_MAX_ATTEMPTS="1")
    client = await SidecarClient.start(db, env=env, args=["--block-turns", "1"])
    try:
        for i in (1, 2):
            await client.call("turn.capture", turn(i))
        await client.settled(failed=True)
        jobs = (await client.call("jobs.list", {"status": "failed"}))["jobs"]
        failed = [j for j in jobs if j["kind"] == "block_summary"]
        assert len(failed) == 2 and len(jobs) > 2  # the fallback's extraction asked the broken model too
        assert "unknown job" in await refused(client, "/jobs/retry", {"job": "job_999999"}, 404)
        assert "give job" in await refused(client, "/jobs/retry", {})
        assert "job_7" in await refused(client, "/jobs/retry", {"job": "seven"})
        out = await post(client, "/jobs/retry", {"job": failed[0]["id"]})
        assert out["retried"] == [failed[0]["id"]]
        entry = one(db, out["audit_ids"], "job.retried")
        assert entry["subject_id"] == failed[0]["id"] and entry["after"] == {"status": "queued", "attempts": 0}
        assert entry["namespace_id"] is not None
        await client.settled(failed=True)
        out = await post(client, "/jobs/retry", {"status": "failed", "kind": "block_summary", "namespace": NS})
        assert sorted(out["retried"]) == sorted(j["id"] for j in failed)
        assert len(entries(db, out["audit_ids"])) == 2
        assert await refused(client, "/jobs/retry", {"status": "failed", "namespace": OTHER}, 404)
        await client.settled(failed=True)
    finally:
        await client.close()


# --- imports ---------------------------------------------------------------------------------------------------------

MARKDOWN = "# Notes\n\n- The CI runs on GitHub Actions.\n- Lint with ruff before every push.\n"


async def test_import_preview_reads_the_items_and_writes_nothing(client: SidecarClient, tmp_path: Path):
    await remember(client, "Unrelated memory so the namespace exists.")
    before = db_rows(tmp_path / "memory.db", "SELECT count(*) AS n FROM events")[0]["n"]
    preview = await post(client, "/imports/preview", {"namespace": NS, "text": MARKDOWN, "filename": "notes.md"})
    assert (preview["format"], preview["source_name"], preview["count"]) == ("markdown", "notes.md", 2)
    texts = [i["text"] for i in preview["items"]]
    assert texts == ["The CI runs on GitHub Actions.", "Lint with ruff before every push."]
    assert db_rows(tmp_path / "memory.db", "SELECT count(*) AS n FROM events")[0]["n"] == before
    assert (await page(client, "POST", "/imports/preview", {"namespace": NS, "text": "{"}))[0] == 400


async def test_import_add_remove_and_undo_of_an_import(client: SidecarClient, tmp_path: Path):
    db = tmp_path / "memory.db"
    await remember(client, "Unrelated memory so the namespace exists.")
    report = await post(client, "/imports/add", {"namespace": NS, "text": MARKDOWN, "filename": "notes.md"})
    assert report["source_name"] == "notes.md" and len(report["inserted"]) == 2
    created = one(db, report["audit_ids"], "import.created")
    assert created["subject_id"] == report["import_id"] and created["after"]["inserted"] == report["inserted"]
    assert {(await event(client, e))["scope"] for e in report["inserted"]} == {"project"}
    assert "already imported" in await refused(client, "/imports/add", {"namespace": NS, "text": MARKDOWN})

    undone = await post(client, "/undo", {"namespace": NS, "audit_id": created["id"]})
    assert one(db, undone["audit_ids"], "import.removed")["subject_id"] == report["import_id"]
    assert {(await event(client, e))["status"] for e in report["inserted"]} == {"archived"}
    assert "already undone" in await refused(client, "/undo", {"namespace": NS, "audit_id": created["id"]})

    again = await post(client, "/imports/add", {"namespace": NS, "text": MARKDOWN, "scope": "user"})
    removed = await post(client, "/imports/remove", {"namespace": NS, "import_id": again["import_id"]})
    assert sorted(removed["archived"]) == sorted(again["inserted"])
    entry = one(db, removed["audit_ids"], "import.removed")
    assert entry["before"] == {"status": "active"} and entry["after"]["status"] == "removed"
    assert undoable(entry) is None
    assert "already removed" in await refused(client, "/imports/remove",
                                              {"namespace": NS, "import_id": again["import_id"]})
    assert await refused(client, "/imports/add", {"namespace": "nowhere", "text": MARKDOWN}, 404)
    assert "scope" in await refused(client, "/imports/add", {"namespace": NS, "text": MARKDOWN, "scope": "session"})


# --- delete a namespace ----------------------------------------------------------------------------------------------


def namespace_rows(db: Path, ns_id: int) -> dict[str, int]:
    """Rows of every table with a namespace_id column that belong to ``ns_id``."""
    tables = [r["name"] for r in db_rows(db, "SELECT name FROM sqlite_master WHERE type = 'table'")]
    out = {}
    for table in tables:
        cols = {c["name"] for c in db_rows(db, f"PRAGMA table_info('{table}')")}
        if "namespace_id" in cols:
            n = db_rows(db, f"SELECT COUNT(*) AS n FROM {table} WHERE namespace_id = ?", (ns_id,))[0]["n"]
            if n:
                out[table] = n
    return out


async def test_delete_namespace_removes_every_row_and_leaves_one_entry(client: SidecarClient, tmp_path: Path):
    db = tmp_path / "memory.db"
    marker = "quokka-lantern-5523"
    for i in (1, 2):
        await client.call("turn.capture", turn(i, user=f"Remember that the vault label is {marker} number {i}."))
    evt = await remember(client, f"The vault label is {marker}.")
    await post(client, "/events/forget", {"namespace": NS, "id": evt})
    await post(client, "/imports/add", {"namespace": NS, "text": MARKDOWN})
    await client.tool(NS, "s1", "memory_search_raw", {"query": "vault label"})  # a retrieval batch
    kept = await remember(client, "The other project deploys with Helm.", namespace=OTHER)
    await client.call("turn.capture", turn(1, namespace=OTHER, user="The other project deploys with Helm."))
    await client.settled()
    (ns_row,) = db_rows(db, "SELECT id FROM namespaces WHERE name = ?", (NS,))
    before = namespace_rows(db, ns_row["id"])
    assert {"sessions", "messages", "blocks", "events", "imports", "audit_log", "retrieval_batches"} <= set(before)
    other_before = namespace_rows(db, db_rows(db, "SELECT id FROM namespaces WHERE name = ?", (OTHER,))[0]["id"])

    assert await refused(client, "/namespaces/delete", {"namespace": NS, "confirm": "proj "}) == (
        "type the namespace name to confirm")
    assert (await refused(client, "/namespaces/delete", {"namespace": NS})).startswith("invalid params: confirm")
    out = await post(client, "/namespaces/delete", {"namespace": NS, "confirm": NS})
    assert out["deleted"] is True and "cannot be undone" in out["note"]
    assert out["counts"]["messages"] == before["messages"] and out["counts"]["namespaces"] == 1
    (entry,) = entries(db, out["audit_ids"])
    assert entry["action"] == "namespace.deleted" and entry["namespace_id"] is None
    assert entry["subject_id"] == NS and entry["after"]["counts"] == out["counts"]
    assert undoable(entry) is None
    assert namespace_rows(db, ns_row["id"]) == {}
    assert db_rows(db, "SELECT id FROM namespaces WHERE name = ?", (NS,)) == []
    assert namespace_rows(db, db_rows(db, "SELECT id FROM namespaces WHERE name = ?", (OTHER,))[0]["id"]) == (
        other_before)
    assert (await event(client, kept, OTHER))["status"] == "active"
    assert db_rows(db, "PRAGMA foreign_key_check") == []
    # The append-only guards are back.
    triggers = {r["name"] for r in db_rows(db, "SELECT name FROM sqlite_master WHERE type = 'trigger'")}
    assert {"audit_no_delete", "imports_no_delete", "erasures_no_delete", "messages_kept"} <= triggers
    # Secure: no byte of it is left in the files.
    for path in [*tmp_path.glob("memory.db*"), *tmp_path.glob("memory.db-search/**/*")]:  # derived index too
        if path.is_file():
            assert marker.encode() not in path.read_bytes(), path.name
    assert await refused(client, "/namespaces/delete", {"namespace": NS, "confirm": NS}, 404)
    status, _ = await page(client, "POST", "/events/forget", {"namespace": NS, "id": evt})
    assert status == 404


# --- settings --------------------------------------------------------------------------------------------------------


async def test_settings_get_set_apply_live_persist_and_undo(tmp_path: Path, model_server: ScriptedModelServer):
    db = tmp_path / "memory.db"
    client = await SidecarClient.start(db, env=model_env(model_server, STRATAGATE_ACTIVATION_RECENT_TOKENS="500"))
    try:
        status, got = await page(client, "GET", "/settings")
        assert status == 200
        assert got["settings"] == {"namespace_mode": "project", "block_turns": 6, "model_route": "auto",
                                   "activation_recent_tokens": 500, "activation_session_tokens": 1200,
                                   "activation_longterm_tokens": 900, "context_mode": "cost", "team_dsn": None,
                                   "team_member": None}
        fields = {f["name"]: f for f in got["fields"]}
        assert fields["block_turns"] == {
            "name": "block_turns", "type": "int", "min": 1, "max": 1000, "default": 6, "source": "default",
            "label": {"en": "Turns per block", "zh": "每个区块的轮数"},
            "help": {"en": "turns per sealed block; flag `--block-turns`",
                     "zh": "每个封存区块包含的轮数；命令行 `--block-turns`"},
        }
        assert fields["activation_recent_tokens"]["source"] == "env"
        assert fields["model_route"]["choices"] == ["auto", "none"]
        assert fields["namespace_mode"]["choices"] == ["project", "session", "global"]
        assert fields["context_mode"]["choices"] == ["cost", "quality", "custom"]

        # block_turns 2, live: the next captured turns seal at the new size.
        out = await post(client, "/settings", {"settings": {"block_turns": 2}})
        assert out["settings"]["block_turns"] == 2
        assert {f["name"]: f["source"] for f in out["fields"]}["block_turns"] == "page"
        entry = one(db, out["audit_ids"], "settings.changed")
        assert entry["namespace_id"] is None and entry["subject_id"] == "page"
        assert entry["before"]["settings"] == {"block_turns": 6} and entry["after"]["settings"] == {"block_turns": 2}
        assert (await client.call("turn.capture", turn(1)))["sealed_block_ids"] == []
        (first,) = (await client.call("turn.capture", turn(2)))["sealed_block_ids"]
        await client.settled()

        # model_route none, live: the next block gets rule-written (extractive) views, no model call.
        calls = len(model_server.requests)
        out = await post(client, "/settings", {"settings": {"model_route": "none", "context_mode": "quality"}})
        assert out["settings"]["model_route"] == "none" and out["settings"]["context_mode"] == "quality"
        route_entry = one(db, out["audit_ids"], "settings.changed")
        for i in (3, 4):
            sealed = (await client.call("turn.capture", turn(i)))["sealed_block_ids"]
        (second,) = sealed
        await client.settled()
        assert len(model_server.requests) == calls
        sources = {r["id"]: r["summary_source"] for r in db_rows(db, "SELECT id, summary_source FROM blocks")}
        assert sources[int(first.removeprefix("blk_"))] == "model"
        assert sources[int(second.removeprefix("blk_"))] == "extractive"
        info = await client.call("system.info")
        assert info["model_route"] == "none:rules" and info["block_turns"] == 2
    finally:
        await client.close()

    # Stored: re-applied at start over the environment.
    client = await SidecarClient.start(db, env=model_env(model_server, STRATAGATE_BLOCK_TURNS="9"))
    try:
        _, got = await page(client, "GET", "/settings")
        assert got["settings"]["block_turns"] == 2 and got["settings"]["model_route"] == "none"
        assert {f["name"]: f["source"] for f in got["fields"]}["context_mode"] == "page"
        undone = await post(client, "/undo", {"namespace": NS, "audit_id": route_entry["id"]})
        change = one(db, undone["audit_ids"], "settings.changed")
        assert change["after"]["settings"] == {"model_route": "auto", "context_mode": "cost"}
        _, got = await page(client, "GET", "/settings")
        assert got["settings"]["model_route"] == "auto" and got["settings"]["context_mode"] == "cost"
        assert "changed again" not in str(got)
        # null resets a key to the environment's value.
        out = await post(client, "/settings", {"settings": {"block_turns": None}})
        assert out["settings"]["block_turns"] == 9
        assert {f["name"]: f["source"] for f in out["fields"]}["block_turns"] == "env"
        assert "changed again" in await refused(client, "/undo", {"namespace": NS, "audit_id": entry["id"]})
    finally:
        await client.close()


async def test_namespace_mode_setting_drives_namespace_for_session(client: SidecarClient):
    params = {"mode": "project", "session": "abc", "cwd": "/work/some/repo"}
    assert (await client.call("namespace.for_session", params))["mode"] == "project"
    await post(client, "/settings", {"settings": {"namespace_mode": "session"}})
    assert await client.call("namespace.for_session", params) == {
        "namespace": "session:abc", "mode": "session", "label": "abc", "fallback": False}


async def test_bad_settings_are_refused_naming_the_field(client: SidecarClient):
    assert "unknown setting 'block_size'" in await refused(client, "/settings", {"settings": {"block_size": 3}})
    error = await refused(client, "/settings", {"settings": {"block_turns": 0}})
    assert "block_turns" in error and "greater than or equal to 1" in error
    assert "activation_longterm_tokens" in await refused(client, "/settings",
                                                         {"settings": {"activation_longterm_tokens": 901}})
    assert "model_route" in await refused(client, "/settings", {"settings": {"model_route": "gpt"}})
    assert "context_mode" in await refused(client, "/settings", {"settings": {"context_mode": "cheap"}})
    assert "settings" in await refused(client, "/settings", {"settings": [1, 2]})
    assert await refused(client, "/settings", ["block_turns"]) == "the request body must be a JSON object"
    _, got = await page(client, "GET", "/settings")
    assert got["settings"]["block_turns"] == 1  # nothing applied


# --- bad input -------------------------------------------------------------------------------------------------------


async def test_bad_input_of_each_shape(client: SidecarClient, tmp_path: Path):
    evt = await remember(client, "The database runs on port 5433.")
    theirs = await remember(client, "Their database runs on port 6543.", namespace=OTHER)
    # Missing field: 400 with pydantic's details naming it.
    status, body = await page(client, "POST", "/events/forget", {"namespace": NS})
    assert status == 400 and body["error"].startswith("invalid params: id") and body["details"][0]["loc"] == ["id"]
    assert "pinned" in await refused(client, "/events/pin", {"namespace": NS, "id": evt})
    assert "title, summary, when or time_status" in await refused(client, "/events/edit", {"namespace": NS, "id": evt})
    # Wrong id shape; an unknown id; another namespace's id; an unknown namespace.
    assert "evt_12" in await refused(client, "/events/forget", {"namespace": NS, "id": "blk_3"})
    assert await refused(client, "/events/forget", {"namespace": NS, "id": "evt_99999"}, 404)
    assert "unknown event" in await refused(client, "/events/forget", {"namespace": NS, "id": theirs}, 404)
    assert "unknown namespace" in await refused(client, "/events/forget", {"namespace": "nope", "id": evt}, 404)
    assert await refused(client, "/events/merge", {"namespace": NS, "keep": evt, "merge": theirs}, 404)
    # Unknown fields are refused, not ignored.
    assert "extra" in (await refused(client, "/events/forget", {"namespace": NS, "id": evt, "erase": True})).lower()
    # Non-object body; the wrong verb.
    assert await refused(client, "/events/forget", "evt_1") == "the request body must be a JSON object"
    status, body = await page(client, "GET", "/events/forget")
    assert status == 405 and body["allow"] == ["POST"]
    # Undo: an unknown entry, another namespace's entry, an entry that is not undoable.
    assert await refused(client, "/undo", {"namespace": NS, "audit_id": 10**9}, 404)
    out = await post(client, "/events/forget", {"namespace": OTHER, "id": theirs})
    assert await refused(client, "/undo", {"namespace": NS, "audit_id": out["audit_ids"][0]}, 404)
    assert "audit_id" in await refused(client, "/undo", {"namespace": NS, "audit_id": 0})
    (remembered,) = db_rows(tmp_path / "memory.db", "SELECT id FROM audit_log WHERE action = 'event.remember'"
                            " AND subject_id = ?", (evt,))
    status, body = await page(client, "POST", "/undo", {"namespace": NS, "audit_id": remembered["id"]})
    assert status == 400 and "(event.remember) cannot be undone" in body["error"]


def test_random_bodies_never_fail_the_server(tmp_path: Path):
    """Whatever a client posts, each write route answers 200, 400 or 404 with a JSON error: never a 500."""
    loop = asyncio.new_event_loop()
    client = loop.run_until_complete(SidecarClient.start(tmp_path / "memory.db", env=ZERO))
    evt = loop.run_until_complete(remember(client, "Hypothesis probes the write routes."))
    routes = ["/events/edit", "/events/forget", "/events/restore", "/events/pin", "/events/merge",
              "/events/resolve", "/undo", "/jobs/retry", "/imports/remove", "/namespaces/delete", "/settings"]
    values = st.one_of(st.none(), st.booleans(), st.integers(-5, 10**12), st.text(max_size=30),
                       st.sampled_from([NS, OTHER, evt, "evt_0", "both", "job_1", "imp_1", "cost"]),
                       st.lists(st.sampled_from([evt, "evt_2", 3]), max_size=3))
    keys = st.sampled_from(["namespace", "id", "keep", "merge", "other", "ids", "pinned", "title", "summary",
                            "reason", "audit_id", "job", "status", "kind", "import_id", "confirm", "settings", "x"])
    bodies = st.one_of(st.dictionaries(keys, values, max_size=5), values)

    @given(route=st.sampled_from(routes), body=bodies)
    @settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
    def check(route: str, body: Any) -> None:
        if route == "/namespaces/delete" and isinstance(body, dict) and body.get("confirm") == body.get("namespace"):
            body = {**body, "confirm": f"{body.get('confirm')}!"}  # keep the namespace for the next examples
        status, out = loop.run_until_complete(page(client, "POST", route, body))
        assert status in (200, 400, 404), (route, body, out)
        if status != 200:
            assert isinstance(out["error"], str) and out["error"]

    try:
        check()
    finally:
        loop.run_until_complete(client.close())
        loop.close()


# --- the undo table (pure) -------------------------------------------------------------------------------------------


@pytest.mark.parametrize(("action", "actor", "after", "label"), [
    ("event.forgotten", "agent", None, "Restore evt_3"),
    ("event.restored", "user", {}, "Forget evt_3 again"),
    ("event.pinned", "user", {}, "Unpin evt_3"),
    ("event.unpinned", "user", {}, "Pin evt_3 again"),
    ("event.edited", "user", {"id": "evt_9"}, "Undo the edit of evt_3 (archive evt_9)"),
    ("event.merged", "system", {"note": {"into": "evt_1"}}, "Unmerge evt_3 from evt_1"),
    ("event.resolved", "user", {"pair": ["evt_3", "evt_4"]}, "Reopen the dispute of evt_3 and evt_4"),
    ("event.superseded", "user", {}, "Unsupersede evt_3"),
    ("event.superseded", "agent", {}, None),  # only the user's own supersession
    ("event.superseded", "user", {"note": {"part_of": "event.edited"}}, None),  # undone through its edit
    ("namespace.deleted", "user", {}, None),
    ("job.retried", "user", {}, None),
    ("audit.undone", "user", {"undid": 3}, None),
])
def test_undo_rules_table(action: str, actor: str, after: Any, label: str | None):
    assert undoable({"id": 1, "action": action, "actor": actor, "subject_id": "evt_3", "after": after}) == label


@given(entry=st.dictionaries(st.sampled_from(["id", "action", "actor", "subject_id", "before", "after"]),
                             st.one_of(st.none(), st.text(max_size=20), st.integers(),
                                       st.sampled_from(["event.forgotten", "event.edited", "event.resolved",
                                                        "event.merged", "settings.changed", "import.created"]),
                                       st.dictionaries(st.sampled_from(["note", "pair", "id"]),
                                                       st.one_of(st.none(), st.text(max_size=5),
                                                                 st.lists(st.text(max_size=5), max_size=3),
                                                                 st.dictionaries(st.sampled_from(["part_of", "into"]),
                                                                                 st.text(max_size=5)))))))
def test_undo_rules_never_raise_on_any_entry(entry: dict[str, Any]):
    label = undoable(entry)
    assert label is None or (isinstance(label, str) and label)


# --- the context engine's settings -----------------------------------------------------------------------------------


async def test_context_settings_on_the_page_are_the_engines(client: SidecarClient):
    status, got = await page(client, "GET", "/context-settings")
    assert status == 200 and got["settings"] == await client.call("context.settings.get", {})
    assert got["presets"]["quality"]["mid_turn_cards"] is True
    changed = await post(client, "/context-settings", {"settings": {"reminders": False, "digest_line": 0.4}})
    assert changed["settings"]["reminders"] is False and changed["settings"]["digest_line"] == 0.4
    engine = await client.call("context.settings.get", {})
    assert engine["reminders"] is False and engine["mode"] == "custom"  # a threshold of its own: mode custom
    back = await post(client, "/context-settings", {"settings": {"mode": "cost", "reminders": None}})
    assert back["settings"]["mode"] == "cost" and back["settings"]["digest_line"] == 0.5
    assert back["settings"]["reminders"] is True
    status, refused_body = await page(client, "POST", "/context-settings", {"settings": {"digest_line": 7}})
    assert status == 400 and "digest_line" in json.dumps(refused_body)
