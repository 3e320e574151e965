"""Which committed state a read-only connection sees: what lets a caller keep an answer until the database changes."""

from __future__ import annotations

from stratagate.storage.sqlite import Connection


async def read_version(conn: Connection) -> int | None:
    """The connection's ``PRAGMA data_version`` (it moves at every commit of another connection: another process's,
    or this process's writer), or None when it cannot tell a change: a connection that may write (its own writes do
    not move it) or one inside a transaction."""
    if conn.in_transaction:
        return None
    ((version, read_only),) = await conn.execute_fetchall("SELECT * FROM pragma_data_version, pragma_query_only")
    return int(version) if read_only else None
