"""storage/db.py's aiosqlite connections and storage/group.py: what blocks waits in a connection's thread, group commit,
and storage/sqlite.py's ``on_thread`` (which relies on aiosqlite internals: pinned here).

No timings: each test checks an order of events or a state on disk (real SQLite files, a second real connection
standing in for another process)."""

from __future__ import annotations

import asyncio
import sqlite3
import threading
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from stratagate.storage.db import Database, StorageError, on_commit
from stratagate.storage.group import DEFER, GroupCommit
from stratagate.storage.sqlite import Connection, Raw, on_thread

TABLE = "CREATE TABLE IF NOT EXISTS t(id INTEGER PRIMARY KEY, v TEXT NOT NULL UNIQUE, blob BLOB)"


async def _open(path: Path, max_bytes: int | None = None) -> Database:
    db = Database(path, max_bytes=max_bytes)
    await db.open()
    async with db.transaction() as conn:
        await conn.execute(TABLE)
    return db


def _values(path: Path) -> list[str]:
    other = sqlite3.connect(path)
    try:
        return [r[0] for r in other.execute("SELECT v FROM t ORDER BY id")]
    finally:
        other.close()


async def test_another_process_holding_the_write_lock_never_blocks_the_loop(tmp_path: Path):
    db = await _open(tmp_path / "m.db")
    other = sqlite3.connect(tmp_path / "m.db", isolation_level=None)
    try:
        other.execute("BEGIN IMMEDIATE")  # as a sqlite3 shell or a second sidecar would

        async def write() -> None:
            async with db.transaction() as conn:
                await conn.execute("INSERT INTO t(v) VALUES ('mine')")

        writing = asyncio.create_task(write())
        # The write waits for the lock in the writer's thread; the loop meanwhile answers reads.
        for _ in range(20):
            assert await db.scalar("SELECT COUNT(*) FROM t") == 0
            await asyncio.sleep(0)
        assert not writing.done()
        other.execute("COMMIT")
        await writing
        assert _values(tmp_path / "m.db") == ["mine"]
    finally:
        other.close()
        await db.close()


async def test_a_failing_transaction_keeps_nothing_and_the_next_one_works(tmp_path: Path):
    db = await _open(tmp_path / "m.db")
    try:
        with pytest.raises(sqlite3.IntegrityError):
            async with db.transaction() as conn:
                await conn.execute("INSERT INTO t(v) VALUES ('a')")
                await conn.execute("INSERT INTO t(v) VALUES ('a')")
        assert not db.writer.in_transaction
        async with db.transaction() as conn:
            cur = await conn.execute("INSERT INTO t(v) VALUES ('b')")
            assert cur.lastrowid and cur.rowcount == 1
        assert _values(tmp_path / "m.db") == ["b"]
    finally:
        await db.close()


async def test_a_full_database_raises_and_keeps_nothing_partial(tmp_path: Path):
    db = await _open(tmp_path / "m.db", max_bytes=8 << 20)
    try:
        with pytest.raises((sqlite3.Error, StorageError)):
            async with db.transaction() as conn:
                await conn.execute("INSERT INTO t(v) VALUES ('small')")
                await conn.execute("INSERT INTO t(v, blob) VALUES ('big', zeroblob(16 << 20))")
        assert not db.writer.in_transaction
        assert _values(tmp_path / "m.db") == []
    finally:
        await db.close()


async def test_a_long_read_runs_in_the_reader_thread_while_the_loop_goes_on(tmp_path: Path):
    db = await _open(tmp_path / "m.db")
    release = threading.Event()
    # A read that cannot finish until the loop says so: were it run on the loop, the loop could never say so.
    await db.reader.create_function("held", 0, lambda: int(release.wait(timeout=30)))
    try:
        reading = asyncio.create_task(db.scalar("SELECT held()"))
        async with db.transaction() as conn:  # the loop (and the writer) go on meanwhile
            await conn.execute("INSERT INTO t(v) VALUES ('meanwhile')")
        assert not reading.done()
        release.set()
        assert await reading == 1
        assert _values(tmp_path / "m.db") == ["meanwhile"]
    finally:
        release.set()
        await db.close()


def _insert(value: str, fail: str | None = None, blob: int = 0):
    async def work(conn: Connection) -> str:
        await conn.execute("INSERT INTO t(v, blob) VALUES (?, zeroblob(?))", (value, blob))
        on_commit(conn, "test.topic", value)
        if fail == "python":
            raise ValueError(f"bad {value}")
        if fail == "sql":
            await conn.execute("INSERT INTO t(v) VALUES (?)", (value,))  # UNIQUE: fails after a write
        return value

    return work


async def test_works_queued_while_a_commit_is_in_flight_join_the_next_transaction(tmp_path: Path):
    path = tmp_path / "m.db"
    db = await _open(path)
    group = GroupCommit(db)
    try:
        rest: list[asyncio.Future[str]] = []

        async def first_work(conn: Connection) -> str:
            # Submitted while the first group's transaction runs: they wait for the next one.
            rest.extend(group.submit(_insert(f"r{i}")) for i in range(10))
            return await _insert("first")(conn)

        first = group.submit(first_work)
        assert await first == "first"
        assert await asyncio.gather(*rest) == [f"r{i}" for i in range(10)]
        assert group.groups == 2
        assert _values(path) == ["first", *[f"r{i}" for i in range(10)]]  # submission order is commit order
    finally:
        await db.close()


def _body(value: str, fail: str | None = None, blob: int = 0, defer: bool = False):
    """The write of ``_insert`` as a body (run on the writer's thread), submitted with ``_insert`` as its work."""

    def body(raw: Raw, signals: dict) -> str:
        if defer:
            return DEFER
        raw.execute("INSERT INTO t(v, blob) VALUES (?, zeroblob(?))", (value, blob))
        signals[("test.topic", value)] = None
        if fail == "python":
            raise ValueError(f"bad {value}")
        if fail == "sql":
            raw.execute("INSERT INTO t(v) VALUES (?)", (value,))
        return value

    return body


def _submit(group: GroupCommit, kind: str, value: str, fail: str | None = None, blob: int = 0):
    if kind == "work":
        return group.submit(_insert(value, fail, blob))
    return group.submit_body(_body(value, fail, blob, defer=kind == "defer"), _insert(value, fail, blob))


async def test_on_thread_runs_in_the_connections_thread_in_line_with_its_statements(tmp_path: Path):
    db = await _open(tmp_path / "m.db")
    try:
        conn = db.writer
        threads = {await on_thread(conn, lambda raw: threading.get_ident()) for _ in range(3)}
        assert len(threads) == 1 and threading.get_ident() not in threads  # one thread, not the loop's
        # Queued after an INSERT that was not awaited yet: runs after it, on the same sqlite3 connection.
        insert = asyncio.ensure_future(conn.execute("INSERT INTO t(v) VALUES ('queued')"))
        await asyncio.sleep(0)  # the INSERT's coroutine puts it in the connection's queue
        seen = await on_thread(conn, lambda raw: [r["v"] for r in raw.execute("SELECT v FROM t")])
        await insert
        assert seen == ["queued"]  # rows come as sqlite3.Row: the connection's row factory
        await conn.execute("BEGIN IMMEDIATE")
        assert await on_thread(conn, lambda raw: raw.in_transaction)  # the very connection, mid-transaction
        await conn.execute("ROLLBACK")

        def boom(raw: Raw) -> None:
            raw.execute("INSERT INTO t(v) VALUES ('queued')")

        with pytest.raises(sqlite3.IntegrityError):  # the function's own exception, raised on the loop
            await on_thread(conn, boom)
    finally:
        await db.close()
    with pytest.raises(ValueError):
        await on_thread(conn, lambda raw: None)  # a closed connection refuses, as its statements do


async def test_a_group_of_bodies_is_one_hand_off_with_its_commit(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    path = tmp_path / "m.db"
    db = await _open(path)
    group = GroupCommit(db)
    handed = []
    execute = db.writer._execute

    async def counted(fn, *args, **kwargs):
        handed.append(fn)
        return await execute(fn, *args, **kwargs)

    monkeypatch.setattr(db.writer, "_execute", counted)
    try:
        assert await _submit(group, "body", "a") == "a"
        assert len(handed) == 1 and _values(path) == ["a"]  # BEGIN, the body and COMMIT: one hand-off
        assert not db.writer.in_transaction
        handed.clear()
        # A body that defers: its work runs in the same transaction, the loop's way (one statement, one hand-off).
        assert await _submit(group, "defer", "b") == "b"
        assert len(handed) == 3 and _values(path) == ["a", "b"] and group.groups == 2
    finally:
        await db.close()


@pytest.mark.parametrize("kind", ["work", "body", "defer"])
async def test_bodies_fail_alone_and_answer_after_the_commit(tmp_path: Path, kind: str):
    """Works (``submit``) and bodies (``submit_body``, run on the connection's thread) alike: a bad one fails alone,
    and each answers only once its row is committed."""
    path = tmp_path / "m.db"
    db = await _open(path)
    group = GroupCommit(db)
    heard: list[str] = []
    db.listen("test.topic", heard.append)
    seen_on_disk: dict[str, bool] = {}
    try:
        plan = [("a", None), ("b", "python"), ("c", None), ("d", "sql"), ("e", None)]
        futures = [_submit(group, kind if v != "c" else "work", v, fail) for v, fail in plan]
        for (value, _fail), future in zip(plan, futures, strict=True):
            # When an answer arrives, its row must already be visible to another connection: committed.
            future.add_done_callback(lambda f, v=value: seen_on_disk.setdefault(v, v in _values(path)))
        results = await asyncio.gather(*futures, return_exceptions=True)
        assert results[0] == "a" and results[2] == "c" and results[4] == "e"
        assert isinstance(results[1], ValueError) and isinstance(results[3], sqlite3.IntegrityError)
        assert _values(path) == ["a", "c", "e"]
        assert seen_on_disk == {"a": True, "b": False, "c": True, "d": False, "e": True}
        assert group.groups == 1  # one transaction, one fsync for the five
        assert sorted(heard) == ["a", "c", "e"]  # a rolled-back write's signals are dropped
    finally:
        await db.close()


@pytest.mark.parametrize("kind", ["work", "body"])
@pytest.mark.parametrize("alone", [True, False])
async def test_bodies_are_redone_when_sqlite_rolled_the_whole_transaction_back(tmp_path: Path, alone: bool, kind: str):
    path = tmp_path / "m.db"
    db = await _open(path, max_bytes=8 << 20)
    group = GroupCommit(db)
    try:
        if alone:
            with pytest.raises(sqlite3.Error):
                await _submit(group, kind, "big", blob=16 << 20)
            assert not db.writer.in_transaction and _values(path) == []
        big = 16 << 20
        futures = [_submit(group, kind, "a"), _submit(group, kind, "big", blob=big), _submit(group, kind, "c")]
        results = await asyncio.gather(*futures, return_exceptions=True)
        assert results[0] == "a" and results[2] == "c"
        assert isinstance(results[1], sqlite3.Error)
        assert _values(path) == ["a", "c"]
        assert not db.writer.in_transaction
    finally:
        await db.close()


async def test_a_body_group_whose_begin_or_commit_fails_answers_every_write_with_the_error(tmp_path: Path):
    path = tmp_path / "m.db"
    db = await _open(path)
    group = GroupCommit(db)
    other = sqlite3.connect(path, isolation_level=None)
    try:
        await db.writer.execute("PRAGMA busy_timeout = 0")
        other.execute("BEGIN IMMEDIATE")  # another process holds the write lock: BEGIN fails at once
        results = await asyncio.gather(_submit(group, "body", "a"), _submit(group, "body", "b"),
                                       return_exceptions=True)
        assert all(isinstance(r, sqlite3.OperationalError) for r in results)
        other.execute("ROLLBACK")
        # A COMMIT that fails: a deferred foreign key checked only then.
        await db.writer.execute("CREATE TABLE p(id INTEGER PRIMARY KEY)")
        await db.writer.execute("CREATE TABLE c(p INTEGER REFERENCES p(id) DEFERRABLE INITIALLY DEFERRED)")

        def orphan(raw: Raw, signals: dict) -> str:
            raw.execute("INSERT INTO t(v) VALUES ('orphan')")
            raw.execute("INSERT INTO c(p) VALUES (42)")  # checked at COMMIT (foreign_keys is on)
            return "orphan"

        results = await asyncio.gather(_submit(group, "body", "x"), group.submit_body(orphan, _insert("orphan")),
                                       return_exceptions=True)
        assert all(isinstance(r, StorageError) for r in results)  # nothing of the group was written
        assert _values(path) == [] and not db.writer.in_transaction
        assert await _submit(group, "body", "after") == "after"
    finally:
        other.close()
        await db.close()


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(plan=st.lists(st.tuples(st.sampled_from(["work", "body", "defer"]), st.sampled_from([None, "python", "sql"])),
                     min_size=1, max_size=12))
def test_group_commit_keeps_exactly_the_good_works_in_order(tmp_path_factory: pytest.TempPathFactory, plan):
    path = tmp_path_factory.mktemp("group") / "m.db"

    async def run() -> None:
        db = await _open(path)
        group = GroupCommit(db)
        try:
            futures = [_submit(group, kind, f"v{i}", fail) for i, (kind, fail) in enumerate(plan)]
            results = await asyncio.gather(*futures, return_exceptions=True)
            good = [f"v{i}" for i, (_kind, fail) in enumerate(plan) if fail is None]
            assert [r for r in results if isinstance(r, str)] == good
            assert sum(isinstance(r, Exception) for r in results) == len(plan) - len(good)
            assert _values(path) == good
        finally:
            await db.close()

    asyncio.run(run())
