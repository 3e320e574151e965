"""memory_search_raw: ranked search over the source messages, tool calls and results included.

The ranking lives in ``stratagate.search.raw``; this module is the agent-facing shape: arguments, filters,
neighbouring messages and where to read more (the block and level to expand, or the open tail).
"""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from stratagate import ids
from stratagate.errors import Invalid
from stratagate.events import forgotten as forgotten_mod
from stratagate.protocol import ToolContext, tool
from stratagate.protocol.tool_results import SearchRawResult
from stratagate.search.raw import Ranked, RawFilters, by_time, iso, message_rows, neighbour_ids, plan, rank
from stratagate.storage import lookup

SNIPPET_CHARS = 600
NEIGHBOUR_CHARS = 240
RELEVANT_FRACTION = 0.5  # with temporal_intent: hits scoring at least this share of the best one, then by time
Role = Literal["user", "assistant", "tool"]


class SearchRawArgs(BaseModel):
    model_config = ConfigDict(extra="forbid")

    query: str = Field(
        "",
        max_length=2000,
        description="Words to look for in past messages (any language; dates like 'May 2023' match "
        "'2023-05-08'). May be empty only when a filter is given: then every message that passes the filters.",
    )
    limit: int = Field(8, ge=1, le=50, description="Maximum number of hits (1–50).")
    scope: Literal["all", "session"] = Field(
        "all", description="'all' sessions of this project, or only this 'session'."
    )
    session: str | None = Field(None, max_length=512, description="Only this session key (from an earlier hit).")
    roles: list[Role] | None = Field(None, min_length=1, description="Only these roles, e.g. ['tool'].")
    after: datetime | None = Field(None, description="Only messages written at or after this time (ISO 8601).")
    before: datetime | None = Field(None, description="Only messages written before this time (ISO 8601).")
    temporal_intent: Literal["first", "latest"] | None = Field(
        None,
        description="'first' or 'latest': of the relevant matches, the earliest or the most recent first "
        "(e.g. when was X first mentioned, what is the latest on X).",
    )

    @field_validator("after", "before")
    @classmethod
    def _aware(cls, value: datetime | None) -> datetime | None:
        if value is not None and value.tzinfo is None:
            raise ValueError("timestamp needs a timezone (e.g. 2026-05-01T09:30:00Z)")
        return value


def _clip(text: str, chars: int = SNIPPET_CHARS) -> str:
    return text if len(text) <= chars else text[:chars] + "…"


def _text(r: Any) -> str:
    if r["role"] == "tool":
        return f"Tool call: {r['tool_name']} {r['tool_arguments']}\nTool result: {r['tool_result']}"
    return r["content"]


async def _rows(ctx: ToolContext, message_ids: list[int]) -> dict[int, Any]:
    return await message_rows(ctx.db, message_ids)


async def _filters(ctx: ToolContext, ns: int, args: SearchRawArgs) -> RawFilters:
    sessions: tuple[int, ...] | None = None
    if args.scope == "session" and args.session is not None and args.session != ctx.session:
        raise Invalid("give either scope='session' (this session) or session=<key>, not both")
    key = ctx.session if args.scope == "session" else args.session
    if key is not None:
        sid = await lookup.session_id(ctx.db, ns, key)
        sessions = (sid if sid is not None else -1,)
    if args.after and args.before and args.before <= args.after:
        raise Invalid("'before' must be later than 'after'")
    return RawFilters(
        session_ids=sessions,
        roles=tuple(args.roles) if args.roles else None,
        after=iso(args.after),
        before=iso(args.before),
    )


async def _filtered_by_time(ctx: ToolContext, ns: int, filters: RawFilters, args: SearchRawArgs) -> list[Ranked]:
    """An empty query: the messages that pass the filters, newest first (oldest first for 'first')."""
    return await by_time(ctx.db, ns, filters, args.temporal_intent == "first", args.limit)


def _by_time(ranked: list[Ranked], rows: dict[int, Any], intent: str) -> list[Ranked]:
    if not ranked:
        return ranked
    best = ranked[0].score
    relevant = [h for h in ranked if h.score >= RELEVANT_FRACTION * best]
    return sorted(
        relevant, key=lambda h: (rows[h.message_id]["created_at"], h.message_id), reverse=intent == "latest"
    )


@tool(
    "memory_search_raw",
    args=SearchRawArgs,
    result=SearchRawResult,
    evidence=True,
    description="Search the source messages of this project's memory (user, assistant, tool calls and results), best "
    "match first, across sealed blocks and the open tail. Each hit carries its previous and next message and "
    "names its block: expand that block at level 5 to read the full source. Filters: scope, session, roles, "
    "after/before; temporal_intent 'first'/'latest' orders the relevant matches by time. Words that match "
    "nothing return nothing.",
)
async def search_raw(ctx: ToolContext, args: SearchRawArgs) -> dict[str, Any]:
    ns = await lookup.namespace_id(ctx.db, ctx.namespace)
    filters = await _filters(ctx, ns, args)
    query = args.query.strip()
    out: dict[str, Any] = {"query": args.query}
    if not query:
        if not filters.any():
            raise Invalid(
                "query is empty: give words to search for, or a filter (scope, session, roles, after, before) "
                "to list the messages that pass it"
            )
        ranked = await _filtered_by_time(ctx, ns, filters, args)
        out["note"] = "empty query: the messages that pass the filters, " + (
            "oldest first" if args.temporal_intent == "first" else "newest first"
        )
    else:
        if not plan(query).terms:
            return out | {"hits": [], "note": "the query has no searchable words (only stopwords)"}
        ranked = await rank(ctx.db, ns, query, filters, dense=ctx.dense)
        if not ranked:
            out["hits"] = []
            out["note"] = "no message matches these words" + (" within the filters" if filters.any() else "")
            return out
        if args.temporal_intent:
            pool = ranked[: max(args.limit * 4, 50)]
            ranked = _by_time(pool, await _rows(ctx, [h.message_id for h in pool]), args.temporal_intent)
            out["note"] = f"the relevant matches ordered by time, {args.temporal_intent} first"
    viewer = await lookup.session_id(ctx.db, ns, ctx.session)
    forgotten = await forgotten_mod.load(ctx.db, ns, viewer)
    hidden: set[int] = set()
    if forgotten:
        ranked = await _unhidden(ctx, ranked, args.limit, forgotten, hidden)
    ranked = ranked[: args.limit]
    rows = await _rows(ctx, [h.message_id for h in ranked])
    links = await neighbour_ids(ctx.db, [h.message_id for h in ranked])
    around = await _rows(ctx, sorted({n for pair in links.values() for n in pair if n is not None}))
    if forgotten:
        for mid, row in list(around.items()):
            if forgotten.message_event(row) is not None:
                hidden.add(mid)
                del around[mid]
        for h in ranked:
            if h.answers is not None and (h.answers in hidden or forgotten.message_event(
                    (await _rows(ctx, [h.answers]))[h.answers]) is not None):
                hidden.add(h.answers)
                h.answers = None
    out["hits"] = [_hit(h, rows[h.message_id], links.get(h.message_id, (None, None)), around, query) for h in ranked]
    if hidden:
        out["hidden"] = len(hidden)
        out["hidden_note"] = (
            f"{len(hidden)} matching or neighbouring message(s) belong to forgotten memories and are not shown; "
            "memory_restore brings them back"
        )
    return out


async def _unhidden(
    ctx: ToolContext, ranked: list[Ranked], limit: int, forgotten: forgotten_mod.Forgotten, hidden: set[int]
) -> list[Ranked]:
    """The best ``limit`` hits that are neither sources of a forgotten event nor restate one."""
    kept: list[Ranked] = []
    for start in range(0, len(ranked), 50):
        chunk = ranked[start : start + 50]
        rows = await _rows(ctx, [h.message_id for h in chunk])
        for h in chunk:
            if forgotten.message_event(rows[h.message_id]) is not None:
                hidden.add(h.message_id)
            else:
                kept.append(h)
        if len(kept) >= limit:
            break
    return kept


def _neighbour(row: Any | None) -> dict[str, Any] | None:
    if row is None:
        return None
    return {
        "message_id": ids.make("msg", row["id"]),
        "role": row["role"],
        "turn": row["turn"],
        "created_at": row["created_at"],
        "text": _clip(_text(row), NEIGHBOUR_CHARS),
    }


def _hit(h: Ranked, r: Any, link: tuple[int | None, int | None], around: dict[int, Any], query: str) -> dict[str, Any]:
    block = ids.make("blk", r["block_id"]) if r["block_id"] else None
    hit: dict[str, Any] = {
        "message_id": ids.make("msg", r["id"]),
        "role": r["role"],
        "session": r["session"],
        "turn": r["turn"],
        "turn_id": ids.make("turn", r["turn_id"]),
        "created_at": r["created_at"],
        "block_id": block,
        "block_status": r["block_status"],
        "expand_level": 5 if block else None,
        "where": f"block {block}: memory_expand_block(id='{block}', level=5) shows the source"
        if block
        else "open tail: not sealed into a block yet; the neighbours show its context",
        "score": round(h.score, 4) if query else None,
        "matched": h.matched,
        "text": _clip(_text(r)),
        "before": _neighbour(around.get(link[0]) if link[0] is not None else None),
        "after": _neighbour(around.get(link[1]) if link[1] is not None else None),
    }
    if h.answers is not None:
        hit["answers"] = ids.make("msg", h.answers)  # no query word here: it answers the matching question before
    if r["role"] == "tool":
        hit["tool_name"] = r["tool_name"]
        hit["is_error"] = bool(r["is_error"])
    return hit

