"""What every memory tool resolves first: the caller's namespace and session, and the query's FTS expression."""

from __future__ import annotations

from stratagate.protocol.context import ToolContext
from stratagate.storage import lookup
from stratagate.storage.sqlite import Connection
from stratagate.text.terms import fts_query

UNSEARCHABLE = "the query has no searchable words"


async def scope_keys(conn: Connection, ctx: ToolContext) -> tuple[int | None, int | None]:
    """The caller's namespace and session keys, or None where nothing exists yet (no events to see)."""
    return await lookup.scope_keys(conn, ctx.namespace, ctx.session)


def query_match(query: str | None) -> tuple[str | None, bool]:
    """(FTS expression or None for "no query", True when words were given but none is searchable)."""
    if query is None or not query.strip():
        return None, False
    match = fts_query(query)
    return match, match is None
