"""memory_get_blocks and memory_expand_block."""

from __future__ import annotations

import asyncio
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from stratagate import ids
from stratagate.blocks.views import (
    L5_PAGE_MAX_MESSAGES,
    L5_PAGE_MESSAGES,
    BlockRow,
    block_messages,
    expand_block,
    get_block,
    session_blocks,
)
from stratagate.capture import queries as capture_queries
from stratagate.errors import Invalid
from stratagate.events.forgotten import load, mask_expanded, public_messages, render_masked, shown_view
from stratagate.protocol import ToolContext, tool
from stratagate.protocol.tool_results import ExpandBlockResult, GetBlocksResult
from stratagate.safety.inert import inert
from stratagate.storage import lookup
from stratagate.storage.db import Database


class GetBlocksArgs(BaseModel):
    model_config = ConfigDict(extra="forbid")


class ExpandBlockArgs(BaseModel):
    model_config = ConfigDict(extra="forbid")

    id: str = Field(description="Block id from memory_get_blocks or memory_search_raw, e.g. 'blk_12'.")
    level: int | str = Field(
        "next",
        description="0–5 (5 = source transcript with every tool call), 'L0'–'L5', or 'next' for one level more.",
    )
    offset: int = Field(
        0,
        ge=0,
        description="Level 5 comes in pages of messages: the first message of the page (0 = the start). "
        "A result with page.more = true gives page.next_offset for the next call.",
    )
    limit: int = Field(
        L5_PAGE_MESSAGES,
        ge=1,
        le=L5_PAGE_MAX_MESSAGES,
        description="Level 5: at most this many messages per page (fewer when they are long).",
    )


@tool(
    "memory_get_blocks",
    args=GetBlocksArgs,
    result=GetBlocksResult,
    evidence=True,
    description="List this session's sealed memory blocks (oldest first) with status, turn range and the view at "
    "each block's current decay level. Older blocks show shorter views; expand one to read more.",
)
async def get_blocks(ctx: ToolContext, _args: GetBlocksArgs) -> dict[str, Any]:
    ns = await lookup.namespace_id(ctx.db, ctx.namespace)
    sess = await lookup.session_id(ctx.db, ns, ctx.session)
    if sess is None:
        return {"session": ctx.session, "blocks": [], "open_turns": 0}
    lam = ctx.settings.block_decay_lambda
    blocks = await session_blocks(ctx.db, ns, sess, lam)
    out = []
    forgotten = await load(ctx.db, ns, sess)
    for block in blocks:
        item = block.meta(lam)
        item["view"] = await shown_view(ctx.db, block, block.level, forgotten)
        out.append(item)
    open_turns = await capture_queries.open_turn_count(ctx.db.reader, sess)
    return {"session": ctx.session, "blocks": out, "open_turns": open_turns}


@tool(
    "memory_expand_block",
    args=ExpandBlockArgs,
    result=ExpandBlockResult,
    evidence=True,
    description="Read one memory block at a chosen level: 5 is the source transcript with every tool call and result, "
    "4 near-verbatim, 3 pruned, 2 key facts, 1 summary, 0 title. Expanding a block of this session keeps "
    "it at that level for a while. Level 5 of a long block comes in pages (offset, limit).",
)
async def expand(ctx: ToolContext, args: ExpandBlockArgs) -> dict[str, Any]:
    block_id = ids.parse(args.id, "blk")
    if block_id is None:
        raise Invalid(f"id must look like 'blk_12' (got {args.id!r})")
    ns = await lookup.namespace_id(ctx.db, ctx.namespace)
    sess = await lookup.session_id(ctx.db, ns, ctx.session)
    lam = ctx.settings.block_decay_lambda
    result = await expand_block(
        ctx.db, ns, block_id, args.level, sess, lam, "agent", ctx.call_id, offset=args.offset, limit=args.limit
    )
    block = await get_block(ctx.db, ns, block_id, lam)
    if "page" in result:
        return await _mask_page(ctx.db, result, block, sess)
    return await mask_expanded(ctx.db, result, block, sess)


async def _mask_page(db: Database, result: dict[str, Any], block: BlockRow, viewer: int | None) -> dict[str, Any]:
    """A level-5 page with forgotten memories hidden: only the page's messages are read and re-rendered."""
    forgotten = await load(db, block.namespace_id, viewer)
    if not forgotten:
        return result
    page = result["page"]
    messages = await block_messages(db, block.namespace_id, block.id, page["offset"], page["count"])
    if any(forgotten.message_event(m) is not None for m in messages):
        result["view"] = await asyncio.to_thread(lambda: inert(render_masked(5, messages, forgotten)))
    result["messages"] = public_messages(messages, forgotten)
    return result
