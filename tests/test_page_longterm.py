"""The Memory page's long-term reads over JSON-RPC ``page.request`` in a real sidecar on a real SQLite file, seeded in
zero-model mode (STRATAGATE_MODEL_ROUTE=none): events with their links (npm → pnpm, a disputed pair), mention vs
occurrence time, sources down to the exact message, search and filters, the graph as of a date, evidence receipts
and assessments, the audit log, imports, namespace isolation and bad input."""

from __future__ import annotations

import asyncio
import json
import re
import shutil
import sqlite3
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from conftest import turn
from support.sidecar import SidecarClient

A = "project:shop:0123456789abcdef"
B = "project:other:fedcba9876543210"
ENV = {"STRATAGATE_MODEL_ROUTE": "none", "STRATAGATE_DENSE": "off"}
ARGS = ["--block-turns", "1"]

NPM, PNPM = "We use npm for this repo.", "Let's switch to pnpm, npm is too slow."
JEST, NO_JEST = "We use Jest for tests.", "We don't use Jest."
IMPORT_MD = "# Memories\n\n- The CI runs on GitHub Actions.\n- Releases are tagged every Friday.\n"


async def page(c: SidecarClient, path: str, method: str = "GET", body: Any = None, **query: Any) -> dict[str, Any]:
    """One page request; the reply's status and body."""
    params: dict[str, Any] = {"method": method, "path": path, "query": {k: str(v) for k, v in query.items()}}
    if body is not None:
        params["body"] = body
    return await c.call("page.request", params)


async def ok(c: SidecarClient, path: str, **query: Any) -> dict[str, Any]:
    reply = await page(c, path, **query)
    assert reply["status"] == 200, reply
    return reply["body"]


async def _converse(c: SidecarClient, ns: str, pairs: list[tuple[str, str]], session: str = "s1") -> None:
    """One turn (= one block) at a time, each settled before the next, on the day given with it."""
    for i, (text, day) in enumerate(pairs, 1):
        when = {"started_at": f"{day}T10:00:00Z", "ended_at": f"{day}T10:00:30Z"}
        await c.call("turn.capture", turn(i, namespace=ns, session=session, user=text, assistant="Noted.", **when))
        await c.settled()


async def _seed(db: Path) -> dict[str, Any]:
    c = await SidecarClient.start(db, env=ENV, args=ARGS)
    try:
        await _converse(c, A, [(NPM, "2026-05-01"), (PNPM, "2026-05-10"), (JEST, "2026-05-11"),
                               (NO_JEST, "2026-05-12")])
        deploy = await c.tool(A, "s2", "memory_remember", {
            "text": "We deployed the shop to Frankfurt.", "type": "event", "when": "2026-04-20",
            "happened": "occurred"})
        tabs = await c.tool(A, "s2", "memory_remember", {"text": "I prefer tabs over spaces.", "type": "preference",
                                                         "scope": "user"})
        gone = await c.tool(A, "s1", "memory_remember", {"text": "The staging box is called kestrel."})
        await c.tool(A, "s1", "memory_forget", {"id": gone["id"], "reason": "wrong box"})
        await c.call("import.run", {"namespace": A, "text": IMPORT_MD, "format": "markdown", "scope": "project",
                                    "source_name": "notes.md"})
        # Evidence: the agent searched, judged the pnpm event sufficient and answered with it.
        found = await c.tool(A, "s1", "memory_search_events", {"query": "package manager pnpm"})
        pnpm_id = next(h["id"] for h in found["hits"] if h["title"] == PNPM)
        await c.tool(A, "s1", "memory_assess", {
            "batch_id": found["batch_id"], "verdict": "sufficient", "evidence_refs": [pnpm_id],
            "fit": "It names the package manager.", "missing": "", "next_strategy": "answer"})
        await c.tool(A, "s1", "memory_record_use", {"batch_id": found["batch_id"], "evidence_refs": [pnpm_id]})

        # Namespace B: its own events, graph, import, receipt, and a user-tier memory (shared tier: never on A's page).
        await _converse(c, B, [("We use yarn for this repo.", "2026-05-02"),
                               ("Let's switch to bun, yarn is too slow.", "2026-05-09")], session="b1")
        await c.tool(B, "b1", "memory_remember", {"text": "I like dark mode in every editor.", "type": "preference",
                                                  "scope": "user"})
        await c.call("import.run", {"namespace": B, "text": "- The B team deploys on Mondays.\n",
                                    "format": "markdown", "scope": "project"})
        b_found = await c.tool(B, "b1", "memory_search_events", {"query": "bun"})
        b_ref = b_found["hits"][0]["id"]
        await c.tool(B, "b1", "memory_assess", {
            "batch_id": b_found["batch_id"], "verdict": "sufficient", "evidence_refs": [b_ref], "fit": "bun",
            "missing": "", "next_strategy": "answer"})
        await c.tool(B, "b1", "memory_record_use", {"batch_id": b_found["batch_id"], "evidence_refs": [b_ref]})
        # Across the user tier: B's user-tier memory supersedes A's, and A's agent relies on B's user-tier memory.
        spaces = await c.tool(B, "b1", "memory_remember", {"text": "I prefer spaces over tabs now.",
                                                           "type": "preference", "scope": "user",
                                                           "supersedes": [tabs["id"]]})
        theme = await c.tool(A, "s3", "memory_search_events", {"query": "which editor theme"})
        dark = next(h["id"] for h in theme["hits"] if h.get("from_namespace") == B)
        await c.tool(A, "s3", "memory_assess", {
            "batch_id": theme["batch_id"], "verdict": "sufficient", "evidence_refs": [dark],
            "fit": "It says the theme.", "missing": "", "next_strategy": "answer"})
        await c.tool(A, "s3", "memory_record_use", {"batch_id": theme["batch_id"], "evidence_refs": [dark]})
        await c.settled()
        return {"deploy": deploy["id"], "tabs": tabs["id"], "forgotten": gone["id"], "pnpm": pnpm_id,
                "spaces": spaces["id"], "dark": dark}
    finally:
        await c.close()


@pytest.fixture(scope="module")
def seeded_db(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, Any]]:
    """Seeded once per module (a dozen turns with their jobs); each test opens a copy."""
    db = tmp_path_factory.mktemp("seed") / "memory.db"
    ids = asyncio.run(_seed(db))
    return db, ids


@pytest.fixture
async def seeded(seeded_db: tuple[Path, dict[str, Any]], tmp_path: Path) -> AsyncIterator[tuple[SidecarClient,
                                                                                                 dict[str, Any]]]:
    src, ids = seeded_db
    for suffix in ("", "-wal"):
        if Path(f"{src}{suffix}").exists():
            shutil.copy(f"{src}{suffix}", tmp_path / f"memory.db{suffix}")
    c = await SidecarClient.start(tmp_path / "memory.db", env=ENV, args=ARGS)
    yield c, ids | {"db": tmp_path / "memory.db"}
    await c.close()


async def all_events(c: SidecarClient, ns: str = A) -> dict[str, dict[str, Any]]:
    body = await ok(c, "/events", namespace=ns, status="active,superseded,disputed,forgotten,archived", limit=200)
    return {e["title"]: e for e in body["events"]}


# --- events --------------------------------------------------------------------------------------------------------


async def test_the_npm_pnpm_pair_links_both_ways(seeded):
    c, _ = seeded
    events = await all_events(c)
    npm, pnpm = events[NPM], events[PNPM]
    assert npm["status"] == "superseded" and pnpm["status"] == "active" and pnpm["type"] == "change"
    assert npm["successor"] == {"id": pnpm["id"], "title": PNPM, "status": "active"}
    assert pnpm["replaces"] == [{"id": npm["id"], "title": NPM}] and npm["replaces"] == []
    assert pnpm["successor"] is None and pnpm["origin"] == "extraction" and pnpm["session"] == "s1"
    assert re.fullmatch(r"blk_\d+", pnpm["block"]) and pnpm["import"] is None
    detail = await ok(c, "/event", namespace=A, id=npm["id"])
    assert detail["successor"]["id"] == pnpm["id"]
    assert [h["action"] for h in detail["history"]] == ["event.extraction", "event.superseded"]  # oldest first
    assert detail["history"][1]["after"]["successor_id"] == pnpm["id"]


async def test_a_disputed_pair_names_each_other(seeded):
    c, _ = seeded
    body = await ok(c, "/events", namespace=A, status="disputed")
    by_title = {e["title"]: e for e in body["events"]}
    assert set(by_title) == {JEST, NO_JEST} and body["total"] == 2
    jest, no_jest = by_title[JEST], by_title[NO_JEST]
    assert jest["disputed_with"] == [{"id": no_jest["id"], "title": NO_JEST}]
    assert no_jest["disputed_with"] == [{"id": jest["id"], "title": JEST}]
    # Nothing else is disputed with anything.
    assert all(e["disputed_with"] == [] for e in (await all_events(c)).values() if e["status"] != "disputed")


async def test_mention_time_and_occurrence_time_are_apart(seeded):
    c, ids = seeded
    deploy = next(e for e in (await all_events(c)).values() if e["id"] == ids["deploy"])
    assert deploy["happened_start"].startswith("2026-04-20") and deploy["time_original"] == "2026-04-20"
    assert deploy["time_status"] == "occurred" and deploy["mentioned_at"] > deploy["happened_start"]
    npm = (await all_events(c))[NPM]
    assert npm["mentioned_at"] == "2026-05-01T10:00:00.000Z" and npm["happened_start"] is None


async def test_sources_resolve_to_the_message_holding_the_quote(seeded):
    c, ids = seeded
    events = await all_events(c)
    conn = sqlite3.connect(f"file:{ids['db']}?mode=ro", uri=True)
    try:
        for title, turn_no in ((NPM, 1), (PNPM, 2), (NO_JEST, 4)):
            detail = await ok(c, "/event", namespace=A, id=events[title]["id"])
            # The user's statement; an agreeing assistant reply in the same turn may support it as a second source.
            src, *support = detail["sources"]
            assert all((s["turn"], s["role"]) == (turn_no, "assistant") for s in support), support
            assert (src["session"], src["turn"], src["role"]) == ("s1", turn_no, "user")
            key = int(src["message"].removeprefix("msg_"))
            content, at = conn.execute("SELECT content, created_at FROM messages WHERE id = ?", (key,)).fetchone()
            assert src["quote"] == title and src["quote"] in content and src["at"] == at
    finally:
        conn.close()
    # A remembered event's source is the tool call (no call id given here), not a message.
    remembered = await ok(c, "/event", namespace=A, id=ids["deploy"])
    (src,) = remembered["sources"]
    assert src["message"] is None and src["quote"] == "We deployed the shop to Frankfurt." and src["at"]
    assert remembered["narrative"] == "We deployed the shop to Frankfurt."


async def test_search_and_filters(seeded):
    c, ids = seeded
    everything = await all_events(c)
    default = await ok(c, "/events", namespace=A)
    assert default["total"] == len(everything)  # nothing archived: the default is every other status
    assert {e["status"] for e in default["events"]} == {"active", "superseded", "disputed", "forgotten"}

    found = await ok(c, "/events", namespace=A, q="Frankfurt")
    assert [e["id"] for e in found["events"]] == [ids["deploy"]] and found["total"] == 1
    npm_hits = await ok(c, "/events", namespace=A, q="npm")
    assert {everything[NPM]["id"], everything[PNPM]["id"]} <= {e["id"] for e in npm_hits["events"]}
    assert (await ok(c, "/events", namespace=A, q="kestrel"))["events"][0]["id"] == ids["forgotten"]
    assert (await ok(c, "/events", namespace=A, q="kestrel", status="active"))["total"] == 0
    assert (await ok(c, "/events", namespace=A, q="?!"))["total"] == 0  # nothing searchable: nothing matches

    forgotten = await ok(c, "/events", namespace=A, status="forgotten")
    assert [e["id"] for e in forgotten["events"]] == [ids["forgotten"]]
    changes = await ok(c, "/events", namespace=A, type="change")
    assert [e["title"] for e in changes["events"]] == [PNPM]
    user = await ok(c, "/events", namespace=A, scope="user")
    assert [(e["id"], e["tier"]) for e in user["events"]] == [(ids["tabs"], "user")]
    s2 = await ok(c, "/events", namespace=A, session="s2")
    assert {e["id"] for e in s2["events"]} == {ids["deploy"], ids["tabs"]}
    imported = [e for e in everything.values() if e["origin"] == "import"]
    assert len(imported) == 2 and all(re.fullmatch(r"imp_\d+", e["import"]) for e in imported)

    pages = [await ok(c, "/events", namespace=A, limit=3, offset=o) for o in range(0, len(everything), 3)]
    assert all(p["total"] == len(everything) for p in pages)
    listed = [e["id"] for p in pages for e in p["events"]]
    assert listed == [e["id"] for e in default["events"]] and len(set(listed)) == len(everything)
    keys = [int(i.removeprefix("evt_")) for i in listed]
    assert keys == sorted(keys, reverse=True)  # newest first


# --- graph ---------------------------------------------------------------------------------------------------------


async def test_the_graph_as_of_a_date_before_and_after_the_change(seeded):
    c, _ = seeded

    def uses(graph: dict[str, Any]) -> dict[str, dict[str, Any]]:
        return {f["object"]: f for f in graph["facts"] if f["predicate"] == "uses"}

    before = await ok(c, "/graph", namespace=A, as_of="2026-05-05", history="true")
    after = await ok(c, "/graph", namespace=A, as_of="2026-05-11", history="true")
    assert before["as_of"] == "2026-05-05T23:59:59.999Z"
    old, new = uses(before), uses(after)
    assert (old["npm"]["current"], old["pnpm"]["current"]) == (True, False)
    assert (new["npm"]["current"], new["pnpm"]["current"]) == (False, True)
    # The windows meet at the change: npm until pnpm was said, pnpm since.
    assert old["npm"]["valid_to"] == old["pnpm"]["valid_from"] == "2026-05-10T10:00:00.000Z"
    assert (old["npm"]["status"], old["npm"]["status_now"]) == ("active", "superseded")
    assert new["npm"]["status"] == "superseded"
    nodes = {n["id"]: n["name"] for n in before["nodes"]}
    drawn = {(nodes[e["source"]], e["predicate"], nodes[e["target"]]) for e in before["edges"]}
    assert ("shop", "uses", "npm") in drawn and ("shop", "uses", "pnpm") not in drawn
    nodes = {n["id"]: n["name"] for n in after["nodes"]}
    drawn = {(nodes[e["source"]], e["predicate"], nodes[e["target"]]) for e in after["edges"]}
    assert ("shop", "uses", "pnpm") in drawn and ("shop", "uses", "npm") not in drawn
    # Without history only what holds is listed; the events behind each fact are named.
    now = await ok(c, "/graph", namespace=A)
    assert all(f["current"] for f in now["facts"]) and "npm" not in uses(now)
    events = await all_events(c)
    assert uses(now)["pnpm"]["events"][0] == events[PNPM]["id"]
    assert {n["name"]: n["degree"] for n in now["nodes"]}["shop"] >= 1
    # The node ids are what memory_expand_graph_node takes.
    pnpm_node = next(n for n in now["nodes"] if n["name"] == "pnpm")
    expanded = await c.tool(A, "s1", "memory_expand_graph_node", {"node": pnpm_node["id"]})
    assert expanded["name"] == "pnpm"
    only = await ok(c, "/graph", namespace=A, q="jest")
    assert {f["object"] for f in only["facts"]} == {"jest"}


# --- evidence ------------------------------------------------------------------------------------------------------


async def test_evidence_receipts_and_assessments(seeded):
    c, ids = seeded
    body = await ok(c, "/evidence", namespace=A, session="s1")
    assert body["total"] == 1 and body["assessments_total"] == 1
    (receipt,) = body["receipts"]
    assert re.fullmatch(r"rcp_\d+", receipt["id"]) and receipt["session"] == "s1"
    assert receipt["answer"].startswith("1 of 1 refs counted")
    assert receipt["uses"] == [{"ref": ids["pnpm"], "kind": "event", "title": PNPM, "verdict": "sufficient",
                                "counted": True, "note": None}]
    (assessment,) = body["assessments"]
    assert assessment["batch"] == receipt["batch"] and assessment["verdict"] == "sufficient"
    assert assessment["refs"] == [ids["pnpm"]] and assessment["tool"] == "memory_search_events"
    assert "It names the package manager." in assessment["note"]
    assert (await ok(c, "/evidence", namespace=A, session="s2"))["total"] == 0
    every = await ok(c, "/evidence", namespace=A)
    assert every["total"] == 2 and every["receipts"][1] == receipt  # newest first
    assert [r["id"] for r in (await ok(c, "/evidence", namespace=A, limit=1, offset=1))["receipts"]] == [receipt["id"]]


async def test_links_across_the_user_tier_never_name_the_other_namespace(seeded):
    """A's user-tier event superseded by B's, and A's receipt relying on B's user-tier memory: A's page shows that
    they happened, never B's ids or words."""
    c, ids = seeded
    tabs = next(e for e in (await all_events(c)).values() if e["id"] == ids["tabs"])
    assert tabs["status"] == "superseded" and tabs["successor"] is None
    detail = await ok(c, "/event", namespace=A, id=ids["tabs"])
    superseded = next(h for h in detail["history"] if h["action"] == "event.superseded")
    assert superseded["after"]["successor_id"] == "[another namespace]"
    text = json.dumps(detail) + json.dumps(await ok(c, "/audit", namespace=A, limit=200))
    assert ids["spaces"] not in text and "spaces over tabs" not in text
    (receipt,) = (await ok(c, "/evidence", namespace=A, session="s3"))["receipts"]
    assert receipt["uses"] == [{"ref": "[another namespace]", "kind": "event", "title": None,
                                "verdict": "sufficient", "counted": True, "note": None}]
    evidence = json.dumps(await ok(c, "/evidence", namespace=A))
    assert ids["dark"] not in evidence and "dark mode" not in evidence
    # B's own page names them.
    assert ids["spaces"] in json.dumps(await ok(c, "/events", namespace=B))


# --- audit ---------------------------------------------------------------------------------------------------------


async def test_audit_newest_first_with_paging_and_filters(seeded):
    c, ids = seeded
    first = await ok(c, "/audit", namespace=A, limit=7)
    got = [e["id"] for e in first["entries"]]
    assert len(got) == 7 and got == sorted(got, reverse=True) and first["next_before_id"] == got[-1]
    second = await ok(c, "/audit", namespace=A, limit=7, before_id=first["next_before_id"])
    assert second["entries"] and max(e["id"] for e in second["entries"]) < min(got)
    everything, cursor = [], None
    while True:
        more = await ok(c, "/audit", namespace=A, limit=200, **({"before_id": cursor} if cursor else {}))
        everything += more["entries"]
        if (cursor := more["next_before_id"]) is None:
            break
    assert [e["id"] for e in everything][:14] == got + [e["id"] for e in second["entries"]]

    about = await ok(c, "/audit", namespace=A, subject=ids["forgotten"])
    assert [e["action"] for e in about["entries"]] == ["event.forgotten", "event.remember"]
    assert about["entries"][0]["undo"] == {"label": f"Restore {ids['forgotten']}"}
    assert about["entries"][0]["after"]["status"] == "forgotten" and about["entries"][1]["undo"] is None
    # The event's title rides along, for the page's sentence ("You forgot evt_3 'We use npm'").
    title = (await ok(c, "/event", namespace=A, id=ids["forgotten"]))["title"]
    assert title and {e["subject_title"] for e in about["entries"]} == {title}
    assert all(e["subject_title"] is None for e in first["entries"] if e["subject_type"] != "event")
    agent = await ok(c, "/audit", namespace=A, actor="agent", limit=200)
    assert agent["entries"] and {e["actor"] for e in agent["entries"]} == {"agent"}


async def test_an_undone_entry_offers_no_undo(seeded):
    """page.undo writes an ``audit.undone`` entry naming the entry it reversed: that one then shows who undid it and
    no Undo any more; the restore it wrote offers its own undo."""
    c, ids = seeded
    forgot = (await ok(c, "/audit", namespace=A, subject=ids["forgotten"]))["entries"][0]
    assert forgot["action"] == "event.forgotten" and forgot["undo"] and forgot["undone_by"] is None
    reply = await page(c, "/undo", method="POST", body={"namespace": A, "audit_id": forgot["id"]})
    assert reply["status"] == 200, reply
    entries = (await ok(c, "/audit", namespace=A, subject=ids["forgotten"]))["entries"]
    again = next(e for e in entries if e["id"] == forgot["id"])
    assert again["undo"] is None and again["undone_by"] in reply["body"]["audit_ids"]
    restored = entries[0]
    assert restored["action"] == "event.restored" and restored["undo"] == {"label": f"Forget {ids['forgotten']} again"}
    newest = (await ok(c, "/audit", namespace=A, limit=5))["entries"]
    undone = next(e for e in newest if e["action"] == "audit.undone")
    assert undone["id"] == again["undone_by"] and undone["undo"] is None


# --- imports -------------------------------------------------------------------------------------------------------


async def test_imports_list(seeded):
    c, _ = seeded
    (imp,) = (await ok(c, "/imports", namespace=A))["imports"]
    assert imp["source_name"] == "notes.md" and imp["status"] == "active" and imp["namespace"] == A
    assert imp == (await c.call("import.list", {"namespace": A}))["imports"][0]
    imported = [e for e in (await all_events(c)).values() if e["origin"] == "import"]
    assert {e["import"] for e in imported} == {imp["id"]}


# --- isolation and bad input ---------------------------------------------------------------------------------------

_B_IDS: dict[int, tuple[set[str], set[str]]] = {}
REF = re.compile(r"\b(?:evt|blk|msg|nod|fct|imp|rb|asm|rcp)_\d+\b")


async def _b_ids(c: SidecarClient) -> set[str]:
    """Every public id of namespace B's own rows, read through B's page."""
    found: set[str] = set()
    for path, query in (("/events", {"status": "active,superseded,disputed,forgotten,archived", "limit": 200}),
                        ("/graph", {"history": "true"}), ("/evidence", {}), ("/imports", {}),
                        ("/audit", {"limit": 200})):
        found |= set(REF.findall(json.dumps(await ok(c, path, namespace=B, **query))))
    return found


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.data())
async def test_no_id_of_another_namespace_ever_shows(seeded, data: st.DataObject):
    c, _ = seeded
    if id(c) not in _B_IDS:  # the examples share one sidecar (and its database): read B's ids once
        a_ids = set(REF.findall(json.dumps(await ok(c, "/audit", namespace=A, limit=200))))
        _B_IDS[id(c)] = (b_ids := await _b_ids(c)), b_ids - a_ids
    b_ids, only_b = _B_IDS[id(c)]
    assert any(i.startswith("evt_") for i in only_b) and any(i.startswith("nod_") for i in only_b)
    words = st.sampled_from(["yarn", "bun", "dark mode", "npm", "pnpm", "Mondays", "editor", "slow", "jest", ""])
    route = data.draw(st.sampled_from(["/events", "/event", "/graph", "/evidence", "/audit", "/imports"]))
    query: dict[str, Any] = {"namespace": A}
    if route == "/events":
        statuses = st.lists(st.sampled_from(["active", "superseded", "disputed", "forgotten", "archived"]),
                            min_size=1, unique=True)
        query |= {"q": data.draw(words), "limit": data.draw(st.integers(1, 200)),
                  "offset": data.draw(st.integers(0, 5)), "status": ",".join(data.draw(statuses))}
    elif route == "/event":
        query["id"] = data.draw(st.sampled_from(sorted(i for i in b_ids if i.startswith("evt_"))))
    elif route == "/graph":
        query |= {"q": data.draw(words), "history": data.draw(st.booleans()),
                  "as_of": data.draw(st.sampled_from(["2026-05-03", "2026-05-09", "2026-05-10T12:00:00Z", ""]))}
    elif route == "/evidence":
        query["session"] = data.draw(st.sampled_from(["s1", "b1", "s2"]))
    elif route == "/audit":
        query |= {"subject": data.draw(st.sampled_from(sorted(b_ids))), "limit": data.draw(st.integers(1, 200))}
    reply = await page(c, route, **{k: v for k, v in query.items() if v != ""})
    if route == "/event":
        assert reply["status"] == 404  # another namespace's event is unknown here
    else:
        assert reply["status"] == 200, reply
    asked = set(REF.findall(json.dumps(query)))  # a 404 may name the id it was asked for
    leaked = set(REF.findall(json.dumps(reply["body"]))) & only_b - asked
    assert not leaked, (route, query, leaked)
    assert "dark mode" not in json.dumps(reply["body"]) and "yarn" not in json.dumps(reply["body"])


BAD = [
    ("/events", {"namespace": "project:nope:0"}, 404, "unknown namespace"),
    ("/event", {"namespace": "project:nope:0", "id": "evt_1"}, 404, "unknown namespace"),
    ("/graph", {"namespace": "project:nope:0"}, 404, "unknown namespace"),
    ("/evidence", {"namespace": "project:nope:0"}, 404, "unknown namespace"),
    ("/audit", {"namespace": "project:nope:0"}, 404, "unknown namespace"),
    ("/imports", {"namespace": "project:nope:0"}, 404, "unknown namespace"),
    ("/events", {}, 400, "namespace"),
    ("/events", {"namespace": A, "status": "active,gone"}, 400, "status"),
    ("/events", {"namespace": A, "limit": "0"}, 400, "limit"),
    ("/events", {"namespace": A, "limit": "201"}, 400, "limit"),
    ("/events", {"namespace": A, "offset": "-1"}, 400, "offset"),
    ("/events", {"namespace": A, "type": "rumour"}, 400, "type"),
    ("/events", {"namespace": A, "colour": "red"}, 400, "colour"),
    ("/event", {"namespace": A, "id": "blk_1"}, 400, "id"),
    ("/event", {"namespace": A, "id": "evt_999999"}, 404, "evt_999999"),
    ("/graph", {"namespace": A, "as_of": "around easter"}, 400, "as_of"),
    ("/graph", {"namespace": A, "history": "maybe"}, 400, "history"),
    ("/audit", {"namespace": A, "actor": "robot"}, 400, "actor"),
    ("/audit", {"namespace": A, "before_id": "x"}, 400, "before_id"),
]


async def test_bad_input_is_one_clear_error(seeded):
    c, _ = seeded  # one sidecar for every case (a start per case costs more than the cases)
    for path, query, status, needle in BAD:
        reply = await c.call("page.request", {"method": "GET", "path": path, "query": query})
        assert reply["status"] == status, (path, query, reply)
        assert needle in json.dumps(reply["body"]), (path, query, reply)
        assert set(reply["body"]) <= {"error", "details"} and reply["body"]["error"]


async def test_the_read_routes_refuse_post(seeded):
    c, _ = seeded
    reply = await page(c, "/events", method="POST", body={"namespace": A})
    assert reply["status"] == 405 and reply["body"]["allow"] == ["GET"]
