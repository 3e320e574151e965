"""The sidecar's single SQLite database.

One writer connection guarded by an asyncio lock (SQLite allows one writer anyway) and one reader
connection, so reads never wait behind a write transaction (WAL gives readers a consistent snapshot). Both are
aiosqlite connections (storage/sqlite.py): every statement runs in the connection's own thread, so a lock wait,
COMMIT's fsync, VACUUM or a long read never holds the event loop. Captures that arrive while a commit is in flight
share the next transaction (storage/group.py: group commit).
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import json
import logging
import os
import secrets
import sqlite3
import time
import weakref
from collections.abc import AsyncIterator, Awaitable, Callable, Hashable, Iterable, Iterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

import aiosqlite

from stratagate.safety.secrets import configure_key, redact_value
from stratagate.storage import term_index
from stratagate.storage.schema import MIGRATIONS, SCHEMA_VERSION
from stratagate.storage.sqlite import Connection, Raw
from stratagate.timeutil import now_iso

if TYPE_CHECKING:
    from stratagate.storage.group import GroupCommit

Actor = str  # 'capture' | 'model' | 'agent' | 'user' | 'system'

log = logging.getLogger("stratagate.storage")

# Topics a write announces with on_commit(); listeners subscribe with Database.listen().
JOBS_QUEUED = "jobs.queued"  # a job became due (new, re-queued, retried): wake the runner. Argument: None.
ITEMS_ADDED = "items.added"  # rows that get embeddings were added. Argument: the namespace id.
TURN_CAPTURED = "turn.captured"  # a new turn was stored. Argument: its session id.

Signals = dict[tuple[str, Hashable], None]
# The signals of each open transaction, by its connection (the writer of one Database while it holds the lock).
_open: weakref.WeakKeyDictionary[Connection, Signals] = weakref.WeakKeyDictionary()


def on_commit(conn: Connection, topic: str, arg: Hashable = None) -> None:
    """Inside ``Database.transaction()``: tell the database's ``topic`` listeners ``arg`` once the transaction has
    committed — never after a rollback, and once per (topic, arg) however often it is announced."""
    signals = _open.get(conn)
    if signals is None:
        raise RuntimeError(f"on_commit({topic!r}) outside Database.transaction()")
    signals.setdefault((topic, arg), None)


def open_signals(conn: Connection, signals: Signals | None) -> None:
    """Start (a dict) or end (None) collecting ``on_commit`` signals of the transaction open on ``conn``."""
    if signals is None:
        _open.pop(conn, None)
    else:
        _open[conn] = signals


class SchemaError(RuntimeError):
    pass


class StorageError(RuntimeError):
    """A write failed; the message says what happened and that nothing partial was kept."""


class DatabaseLocked(StorageError):
    """Another process held the database lock for longer than the start-up bound (STRATAGATE_DB_LOCK_TIMEOUT_S)."""

    def __init__(self, path: Path, waited: float):
        super().__init__(
            f"the database {path} is locked by another process (waited {waited:g} s); stop the program holding it "
            "(another stratagate, a sqlite3 shell, a backup) and start again, or wait longer with "
            "STRATAGATE_DB_LOCK_TIMEOUT_S"
        )
        self.path = path


DEFAULT_LOCK_TIMEOUT_S = 10.0
BUSY_TIMEOUT_MS = 5000
"""How long a statement waits for another connection's lock once the database is open."""


def _is_lock_error(exc: sqlite3.Error) -> bool:
    text = str(exc).lower()
    return isinstance(exc, sqlite3.OperationalError) and ("locked" in text or "busy" in text)


def _secure_dir(path: Path) -> None:
    """Create missing folders as 0700. An existing folder is the user's (it may be /tmp or $HOME): leave it."""
    if path.exists():
        return
    old_umask = os.umask(0o077)
    try:
        path.mkdir(parents=True, exist_ok=True, mode=0o700)
    finally:
        os.umask(old_umask)


def _secure_files(db_path: Path) -> None:
    for suffix in ("", "-wal", "-shm", "-journal"):
        # Another process may delete its -journal between our look and our chmod (concurrent starts).
        with contextlib.suppress(FileNotFoundError):
            os.chmod(Path(str(db_path) + suffix), 0o600)


class WriteLock(asyncio.Lock):
    """The writer's lock, which also tells its holder whether another write waits for it (``wanted``): a holder
    that keeps a transaction open across yields (a maintenance sweep) commits and lets go when one does."""

    def __init__(self) -> None:
        super().__init__()
        self._wanting = 0
        self.asked = asyncio.Event()
        """Set when someone starts waiting for the lock; a holder clears it before it waits on it."""

    async def acquire(self) -> Literal[True]:
        self._wanting += 1
        if self.locked():
            self.asked.set()
        try:
            return await super().acquire()
        finally:
            self._wanting -= 1

    def wanted(self) -> bool:
        """Whether a write is waiting for the lock now."""
        return self._wanting > 0


class Database:
    def __init__(self, path: Path, max_bytes: int | None = None, lock_timeout: float = DEFAULT_LOCK_TIMEOUT_S):
        self.path = Path(path)
        self._max_bytes = max_bytes
        self._lock_timeout = lock_timeout
        self._writer: Connection | None = None
        self._reader: Connection | None = None
        self._write_lock = WriteLock()
        self.on_lock_wait: Callable[[str], None] | None = None
        """Called once, with a sentence, when opening finds the database locked and starts waiting for it."""
        self._lock_reported = False
        self._listeners: dict[str, list[Callable[[Any], None]]] = {}
        self.revision = 0
        """Bumped after every commit of this process's writer (the Memory page's long poll waits on it)."""
        self._committed = asyncio.Event()
        self._group: GroupCommit | None = None

    @property
    def group(self) -> GroupCommit:
        """The database's group committer (one writer, one group): writes queued while a commit is in flight share
        the next transaction (storage/group.py)."""
        if self._group is None:
            from stratagate.storage.group import GroupCommit  # group.py builds on this module

            self._group = GroupCommit(self)
        return self._group

    def committed(self) -> asyncio.Event:
        """An event set at the next commit (or exclusive step: VACUUM, checkpoint) of this process's writer;
        other processes' commits show in the reader's ``PRAGMA data_version`` instead."""
        return self._committed

    def _bump(self) -> None:
        self.revision += 1
        event, self._committed = self._committed, asyncio.Event()
        event.set()

    def listen(self, topic: str, callback: Callable[[Any], None]) -> None:
        """Run ``callback(arg)`` after every committed transaction that announced ``topic`` (see ``on_commit``).
        Callbacks run on the event loop right after COMMIT; they must not block (schedule work instead)."""
        self._listeners.setdefault(topic, []).append(callback)

    def _after_commit(self, signals: Signals) -> None:
        for topic, arg in signals:
            for callback in self._listeners.get(topic, ()):
                try:
                    callback(arg)
                except Exception:  # the data is committed; a failing listener must not turn that into an error
                    log.exception("after-commit listener of %s failed", topic)

    async def data_version(self) -> int:
        """``PRAGMA data_version`` of the writer connection: changes when another connection (another process)
        commits, not for this connection's own commits. Read-only, so it needs no write lock, but it must run as one
        call on the connection's thread: an ``execute`` and a later ``fetchone`` leave the statement active in between,
        and a VACUUM or checkpoint of the lock holder queued there fails ("SQL statements in progress", "database
        table is locked")."""
        (row,) = await self.writer.execute_fetchall("PRAGMA data_version")
        return int(row[0])

    async def reader_data_version(self) -> int:
        """``PRAGMA data_version`` of the reader: changes at every commit of any other connection, this process's
        writer included (one call on the reader's thread, as ``data_version``)."""
        (row,) = await self.reader.execute_fetchall("PRAGMA data_version")
        return int(row[0])

    async def open(self) -> None:
        """Connect, migrate and configure. Another process holding the lock (a second sidecar migrating, the CLI,
        a sqlite3 shell) is waited for at most ``lock_timeout`` seconds, then DatabaseLocked: start-up never hangs."""
        if self.path.is_dir():
            raise StorageError(f"{self.path} is a directory, not a database file")
        _secure_dir(self.path.parent)
        old_umask = os.umask(0o077)  # -wal/-shm files are created lazily by SQLite: keep them private too
        deadline = time.monotonic() + self._lock_timeout
        try:
            self._writer = await self._connect()
            writer = self._writer
            await self._patiently(writer, deadline, lambda: self._setup(writer))
            await self._patiently(writer, deadline, lambda: self._migrate(writer))
            await self._patiently(writer, deadline, lambda: self._configure_redaction(writer))
            self._reader = await self._connect()
            reader = self._reader
            await self._patiently(reader, deadline, lambda: self._setup(reader))
            await reader.execute("PRAGMA query_only = ON")
        except BaseException:
            # Each aiosqlite connection owns a (non-daemon) thread: a failed open must stop them, or the process
            # cannot exit.
            await self.close()
            raise
        finally:
            os.umask(old_umask)
        _secure_files(self.path)

    async def _connect(self) -> Connection:
        # isolation_level=None: transactions are the explicit BEGIN IMMEDIATE/COMMIT below, never implicit ones.
        conn = await aiosqlite.connect(str(self.path), isolation_level=None)
        conn.row_factory = sqlite3.Row
        return conn

    async def _setup(self, conn: Connection) -> None:
        """Connection pragmas; journal_mode and page_size touch the file, so they may meet another's lock."""
        await conn.execute("PRAGMA journal_mode = WAL")
        # FULL: a turn acknowledged by turn.capture survives power loss, not only a process crash.
        await conn.execute("PRAGMA synchronous = FULL")
        await conn.execute("PRAGMA foreign_keys = ON")
        if self._max_bytes is not None:
            ((page_size,),) = await conn.execute_fetchall("PRAGMA page_size")
            await conn.execute(f"PRAGMA max_page_count = {max(1, self._max_bytes // int(page_size))}")

    async def _patiently(
        self, conn: Connection, deadline: float, step: Callable[[], Awaitable[None]]
    ) -> None:
        """Run an idempotent start-up step, waiting for another process's lock until ``deadline``.

        The first try does not wait, so a held lock is reported (``on_lock_wait``) at once; later tries let SQLite's
        busy handler wait for the rest of the time. Some paths (a journal-mode change, WAL recovery) answer "busy"
        without calling that handler: a short pause keeps those retries from spinning."""
        busy_ms = 0
        while True:
            await conn.execute(f"PRAGMA busy_timeout = {busy_ms}")
            try:
                await step()
                break
            except sqlite3.OperationalError as exc:
                if not _is_lock_error(exc):
                    raise
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    raise DatabaseLocked(self.path, self._lock_timeout) from None
                if not self._lock_reported and self.on_lock_wait is not None:
                    self._lock_reported = True
                    self.on_lock_wait(
                        f"the database {self.path} is locked by another process; waiting up to "
                        f"{self._lock_timeout:g} s (STRATAGATE_DB_LOCK_TIMEOUT_S)"
                    )
                busy_ms = max(1, int(remaining * 1000))
                await asyncio.sleep(min(0.05, remaining))
        await conn.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")

    async def _migrate(self, conn: Connection) -> None:
        """Apply the missing migrations, one transaction each. The version is read inside the write lock
        (BEGIN IMMEDIATE), so of two processes starting on a new database one migrates and the other, once the
        first has committed, reads the new version and skips what is done: "check user_version → migrate" is
        one locked step and running it again is a no-op."""
        while True:
            await conn.execute("BEGIN IMMEDIATE")
            try:
                ((version,),) = await conn.execute_fetchall("PRAGMA user_version")
                if version > SCHEMA_VERSION:
                    raise SchemaError(
                        f"database {self.path} has schema version {version}, newer than this sidecar "
                        f"understands ({SCHEMA_VERSION}); upgrade stratagate instead of downgrading"
                    )
                if version == SCHEMA_VERSION:
                    await conn.execute("COMMIT")
                    return
                await _run_script(conn, MIGRATIONS[version])
                await conn.execute(f"PRAGMA user_version = {version + 1}")
                await audit(
                    conn,
                    None,
                    "system",
                    "schema.migrated",
                    "database",
                    str(self.path),
                    {"version": version},
                    {"version": version + 1},
                )
                await conn.execute("COMMIT")
            except BaseException:
                await _rollback(conn)
                raise

    async def _configure_redaction(self, conn: Connection) -> None:
        """This database's redaction key (meta.redaction_key, 32 random bytes, made on first open): placeholders
        of one secret read the same everywhere in it, and differ between databases."""
        await conn.execute("BEGIN IMMEDIATE")
        try:
            await conn.execute(
                "INSERT INTO meta(key, value) VALUES ('redaction_key', ?) ON CONFLICT(key) DO NOTHING",
                (secrets.token_hex(32),),
            )
            (row,) = await conn.execute_fetchall("SELECT value FROM meta WHERE key = 'redaction_key'")
            await conn.execute("COMMIT")
        except BaseException:
            await _rollback(conn)
            raise
        configure_key(bytes.fromhex(row[0]))

    async def close(self) -> None:
        conns = (self._reader, self._writer)
        self._reader = self._writer = None
        for conn in conns:
            if conn is not None:
                with contextlib.suppress(sqlite3.Error):
                    await conn.close()

    @property
    def write_lock(self) -> WriteLock:
        """The lock every write of this process takes (``transaction``, ``exclusive``, group commit)."""
        return self._write_lock

    @property
    def writer(self) -> Connection:
        assert self._writer is not None, "database is not open"
        return self._writer

    @property
    def reader(self) -> Connection:
        assert self._reader is not None, "database is not open"
        return self._reader

    @asynccontextmanager
    async def transaction(self) -> AsyncIterator[Connection]:
        """An IMMEDIATE write transaction: all or nothing. What the writes announced with ``on_commit`` is told to
        the listeners after COMMIT succeeded (and forgotten on rollback)."""
        async with self._write_lock:
            conn = self.writer
            try:
                await conn.execute("BEGIN IMMEDIATE")
            except asyncio.CancelledError:
                await _rollback(conn)  # the BEGIN may still complete in the connection's thread
                raise
            signals: Signals = {}
            open_signals(conn, signals)
            try:
                try:
                    yield conn
                except BaseException:
                    await _rollback(conn)
                    raise
                try:
                    await conn.execute("COMMIT")
                except sqlite3.Error as exc:
                    await _rollback(conn)
                    raise StorageError(f"commit failed, nothing was written: {exc}") from exc
                except asyncio.CancelledError:
                    # Cancelled before the COMMIT reached the connection's thread: undone here (a no-op when it did
                    # reach it), so the writer is never left inside a transaction once the lock is released.
                    await _rollback(conn)
                    raise
            finally:
                open_signals(conn, None)
        self.committed_now(signals)

    def committed_now(self, signals: Signals) -> None:
        """A transaction of this writer committed with these ``on_commit`` signals (storage/group.py calls it too)."""
        self._bump()
        self._after_commit(signals)

    @asynccontextmanager
    async def exclusive(self) -> AsyncIterator[Connection]:
        """The writer under the write lock, outside any transaction (VACUUM, checkpoints)."""
        async with self._write_lock:
            try:
                yield self.writer
            finally:
                self._bump()

    async def compact_securely(self) -> None:
        """After a scrub or an erase: VACUUM (no old copy left in free pages) and empty the WAL, under the write lock
        so no write interleaves. Together with ``secure_delete`` in the rewriting transaction, removed text is in no
        byte of the files."""
        async with self.exclusive() as conn:
            await conn.execute("VACUUM")
            await conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
            await asyncio.to_thread(term_index.discard, self.path)  # derived: rebuilt from what is left

    async def fetchall(self, sql: str, params: Iterable[Any] = ()) -> list[sqlite3.Row]:
        return list(await self.reader.execute_fetchall(sql, tuple(params)))

    async def fetchone(self, sql: str, params: Iterable[Any] = ()) -> sqlite3.Row | None:
        rows = await self.fetchall(sql, params)
        return rows[0] if rows else None

    async def scalar(self, sql: str, params: Iterable[Any] = ()) -> Any:
        row = await self.fetchone(sql, params)
        return None if row is None else row[0]


async def _rollback(conn: Connection) -> None:
    # Sent whether or not a transaction looks open: it runs in the connection's thread after any statement still
    # queued there, so a cancelled caller's BEGIN that completes after the cancellation is undone too (instead of
    # leaving the writer inside a transaction nobody owns). SQLite may have rolled back already (SQLITE_FULL): the
    # "no transaction is active" error then is no news and must not hide the real one.
    with contextlib.suppress(sqlite3.Error):
        await conn.execute("ROLLBACK")


async def _run_script(conn: Connection, script: str) -> None:
    # executescript() would COMMIT our open transaction; run statement by statement instead.
    statement = ""
    for line in script.splitlines(keepends=True):
        statement += line
        if sqlite3.complete_statement(statement):
            if statement.strip():
                await conn.execute(statement)
            statement = ""
    if statement.strip():
        raise SchemaError(f"incomplete SQL statement in migration: {statement[:80]!r}")


def _dump(value: Any) -> str | None:
    if value is None:
        return None
    return json.dumps(value, ensure_ascii=False, sort_keys=True, default=str)


AuditRow = tuple[int | None, Actor, str, str | None, str | None, Any, Any]
"""One audit row to write: namespace_id, actor, action, subject_type, subject_id, before, after."""

_AUDIT_INSERT = (
    "INSERT INTO audit_log(namespace_id, at, actor, action, subject_type, subject_id, before, after)"
    " VALUES (?, ?, ?, ?, ?, ?, ?, ?)"
)


async def audit(
    conn: Connection,
    namespace_id: int | None,
    actor: Actor,
    action: str,
    subject_type: str | None,
    subject_id: str | None,
    before: Any = None,
    after: Any = None,
) -> None:
    """Append one audit row inside the caller's transaction. Secrets in before/after are redacted first."""
    await audit_rows(conn, [(namespace_id, actor, action, subject_type, subject_id, before, after)])


async def audit_rows(conn: Connection, rows: Iterable[AuditRow], *, redacted: bool = False) -> None:
    """Append audit rows inside the caller's transaction, in order, as one statement (executemany: a capture that
    seals a block, or a bulk admission, writes its rows at once). Secrets in before/after are redacted first, unless
    the caller says they already are (``redacted``: admission's bulk path redacted the texts it stores). A task
    collecting its audit ids (``collect_audit_ids``) gets them row by row: executemany reports no row ids."""
    values = audit_values(rows, redacted=redacted)
    collector = _audit_ids.get()
    if collector is not None and collector[0] is asyncio.current_task():
        for row in values:
            cursor = await conn.execute(_AUDIT_INSERT, row)
            collector[1].append(int(cursor.lastrowid or 0))
    elif values:
        await conn.executemany(_AUDIT_INSERT, values)


def write_audit_rows(raw: Raw, rows: Iterable[AuditRow], *, redacted: bool = False) -> None:
    """``audit_rows`` for a write running on the writer's thread (storage/sqlite.py ``on_thread``; no ids are
    collected there)."""
    values = audit_values(rows, redacted=redacted)
    if values:
        raw.executemany(_AUDIT_INSERT, values)


def audit_values(rows: Iterable[AuditRow], *, redacted: bool = False) -> list[tuple[Any, ...]]:
    """The audit rows as ``_AUDIT_INSERT`` values, stamped now, before/after redacted unless ``redacted``."""
    at = now_iso()
    return [
        (ns, at, actor, action, subject_type, subject_id, _dump(before if redacted else redact_value(before)),
         _dump(after if redacted else redact_value(after)))
        for ns, actor, action, subject_type, subject_id, before, after in rows
    ]


_audit_ids: contextvars.ContextVar[tuple[object, list[int]] | None] = contextvars.ContextVar("audit_ids", default=None)


@contextlib.contextmanager
def collect_audit_ids() -> Iterator[list[int]]:
    """The ids of the audit rows this task writes inside the block (in whatever transactions the store functions
    open): the Memory page's writes return them as ``audit_ids``. Only this very task's: the runner's jobs and other
    requests run in their own tasks, and a task started meanwhile (it inherits the context) is not this one."""
    collected: list[int] = []
    token = _audit_ids.set((asyncio.current_task(), collected))
    try:
        yield collected
    finally:
        _audit_ids.reset(token)
