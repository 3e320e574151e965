"""storage/db.py's aiosqlite connections and storage/group.py: what blocks waits in a connection's thread, group commit.

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
from stratagate.storage.group import GroupCommit
from stratagate.storage.sqlite import Connection

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


async def test_group_commit_answers_only_after_the_commit_and_a_bad_work_fails_alone(tmp_path: Path):
    path = tmp_path / "m.db"
    db = await _open(path)
    group = GroupCommit(db)
    heard: list[str] = []
    db.listen("test.topic", heard.append)
    seen_on_disk: dict[str, bool] = {}
    try:
        works = [_insert("a"), _insert("b", "python"), _insert("c"), _insert("d", "sql"), _insert("e")]
        futures = [group.submit(w) for w in works]
        for value, future in zip("abcde", futures, strict=True):
            # When an answer arrives, its row must already be visible to another connection: committed.
            future.add_done_callback(lambda f, v=value: seen_on_disk.setdefault(v, v in _values(path)))
        results = await asyncio.gather(*futures, return_exceptions=True)
        assert results[0] == "a" and results[2] == "c" and results[4] == "e"
        assert isinstance(results[1], ValueError) and isinstance(results[3], sqlite3.IntegrityError)
        assert _values(path) == ["a", "c", "e"]
        assert seen_on_disk == {"a": True, "b": False, "c": True, "d": False, "e": True}
        assert group.groups == 1  # one transaction, one fsync for the five
        assert sorted(heard) == ["a", "c", "e"]  # a rolled-back work's signals are dropped
    finally:
        await db.close()


async def test_group_commit_redoes_the_others_when_sqlite_rolled_the_whole_transaction_back(tmp_path: Path):
    path = tmp_path / "m.db"
    db = await _open(path, max_bytes=8 << 20)
    group = GroupCommit(db)
    try:
        futures = [group.submit(_insert("a")), group.submit(_insert("big", blob=16 << 20)), group.submit(_insert("c"))]
        results = await asyncio.gather(*futures, return_exceptions=True)
        assert results[0] == "a" and results[2] == "c"
        assert isinstance(results[1], sqlite3.Error)
        assert _values(path) == ["a", "c"]
    finally:
        await db.close()


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


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(plan=st.lists(st.sampled_from([None, "python", "sql"]), min_size=1, max_size=12))
def test_group_commit_keeps_exactly_the_good_works_in_order(tmp_path_factory: pytest.TempPathFactory, plan):
    path = tmp_path_factory.mktemp("group") / "m.db"

    async def run() -> None:
        db = await _open(path)
        group = GroupCommit(db)
        try:
            futures = [group.submit(_insert(f"v{i}", fail)) for i, fail in enumerate(plan)]
            results = await asyncio.gather(*futures, return_exceptions=True)
            good = [f"v{i}" for i, fail in enumerate(plan) if fail is None]
            assert [r for r in results if isinstance(r, str)] == good
            assert sum(isinstance(r, Exception) for r in results) == len(plan) - len(good)
            assert _values(path) == good
        finally:
            await db.close()

    asyncio.run(run())
