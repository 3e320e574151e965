"""memory_search_raw: BM25 over the source messages, tool calls and results included."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from stratagate import ids
from stratagate.search.terms import fts_query
from stratagate.storage import lookup
from stratagate.tools.registry import Tool, ToolContext

SNIPPET_CHARS = 600


class SearchRawArgs(BaseModel):
    model_config = ConfigDict(extra="forbid")

    query: str = Field(min_length=1, max_length=2000, description="Words to look for in past messages.")
    limit: int = Field(8, ge=1, le=50, description="Maximum number of hits (1–50).")


def _clip(text: str) -> str:
    return text if len(text) <= SNIPPET_CHARS else text[:SNIPPET_CHARS] + "…"


async def search_raw(ctx: ToolContext, args: SearchRawArgs) -> dict[str, Any]:
    ns = await lookup.namespace_id(ctx.db, ctx.namespace)
    match = fts_query(args.query)
    if match is None:
        return {"query": args.query, "hits": [], "note": "the query has no searchable words"}
    rows = await ctx.db.fetchall(
        "SELECT m.id, m.role, m.content, m.tool_name, m.tool_arguments, m.tool_result, m.is_error, m.created_at,"
        " t.seq AS turn, s.key AS session, t.block_id, b.status AS block_status, bm25(message_fts) AS rank"
        " FROM message_fts JOIN messages m ON m.id = message_fts.rowid"
        " JOIN turns t ON t.id = m.turn_id JOIN sessions s ON s.id = m.session_id"
        " LEFT JOIN blocks b ON b.id = t.block_id"
        " WHERE message_fts MATCH ? AND m.namespace_id = ?"
        " ORDER BY rank, m.id LIMIT ?",
        (match, ns, args.limit),
    )
    hits = []
    for r in rows:
        if r["role"] == "tool":
            text = f"Tool call: {r['tool_name']} {r['tool_arguments']}\nTool result: {r['tool_result']}"
        else:
            text = r["content"]
        hits.append(
            {
                "message_id": ids.make("msg", r["id"]),
                "role": r["role"],
                "session": r["session"],
                "turn": r["turn"],
                "created_at": r["created_at"],
                "block_id": ids.make("blk", r["block_id"]) if r["block_id"] else None,
                "block_status": r["block_status"],
                "expand_level": 5 if r["block_id"] else None,
                "score": round(-float(r["rank"]), 4),
                "text": _clip(text),
            }
        )
    return {"query": args.query, "hits": hits}


TOOLS = [
    Tool(
        "memory_search_raw",
        "Search the source messages of this project's memory (user, assistant, tool calls and results), "
        "best match first. Each hit names its block; expand that block at level 5 to read the full source.",
        SearchRawArgs,
        search_raw,
    ),
]
