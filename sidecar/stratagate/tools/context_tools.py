"""The context-window tools: memory_context_status, compress, decompress and search_context. Each works on the
calling session's own context archive only (namespace + session from tools.call): a ref of another session is
unknown here."""

from __future__ import annotations

from stratagate.context.compress import CompressArgs, CompressResult, compress
from stratagate.context.queries_views import session_keys
from stratagate.context.restore import INLINE_CAP, DecompressArgs, DecompressResult, decompress
from stratagate.context.search import SearchArgs, SearchResult, search_context
from stratagate.context.settings import ContextSettings, effective, load_stored, parse_config
from stratagate.context.status import StatusArgs, StatusResult, context_status
from stratagate.protocol import ToolContext, tool


async def _settings(ctx: ToolContext) -> ContextSettings:
    """The effective context settings, read at each call (a change applies without a restart)."""
    return effective(parse_config(ctx.settings.context_config), await load_stored(ctx.db))


@tool(
    "memory_context_status",
    args=StatusArgs,
    result=StatusResult,
    description="How full this session's context window is: tokens per layer (raw, tool cards, blocks, folds T1–T3), "
    "foldable ranges with their refs (for compress), pending folds, the prefix-cache hit rate and the archive size.",
)
async def status(ctx: ToolContext, args: StatusArgs) -> StatusResult:
    keys = await session_keys(ctx.db, ctx.namespace, ctx.session)
    return await context_status(ctx.db, ctx.session, keys, await _settings(ctx), detail=args.detail)


@tool(
    "compress",
    args=CompressArgs,
    result=CompressResult,
    description="Fold a finished range of this session's history into your own summary, to free context. content: "
    "'<startRef>–<endRef> <topic>' on the first line, then the summary (keep what later work needs: decisions, "
    "paths, commands, results, open problems). Checked at once; it lands at turn end and nothing is lost: "
    "decompress restores the originals. Take refs from memory_context_status.",
)
async def compress_tool(ctx: ToolContext, args: CompressArgs) -> CompressResult:
    keys = await session_keys(ctx.db, ctx.namespace, ctx.session)
    return await compress(ctx.db, keys, args, await _settings(ctx))


@tool(
    "decompress",
    args=DecompressArgs,
    result=DecompressResult,
    verbatim=("text",),
    description="Restore replaced history of this session by the id its tag line names: a fold gives its parts one "
    "tier down, a card the original tool output, a block its next level; full=true goes straight to the "
    f"originals. Over {INLINE_CAP:,} characters, use to_file=true to get a file path instead. placeholders counts "
    "the secrets redacted before storage ([secret:<kind>#<hash>]); 0 means the text is the original byte for byte.",
)
async def decompress_tool(ctx: ToolContext, args: DecompressArgs) -> DecompressResult:
    keys = await session_keys(ctx.db, ctx.namespace, ctx.session)
    return await decompress(
        ctx.db,
        namespace=ctx.namespace,
        session=ctx.session,
        keys=keys,
        args=args,
        data_dir=ctx.settings.db.parent,
        lam=ctx.settings.block_decay_lambda,
    )


@tool(
    "search_context",
    args=SearchArgs,
    result=SearchResult,
    description="Search this session's own earlier history, including what cards and folds replaced (tool outputs, "
    "messages, fold summaries). Each hit shows its path, e.g. f9(T3) → f4(T2) → c7 → s00042; decompress a ref to "
    "read it.",
)
async def search_tool(ctx: ToolContext, args: SearchArgs) -> SearchResult:
    keys = await session_keys(ctx.db, ctx.namespace, ctx.session)
    return await search_context(ctx.db, keys, args)
