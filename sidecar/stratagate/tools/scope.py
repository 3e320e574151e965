"""What every memory tool resolves first: the caller's namespace and session, and the query's FTS expression."""

from __future__ import annotations

import aiosqlite

from stratagate.protocol.context import ToolContext
from stratagate.text.terms import fts_query

UNSEARCHABLE = "the query has no searchable words"


async def scope_keys(conn: aiosqlite.Connection, ctx: ToolContext) -> tuple[int | None, int | None]:
    """The caller's namespace and session keys, or None where nothing exists yet (no events to see)."""
    row = await (await conn.execute("SELECT id FROM namespaces WHERE name = ?", (ctx.namespace,))).fetchone()
    if row is None:
        return None, None
    ns = int(row[0])
    sess = await (
        await conn.execute("SELECT id FROM sessions WHERE namespace_id = ? AND key = ?", (ns, ctx.session))
    ).fetchone()
    return ns, None if sess is None else int(sess[0])


def query_match(query: str | None) -> tuple[str | None, bool]:
    """(FTS expression or None for "no query", True when words were given but none is searchable)."""
    if query is None or not query.strip():
        return None, False
    match = fts_query(query)
    return match, match is None
