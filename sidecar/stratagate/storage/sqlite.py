"""The sidecar's one SQLite connection type, aiosqlite's, and what the layers above keep per connection.

aiosqlite runs every statement of a connection on that connection's own thread, in order: a lock held by another
process, COMMIT's fsync, VACUUM or a long read wait there, never on the event loop. Each statement is one hand-off
to that thread and back (a queue put, a future, a loop wake-up: tens of microseconds of CPU); a write made of many
statements runs them as one function on the thread instead (``on_thread``).
"""

from __future__ import annotations

import sqlite3
import weakref
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

import aiosqlite

Connection = aiosqlite.Connection
Raw = sqlite3.Connection
"""The sqlite3 connection inside an aiosqlite one: what a function run by ``on_thread`` gets."""

T = TypeVar("T")

_caches: weakref.WeakKeyDictionary[Connection, dict[str, Any]] = weakref.WeakKeyDictionary()


def caches(conn: Connection) -> dict[str, Any]:
    """What the layers above remember for ``conn`` (keyed by their module: event term counts, dense matrices); it
    goes with the connection."""
    return _caches.setdefault(conn, {})


async def on_thread(conn: Connection, fn: Callable[[Raw], T]) -> T:
    """``fn(raw)`` run on ``conn``'s own thread as one hand-off, after every statement queued before it and before
    any queued after it (``raw`` is the connection's sqlite3 connection; ``fn`` must not keep it). Its exception is
    raised here. Statements inside ``fn`` are plain sqlite3 calls: no loop round trip each.

    aiosqlite has no public call for this: ``Connection._execute`` (queue a function for the connection's thread and
    await its result, what every aiosqlite method does) and ``Connection._conn`` are its internals. Their behaviour is
    pinned by tests/test_storage_connection.py, so an aiosqlite upgrade that changes them fails there first."""

    def call() -> T:
        return fn(conn._conn)

    queue_call: Callable[[Callable[[], T]], Awaitable[T]] = conn._execute
    return await queue_call(call)
