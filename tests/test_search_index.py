"""Event search's derived index (storage/term_index.py, storage/term_feed.py) is never a second truth: it is
rebuilt when missing or of another database, removed by an erase; it catches up with events
written after its watermark (by this connection or another process); and after a process writing it is killed with
SIGKILL, the reopened index answers exactly what a fresh rebuild from SQLite answers. Real SQLite files."""

from __future__ import annotations

import asyncio
import os
import shutil
import signal
import subprocess
import sys
from datetime import UTC, datetime
from pathlib import Path

from stratagate.capture.store import ensure_namespace, ensure_session
from stratagate.events import store
from stratagate.events.admit import Candidate, Options, admit
from stratagate.events.store import Source
from stratagate.storage import term_feed, term_index
from stratagate.storage.db import Database
from stratagate.storage.term_index import TermIndex

REPO = Path(__file__).resolve().parents[1]
QUERIES = [["alpha"], ["bravo", "charlie"], ["delta", "echo", "alpha"], ["note"], ["missing"]]


async def remember(db: Database, texts: list[str], namespace: str = "proj") -> None:
    async with db.transaction() as conn:
        ns = await ensure_namespace(conn, namespace)
        sess, _ = await ensure_session(conn, ns, "s1")
        options = Options(namespace_id=ns, session_id=sess, origin="remember", actor="agent", on_tombstone="refuse",
                          on_exact_duplicate="keep", unknown_target="error")
        for t in texts:
            await admit(conn, [Candidate(statement=t, scope="project", mentioned_at=datetime.now(UTC),
                                         sources=[Source(call_id="c", quote=t)])], options)


def text(i: int) -> str:
    words = ["alpha" if i % 2 else "bravo", "charlie" if i % 3 == 0 else "delta", "echo" * (i % 4 == 0) or "golf"]
    return f"note {i} about " + " ".join(words) + f" and item{i}."


async def answers(d: Database) -> list[list[int] | None]:
    """The ranked event ids of each query, once every change is committed to the index (events not yet committed
    are scored with an approximation of tantivy's BM25: near ties may order differently). Not their scores: a
    replaced document counts in tantivy's statistics until its segment is merged, as in Lucene."""
    assert await term_feed.EVENTS.flush(d.reader)
    out = []
    for q in QUERIES:
        found = await term_feed.EVENTS.ranked(d.reader, q, 8)
        out.append(None if found is None else [event_id for event_id, _ in found])
    return out


async def rebuilt_answers(path: Path) -> list[list[int] | None]:
    """What a fresh rebuild from SQLite answers (the index directory removed, a new connection)."""
    shutil.rmtree(path.with_name(path.name + "-search"))
    fresh = Database(path)
    await fresh.open()
    try:
        return await answers(fresh)
    finally:
        await fresh.close()


def index_dir(path: Path) -> Path:
    return path.with_name(path.name + "-search") / "events"


async def test_built_when_missing_and_rebuilt_when_removed(db: Database, tmp_path: Path):
    await remember(db, [text(i) for i in range(20)])
    first = await answers(db)
    assert all(a is not None for a in first[:4]) and first[4] == []
    assert index_dir(db.path).is_dir() and oct(index_dir(db.path).parent.stat().st_mode & 0o777) == "0o700"
    # The best 'alpha' events hold it (odd texts: even ids), ties newest first.
    alpha = await term_feed.EVENTS.ranked(db.reader, ["alpha"], 8)
    assert alpha is not None and {i % 2 for i, _ in alpha} == {0}
    assert [i for i, _ in alpha] == sorted((i for i, _ in alpha), reverse=True)
    assert [r for _, r in alpha] == sorted(r for _, r in alpha)
    # Removed under a running connection: the next query rebuilds it with the same answers.
    shutil.rmtree(index_dir(db.path))
    assert await answers(db) == first
    assert TermIndex.open(index_dir(db.path)) is not None


async def test_events_past_the_watermark_are_found_then_committed(db: Database, tmp_path: Path):
    await remember(db, [text(i) for i in range(10)])
    await answers(db)
    built = TermIndex.open(index_dir(db.path))
    assert built is not None
    # Written by another connection (as another process would): found before they are committed to the index.
    other = Database(db.path)
    await other.open()
    try:
        await remember(other, ["a zulu note", "zulu again and zulu"])
    finally:
        await other.close()
    zulu = await term_feed.EVENTS.ranked(db.reader, ["zulu"], 8)
    assert zulu is not None and len(zulu) == 2 and TermIndex.open(index_dir(db.path)).mark.seq == built.mark.seq
    # A full batch is committed: the watermark moves to the last change, and answers equal a rebuild's.
    await remember(db, [text(i) for i in range(10, 10 + term_feed.BATCH)])
    before = await answers(db)
    last = await db.reader.execute_fetchall("SELECT max(seq) FROM search_changes")
    committed = TermIndex.open(index_dir(db.path))
    assert committed is not None and committed.mark.seq == last[0][0] > built.mark.seq
    assert before == await rebuilt_answers(db.path)


async def test_an_open_index_writes_nothing_when_another_handle_commits(db: Database, tmp_path: Path):
    """Tantivy's default reader reloads on a commit from a polling thread of its own and recreates its meta lock
    file meanwhile: in a directory being removed (a discard, a rebuild's swap, a test's rmtree) that file appeared
    after the removal had listed the directory ("Directory not empty"). Readers reload only when asked."""
    await remember(db, [text(i) for i in range(10)])
    await answers(db)
    handle = TermIndex.open(index_dir(db.path))
    assert handle is not None and handle.top(["alpha"], 4)
    await remember(db, [text(i) for i in range(10, 10 + term_feed.BATCH)])
    await answers(db)  # committed by the feed's own handle
    for lock in index_dir(db.path).glob(".*.lock"):
        lock.unlink()
    files = sorted(p.name for p in index_dir(db.path).iterdir())
    # A negative observation, bounded: tantivy's watcher polls every 500 ms, so a reload would show within this.
    deadline = asyncio.get_running_loop().time() + 1.5
    while asyncio.get_running_loop().time() < deadline:
        assert sorted(p.name for p in index_dir(db.path).iterdir()) == files
        await asyncio.sleep(0.05)
    assert handle.top(["alpha"], 4)  # the old handle still answers from what it opened


async def test_a_rewritten_or_deleted_event_is_applied_in_place(db: Database, tmp_path: Path):
    await remember(db, [text(i) for i in range(12)])
    hit = await term_feed.EVENTS.ranked(db.reader, ["item5"], 8)
    assert hit is not None and [i for i, _ in hit] == [6]  # the sixth event remembered
    # A redaction-like rewrite (any change the triggers feed): the old terms no longer match, the new ones do.
    async with db.transaction() as conn:
        await conn.execute("INSERT INTO privileged_writes(operation, started_at) VALUES ('redact', 'now')")
        await conn.execute("UPDATE events SET title = 'x', summary = 'x', narrative = 'x' WHERE id = 6")
        await conn.execute("DELETE FROM event_fts WHERE rowid = 6")
        await conn.execute("INSERT INTO event_fts(rowid, terms) VALUES (6, 'xray')")
        await conn.execute("DELETE FROM privileged_writes")
    assert await term_feed.EVENTS.ranked(db.reader, ["item5"], 8) == []
    assert [i for i, _ in await term_feed.EVENTS.ranked(db.reader, ["xray"], 8) or []] == [6]
    # Committed with a full batch, still the same answers, equal to a rebuild's.
    await remember(db, [text(i) for i in range(100, 100 + term_feed.BATCH)])
    assert await term_feed.EVENTS.ranked(db.reader, ["item5"], 8) == []
    assert await answers(db) == await rebuilt_answers(db.path)


async def test_compacting_after_an_erase_removes_the_index(db: Database, tmp_path: Path):
    await remember(db, [text(i) for i in range(6)])
    await answers(db)
    assert any(index_dir(db.path).iterdir())
    await db.compact_securely()
    assert not index_dir(db.path).exists()
    assert await term_feed.EVENTS.ranked(db.reader, ["item5"], 8) == await term_feed.EVENTS.ranked(
        db.reader, ["item5"], 8
    ) != []
    assert index_dir(db.path).is_dir()


async def test_another_databases_index_is_not_used(db: Database, tmp_path: Path):
    await remember(db, [text(i) for i in range(6)])
    await answers(db)
    other = Database(tmp_path / "other.db")
    await other.open()
    try:
        await remember(other, ["kilo only here", *[f"filler {i}" for i in range(8)]])
        await answers(other)
    finally:
        await other.close()
    # other.db's index copied next to memory.db (a restored backup, a moved file): its watermark is not this one's.
    shutil.rmtree(index_dir(db.path))
    shutil.copytree(index_dir(tmp_path / "other.db"), index_dir(db.path))
    fresh = Database(db.path)
    await fresh.open()
    try:
        assert await term_feed.EVENTS.ranked(fresh.reader, ["kilo"], 8) == []
        assert await answers(fresh) == await answers(db)
    finally:
        await fresh.close()


async def test_inside_a_write_transaction_fts5_answers(db: Database):
    await remember(db, [text(i) for i in range(4)])
    async with db.transaction() as conn:
        assert await term_feed.EVENTS.ranked(conn, ["alpha"], 8) is None
        found = await store.search(conn, 1, None, '"alpha"', ["active"], None, 8)
        assert {ev.id for ev, _ in found} == {2, 4}


CHILD = """
import asyncio, sys
sys.path[:0] = [{sidecar!r}, {tests!r}]
from pathlib import Path
from stratagate.storage import term_feed, term_index
from stratagate.storage.db import Database
from test_search_index import remember, text

term_feed.BATCH = 1  # every query commits: the kill lands in index writes as often as in SQLite writes

async def main():
    d = Database(Path({path!r}))
    await d.open()
    i = {start}
    while i < {stop}:
        await remember(d, [text(j) for j in range(i, i + 3)])
        await term_feed.EVENTS.ranked(d.reader, ["alpha", "note"], 8)
        i += 3
        print(i, flush=True)
    await d.close()

asyncio.run(main())
"""


def _run_then_kill(code: str, rounds: int) -> int:
    """Run the writer child until it reports ``rounds`` rounds of (SQLite commit, index commit), then SIGKILL it:
    the kill lands in whichever write comes next."""
    child = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)
    try:
        assert child.stdout is not None
        for _ in range(rounds):
            assert child.stdout.readline(), "the writer child stopped early"
        os.kill(child.pid, signal.SIGKILL)
    finally:
        child.wait()
    return child.returncode


async def test_after_sigkill_mid_write_the_index_equals_a_rebuild(db: Database, tmp_path: Path):
    await remember(db, [text(i) for i in range(30)])
    await answers(db)
    await db.close()
    code = CHILD.format(sidecar=str(REPO / "sidecar"), tests=str(REPO / "tests"), path=str(db.path), start=100,
                        stop=10**9)
    assert _run_then_kill(code, rounds=25) == -signal.SIGKILL
    after, count = await _reopened_answers(db.path)
    assert count >= 30 + 75 and all(a is not None for a in after)
    assert after == await rebuilt_answers(db.path)
    await db.open()  # (the fixture closes it)


async def _reopened_answers(path: Path) -> tuple[list[list[int] | None], int]:
    """The searches' answers and the event count of the database at ``path``, opened afresh."""
    reopened = Database(path)
    await reopened.open()
    try:
        after = await answers(reopened)
        ((count,),) = await reopened.reader.execute_fetchall("SELECT count(*) FROM events")
    finally:
        await reopened.close()
    return after, int(count)


def _run_together(codes: list[str]) -> list[int]:
    children = [subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.DEVNULL) for code in codes]
    return [child.wait() for child in children]


async def test_two_processes_writing_and_searching_at_once_leave_the_index_equal_to_a_rebuild(
    db: Database, tmp_path: Path
):
    await remember(db, [text(i) for i in range(10)])
    await answers(db)
    await db.close()
    codes = [
        CHILD.format(sidecar=str(REPO / "sidecar"), tests=str(REPO / "tests"), path=str(db.path), start=start,
                     stop=start + 60)
        for start in (1000, 2000)
    ]
    assert await asyncio.to_thread(_run_together, codes) == [0, 0]
    after, count = await _reopened_answers(db.path)
    assert count == 10 + 2 * 60 and all(a is not None for a in after)
    assert after == await rebuilt_answers(db.path)
    await db.open()


PRUNER = """
import asyncio, sys
sys.path[:0] = [{sidecar!r}, {tests!r}]
from pathlib import Path
from stratagate.storage import term_feed, term_index
from stratagate.storage.db import Database

async def main():
    d = Database(Path({path!r}))
    await d.open()
    while True:
        print(await term_feed.prune(d), flush=True)
        await asyncio.sleep(0.01)

asyncio.run(main())
"""


def _prune_beside_killed_writer(args: dict[str, str]) -> int:
    """A pruner child looping from the start, the writer child SIGKILLed after 25 rounds, then the pruner SIGKILLed
    too (mid-prune as likely as between two); the writer's return code."""
    pruner = subprocess.Popen([sys.executable, "-c", PRUNER.format(**args)], stdout=subprocess.PIPE, text=True)
    try:
        assert pruner.stdout is not None and pruner.stdout.readline()  # pruning from the start
        return _run_then_kill(CHILD.format(**args, start=100, stop=10**9), 25)
    finally:
        pruner.kill()
        pruner.wait()


async def _feed_rows(path: Path) -> int:
    d = Database(path)
    await d.open()
    try:
        ((rows,),) = await d.reader.execute_fetchall("SELECT count(*) FROM search_changes")
    finally:
        await d.close()
    return int(rows)


async def test_maintenance_prunes_what_the_index_holds_and_a_catch_up_still_equals_a_rebuild(
    db: Database, tmp_path: Path
):
    await remember(db, [text(i) for i in range(40)])
    before = await answers(db)  # committed: the watermark is the last row
    assert await term_feed.prune(db) == 39  # every row below the watermark; its own row proves the index is ours
    ((rows,),) = await db.reader.execute_fetchall("SELECT count(*) FROM search_changes")
    assert rows == 1 and await term_feed.prune(db) == 0
    assert await answers(db) == before
    await remember(db, [text(i) for i in range(40, 50)])  # past the watermark: caught up as before
    assert await answers(db) == await rebuilt_answers(db.path)


async def test_a_process_that_read_the_feed_before_another_pruned_it_reopens_the_index(
    db: Database, tmp_path: Path
):
    """This process has read the feed up to some row; another process then writes, commits the index and prunes.
    Even if this process does not notice the other's commit (its stamp check ran just before it), it never reads
    past the pruned gap: the pruned mark comes with the rows, and it reopens the committed index."""
    await remember(db, [text(i) for i in range(12)])
    await answers(db)
    code = CHILD.format(sidecar=str(REPO / "sidecar"), tests=str(REPO / "tests"), path=str(db.path), start=300,
                        stop=330)
    assert await asyncio.to_thread(_run_together, [code]) == [0]  # 30 more events, each committed to the index
    other = Database(db.path)
    await other.open()
    try:
        assert await term_feed.prune(other) > 0
    finally:
        await other.close()
    state = await term_feed._state(term_feed.EVENTS, db.reader)
    assert state is not None and state.index is not None
    held, read_up_to = state.index, state.seen.seq
    mark = term_index.committed_mark(index_dir(db.path))
    assert mark is not None and mark.seq > read_up_to + 1  # rows this process never read are gone
    stale, TermIndex.stale = TermIndex.stale, lambda self: False  # type: ignore[method-assign]
    try:
        found = await term_feed.EVENTS.ranked(db.reader, ["note"], 100)
    finally:
        TermIndex.stale = stale  # type: ignore[method-assign]
    assert state.index is not held and state.seen.seq >= mark.seq  # the committed index reopened, not the gap read
    assert found is not None and len(found) == 12 + 30
    assert await answers(db) == await rebuilt_answers(db.path)


async def test_an_index_older_than_the_pruned_rows_is_rebuilt(db: Database, tmp_path: Path):
    await remember(db, [text(i) for i in range(20)])
    await answers(db)
    old = tmp_path / "old-index"
    shutil.copytree(index_dir(db.path), old)  # a copy of the index as it is now (a restore from a backup)
    await remember(db, [text(i) for i in range(20, 35)])
    await answers(db)
    assert await term_feed.prune(db) > 0  # the rows the old copy would need to catch up are gone
    await db.close()
    shutil.rmtree(index_dir(db.path))
    shutil.copytree(old, index_dir(db.path))
    after, count = await _reopened_answers(db.path)
    assert count == 35 and after == await rebuilt_answers(db.path)
    assert TermIndex.open(index_dir(db.path)) is not None
    await db.open()


async def test_pruning_beside_a_writer_killed_mid_write_leaves_the_index_equal_to_a_rebuild(
    db: Database, tmp_path: Path
):
    await remember(db, [text(i) for i in range(30)])
    await answers(db)
    await db.close()
    args = {"sidecar": str(REPO / "sidecar"), "tests": str(REPO / "tests"), "path": str(db.path)}
    assert await asyncio.to_thread(_prune_beside_killed_writer, args) == -signal.SIGKILL
    rows = await _feed_rows(db.path)
    after, count = await _reopened_answers(db.path)
    assert count >= 30 + 75 and all(a is not None for a in after)
    assert rows < count  # pruned while written
    assert after == await rebuilt_answers(db.path)
    await db.open()
