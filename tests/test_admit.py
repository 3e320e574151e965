"""The one admission path (events/admit.py): memory_remember, extraction and import give the same candidate the
same tombstone, duplicate and secret outcome, against a real sidecar, SQLite file and scripted model server; the
fingerprint and near-duplicate rules are stable over varied texts; and no other module inserts events."""

from __future__ import annotations

import asyncio
import re
import sqlite3
import tempfile
import unicodedata
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from conftest import model_env
from stratagate.capture.store import ensure_namespace, ensure_session
from stratagate.events import store
from stratagate.events.admit import Candidate, Options, admit, fingerprint_of
from stratagate.events.store import Source, near_same
from stratagate.redact import redact
from stratagate.storage.db import Database
from support.model_server import ScriptedModelServer
from support.sidecar import REPO, RpcFailure, SidecarClient
from test_events_extraction import Script, audit_entries, capture, draft, job_note, user_msg

NS = "proj"
SECRET = "ghp_" + "A1b2C3d4" * 4 + "zZ9y"
SIDECAR = REPO / "sidecar" / "stratagate"


@pytest.fixture
def script(model_server: ScriptedModelServer) -> Script:
    s = Script()
    model_server.default = s
    return s


@pytest.fixture
async def client(tmp_path: Path, model_server: ScriptedModelServer, script: Script) -> AsyncIterator[SidecarClient]:
    c = await SidecarClient.start(tmp_path / "memory.db", env=model_env(model_server), args=["--block-turns", "1"])
    yield c
    await c.close()


class Callers:
    """The same text through each of the three admission callers, over JSON-RPC."""

    def __init__(self, client: SidecarClient, script: Script, tmp_path: Path):
        self.client, self.script, self.tmp_path = client, script, tmp_path
        self.turn = 0

    async def remember(self, text: str) -> dict[str, Any]:
        return await self.client.tool(NS, "s1", "memory_remember", {"text": text})

    async def remember_error(self, text: str) -> RpcFailure:
        with pytest.raises(RpcFailure) as err:
            await self.remember(text)
        return err.value

    async def imported(self, text: str) -> dict[str, Any]:
        return await self.client.call(
            "import.run", {"namespace": NS, "text": text + "\n", "format": "text", "allow_duplicate": True}
        )

    async def extracted(self, text: str) -> dict[str, Any]:
        """The extraction job's report (the block.events_extracted audit row) for a block that says ``text``."""
        self.turn += 1
        self.script.answers.append(lambda p: {"events": [draft(text, user_msg(p))]})
        block = await capture(self.client, self.turn, text)
        await job_note(self.client, block)
        (row,) = [e for e in await audit_entries(self.tmp_path)
                  if e["action"] == "block.events_extracted" and e["subject_id"] == block]
        return dict(row["after"])

    async def hits(self, query: str) -> list[dict[str, Any]]:
        args = {"query": query, "include_inactive": True}
        return (await self.client.tool(NS, "s1", "memory_search_events", args))["hits"]


@pytest.fixture
def callers(client: SidecarClient, script: Script, tmp_path: Path) -> Callers:
    return Callers(client, script, tmp_path)


FACT = "The staging database is called orchid and runs PostgreSQL."
EXACT = "THE staging  database is called ORCHID and runs postgresql."  # same fingerprint
NEAR = "the staging database is called orchid, and runs PostgreSQL!"  # same words, other punctuation


async def test_a_forgotten_restatement_is_refused_alike_by_remember_import_and_extraction(callers: Callers):
    first = await callers.remember(FACT)
    await callers.client.tool(NS, "s1", "memory_forget", {"id": first["id"]})
    for text, match in ((EXACT, "exact"), (NEAR, "near")):
        err = await callers.remember_error(text)
        assert err.code == -32602 and err.data == {"tombstone": first["id"]}, match
        assert "memory_restore" in err.message
        report = await callers.imported(text)
        assert report["inserted"] == [] and report["merged"] == [] and report["suppressed"] == 1
        assert report["tombstones"] == [first["id"]]
        extracted = await callers.extracted(text)
        assert extracted["inserted"] == [] and extracted["merged"] == [] and extracted["suppressed"] == 1
    assert [(h["id"], h["status"]) for h in await callers.hits("orchid")] == []  # forgotten is not listed
    suppressed = [e for e in await audit_entries(callers.tmp_path) if e["action"] == "event.suppressed"]
    assert [(e["subject_id"], e["after"]["match"]) for e in suppressed] == [(first["id"], "exact"),
                                                                             (first["id"], "exact"),
                                                                             (first["id"], "near"),
                                                                             (first["id"], "near")]
    assert all("orchid" not in str(e).casefold() for e in suppressed)  # a tombstone's trail holds no content

    # Restored: every caller may state it again, and the restatements merge into it.
    await callers.client.tool(NS, "s1", "memory_restore", {"id": first["id"]})
    assert (await callers.remember(EXACT))["id"] == first["id"]
    assert (await callers.imported(NEAR))["merged"] == [first["id"]]


async def test_an_erased_restatement_is_refused_alike(callers: Callers):
    first = await callers.remember(FACT)
    await callers.client.tool(NS, "s1", "memory_forget", {"id": first["id"], "erase": True})
    err = await callers.remember_error(EXACT)
    assert err.code == -32602 and err.data == {"tombstone": first["id"], "erased": True}
    report = await callers.imported(EXACT)
    assert report["suppressed"] == 1 and report["tombstones"] == [first["id"]] and report["inserted"] == []
    extracted = await callers.extracted(EXACT)
    assert extracted["suppressed"] == 1 and extracted["inserted"] == []
    reasons = {e["after"]["reason"] for e in await audit_entries(callers.tmp_path) if e["action"] == "event.suppressed"}
    assert reasons == {"restates an erased event"}


async def test_duplicates_merge_alike_through_every_caller(callers: Callers):
    base = await callers.remember(FACT)
    # remember: the same words again are nothing new; nearly the same words add a source.
    again = await callers.remember(EXACT)
    assert again["duplicate"] is True and again["id"] == base["id"] and "already remembered" in again["note"]
    near = await callers.remember(NEAR)
    assert near["duplicate"] is True and near["id"] == base["id"] and "merged" in near["note"]
    for text in (EXACT, NEAR):
        assert (await callers.imported(text))["merged"] == [base["id"]]
        extracted = await callers.extracted(text)
        assert extracted["merged"] == [base["id"]] and extracted["inserted"] == []
    # Another number or the opposite statement is another memory, whichever caller says it.
    other = "The staging database is called orchid and runs PostgreSQL 16."
    negated = "The staging database is not called orchid and runs PostgreSQL."
    assert (await callers.remember(other))["duplicate"] is False
    assert len((await callers.imported(negated))["inserted"]) == 1
    sources = (await callers.client.tool(NS, "s1", "memory_expand_event", {"id": base["id"]}))["sources"]
    kinds = [("import" if s["import_id"] else "message" if s["message_id"] else "call") for s in sources]
    assert kinds == ["call", "call", "import", "message", "import", "message"]
    assert [h["id"] for h in await callers.hits("orchid PostgreSQL") if h["status"] == "active"] != []


async def test_a_secret_is_never_stored_and_redacts_to_the_same_memory_through_every_caller(callers: Callers):
    text = f"The CI deploy token for the staging pipeline is {SECRET} until rotation."
    first = await callers.remember(text)
    assert SECRET not in first["narrative"] and "[secret:" in first["narrative"]
    assert (await callers.imported(text))["merged"] == [first["id"]]  # the same placeholder: the same fingerprint
    assert (await callers.extracted(text))["merged"] == [first["id"]]
    raw = Path(callers.tmp_path / "memory.db")
    conn = sqlite3.connect(f"{raw.resolve().as_uri()}?mode=ro", uri=True)
    try:
        for table in ("events", "event_sources", "audit_log", "imports", "messages"):
            rows = conn.execute(f"SELECT * FROM {table}").fetchall()
            assert rows and SECRET not in repr(rows), table
    finally:
        conn.close()


# --- admit() in process: options, hypothesis over texts -----------------------------------------------------


async def _open(path: Path) -> tuple[Database, int, int]:
    db = Database(path)
    await db.open()
    async with db.transaction() as conn:
        ns = await ensure_namespace(conn, "proj")
        sess, _ = await ensure_session(conn, ns, "s1")
    return db, ns, sess


def _options(ns: int, sess: int | None, **kw: Any) -> Options:
    base: dict[str, Any] = {"namespace_id": ns, "session_id": sess, "origin": "extraction", "actor": "model",
                            "on_tombstone": "suppress", "on_exact_duplicate": "merge", "unknown_target": "skip"}
    return Options(**(base | kw))


def _candidate(text: str, **kw: Any) -> Candidate:
    return Candidate(statement=text, mentioned_at="2026-05-01T10:00:00Z", **kw)


async def test_admit_options_decide_only_what_callers_may_differ_on(tmp_path: Path):
    db, ns, sess = await _open(tmp_path / "memory.db")
    try:
        async with db.transaction() as conn:
            first = (await admit(conn, [_candidate(FACT, sources=[Source(call_id="c1", quote=FACT)])],
                                 _options(ns, sess))).outcomes[0]
            assert first.result == "inserted" and first.event is not None and first.sources_added == 1
            kept = (await admit(conn, [_candidate(EXACT, sources=[Source(call_id="c2", quote=EXACT)])],
                                _options(ns, sess, on_exact_duplicate="keep"))).outcomes[0]
            assert kept.result == "duplicate" and kept.sources_added == 0 and kept.event.id == first.event.id
            merged = (await admit(conn, [_candidate(EXACT, sources=[Source(call_id="c2", quote=EXACT)])],
                                  _options(ns, sess))).outcomes[0]
            assert merged.result == "merged" and merged.sources_added == 1
            again = (await admit(conn, [_candidate(EXACT, sources=[Source(call_id="c2", quote=EXACT)])],
                                 _options(ns, sess))).outcomes[0]
            assert again.result == "merged" and again.sources_added == 0  # a source is added once
            with pytest.raises(Exception, match="unknown event evt_99 in supersedes"):
                await admit(conn, [_candidate("Builds use Gradle for the Android app.", supersedes=[99])],
                            _options(ns, sess, unknown_target="error"))
        # The error rolled the caller's transaction back; skip leaves the target out instead.
        async with db.transaction() as conn:
            skipped = (await admit(conn, [_candidate("Builds use Gradle for the Android app.", supersedes=[99])],
                                   _options(ns, sess))).outcomes[0]
            assert skipped.result == "inserted" and skipped.supersedes == []
            # A session-less caller (an import) does not merge into another session's session-scoped event.
            private = (await admit(conn, [_candidate("Lunch orders go through the kitchen bot.", scope="session")],
                                   _options(ns, sess))).outcomes[0]
            public = (await admit(conn, [_candidate("Lunch orders go through the kitchen bot.", scope="user")],
                                  _options(ns, None, origin="import", actor="user"))).outcomes[0]
            assert public.result == "inserted" and public.event.id != private.event.id
        rows = await db.fetchall("SELECT count(*) AS n FROM events WHERE narrative LIKE 'Builds use Gradle%'")
        assert rows[0]["n"] == 1
        jobs = await db.fetchall("SELECT count(*) AS n FROM jobs WHERE kind = 'graph_projection'")
        assert jobs[0]["n"] == 4  # every queued admission that inserted, once
    finally:
        await db.close()


async def test_supersede_and_dispute_come_last_and_a_forgotten_target_stays_forgotten(tmp_path: Path):
    db, ns, sess = await _open(tmp_path / "memory.db")
    try:
        async with db.transaction() as conn:
            old, rival, gone = [
                o.event for o in (await admit(conn, [_candidate("The project uses npm for packages."),
                                                     _candidate("Deploy day for the web app is Friday."),
                                                     _candidate("The office plant is named Gerald the fern.")],
                                              _options(ns, sess))).outcomes
            ]
            assert old and rival and gone
            await store.forget(conn, gone, "agent", None)
            (new,) = (await admit(conn, [_candidate("The project switched to pnpm for packages.",
                                                    supersedes=[old.id, gone.id], conflicts_with=[rival.id])],
                                  _options(ns, sess))).outcomes
            assert new.event is not None and new.event.status == "disputed"
            assert [(s["id"], s["superseded"]) for s in new.supersedes] == [(old.public_id, True),
                                                                             (gone.public_id, False)]
            after = {e: await store.get_event(conn, e) for e in (old.id, rival.id, gone.id)}
            assert [after[e].status for e in (old.id, rival.id, gone.id)] == ["superseded", "disputed", "forgotten"]
    finally:
        await db.close()


WORDS = ["staging", "database", "orchid", "deploy", "pipeline", "runner", "cache", "gateway", "billing", "report",
         "parser", "ledger", "invoice", "kitchen", "garden", "rocket", "violet", "harbor", "window", "engine"]
texts = st.lists(st.sampled_from(WORDS), min_size=3, max_size=10, unique=True).map(" ".join)
spaces = st.sampled_from([" ", "  ", "\t", "\n", " \u3000 ", "\u00a0"])
plain = st.text(st.characters(categories=["L", "N", "P", "S", "Zs"]), max_size=80)


@settings(max_examples=150, deadline=None)
@given(plain, st.lists(spaces, min_size=1, max_size=8))
def test_fingerprint_ignores_case_folding_spacing_compatibility_forms_and_redaction(text: str, gaps: list[str]):
    words = text.split()
    respaced = " " + "".join(w + gaps[i % len(gaps)] for i, w in enumerate(words))
    fp = fingerprint_of(text)
    assert fingerprint_of(respaced) == fp
    assert fingerprint_of(text.casefold()) == fp  # (not upper(): 'ı'.upper() is 'I', another letter)
    assert fingerprint_of(unicodedata.normalize("NFKC", text)) == fp
    assert fingerprint_of(redact(text)) == fp  # redaction is idempotent: stored text fingerprints the same
    assert re.fullmatch(r"sha256:[0-9a-f]{64}", fp)


@settings(max_examples=150, deadline=None)
@given(texts, st.sampled_from(["", "!", ".", "?", " ..."]), st.booleans())
def test_near_duplicates_are_stable_under_punctuation_and_case_but_not_numbers_or_negation(
    text: str, tail: str, upper: bool
):
    variant = (text.upper() if upper else text.capitalize()) + tail
    assert near_same(text, variant) and near_same(variant, text)
    assert not near_same(text, f"{text} 42") and not near_same(f"{text} 7", f"{text} 8")
    assert not near_same(text, f"not {text}")


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(texts, st.sampled_from(["!", ".", ""]), st.booleans())
def test_admitting_a_variant_reaches_the_same_event_and_a_forgotten_one_never_returns(
    text: str, tail: str, upper: bool
):
    variant = (text.upper() if upper else text) + tail

    async def run() -> None:
        with tempfile.TemporaryDirectory() as tmp:
            db, ns, sess = await _open(Path(tmp) / "memory.db")
            try:
                async with db.transaction() as conn:
                    (first,) = (await admit(conn, [_candidate(text)], _options(ns, sess))).outcomes
                    (second,) = (await admit(conn, [_candidate(variant)], _options(ns, sess))).outcomes
                    assert second.result == "merged" and second.event.id == first.event.id
                    await store.forget(conn, first.event, "agent", None)
                    for opts in (_options(ns, sess), _options(ns, None, origin="import", actor="user")):
                        (again,) = (await admit(conn, [_candidate(variant, scope="user")], opts)).outcomes
                        assert again.result == "suppressed" and again.tombstone == first.event.id
            finally:
                await db.close()

    asyncio.run(run())


# --- one path ----------------------------------------------------------------------------------------------------


def _code_lines(pattern: str) -> dict[str, list[int]]:
    """Sidecar modules (relative paths) with a line matching ``pattern``, and those lines."""
    found: dict[str, list[int]] = {}
    for path in sorted(SIDECAR.rglob("*.py")):
        for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            if re.search(pattern, line):
                found.setdefault(path.relative_to(SIDECAR).as_posix(), []).append(n)
    return found


def test_events_are_inserted_only_through_admit():
    # The SQL lives in the event storage module (and migrations); only admit.py calls its insert functions.
    assert set(_code_lines(r"INSERT\s+INTO\s+events\b")) <= {"events/store.py"}
    assert set(_code_lines(r"INSERT\s+INTO\s+event_sources\b")) <= {"events/store.py"}
    assert set(_code_lines(r"\binsert_(events?|sources|new_sources)\(")) == {"events/admit.py", "events/store.py"}
    # The one call site that queues an admitted event's graph projection (its batches; their jobs are queued there
    # too, or returned by the extraction handler as pipeline follow-ups).
    queue_calls = _code_lines(r"\b(add_batches|enqueue_projection)\(")
    assert set(queue_calls) == {"events/admit.py", "events/projection_queue.py"}
    assert len(queue_calls["events/admit.py"]) == 1
