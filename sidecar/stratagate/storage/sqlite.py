"""The sidecar's one SQLite connection type, aiosqlite's, and what the layers above keep per connection.

aiosqlite runs every statement of a connection on that connection's own thread, in order: a lock held by another
process, COMMIT's fsync, VACUUM or a long read wait there, never on the event loop.
"""

from __future__ import annotations

import weakref
from typing import Any

import aiosqlite

Connection = aiosqlite.Connection

_caches: weakref.WeakKeyDictionary[Connection, dict[str, Any]] = weakref.WeakKeyDictionary()


def caches(conn: Connection) -> dict[str, Any]:
    """What the layers above remember for ``conn`` (keyed by their module: event term counts, dense matrices); it
    goes with the connection."""
    return _caches.setdefault(conn, {})
