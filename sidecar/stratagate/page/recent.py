"""Recent memory on the Memory page: sessions, their blocks at the current decay level, any level of a block, and a
message with its neighbours (where an event's source link lands).

Levels, decay and views are blocks/views.py's (``session_blocks``, ``view_text``); hiding forgotten memories is
events/forgotten.py's (``shown_view``, ``message_event``), so the page shows what ``memory_expand_block`` shows. The
page only reads: it never re-anchors a block (that is the agent's expansion in its own session)."""

from __future__ import annotations

import json
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from stratagate import ids
from stratagate.app import App
from stratagate.blocks.source import SourceMessage
from stratagate.blocks.views import BlockRow, block_messages, get_block, session_blocks
from stratagate.errors import Invalid, NotFound
from stratagate.events import forgotten
from stratagate.page import read_queries as q
from stratagate.page.overview import BlockCounts
from stratagate.protocol import method
from stratagate.protocol.types import Name, Result
from stratagate.safety.secrets import placeholder_count
from stratagate.storage import lookup


class NamespaceParams(BaseModel):
    model_config = ConfigDict(extra="forbid")

    namespace: Name


class SessionView(Result):
    name: str
    started_at: str
    last_turn_at: str | None
    turns: int
    blocks: BlockCounts


class SessionsResult(Result):
    sessions: list[SessionView]


@method("page.sessions.list", params=NamespaceParams, result=SessionsResult, http="GET /sessions")
async def sessions_list(app: App, p: NamespaceParams) -> SessionsResult:
    """The namespace's sessions, the most recently active first."""
    ns = await lookup.namespace_id(app.db, p.namespace)
    return SessionsResult(sessions=[
        SessionView(name=r["name"], started_at=r["started_at"], last_turn_at=r["last_turn_at"], turns=r["turns"],
                    blocks=BlockCounts(ready=r["ready"], pending=r["pending"]))
        for r in await q.sessions(app.db, ns)
    ])


class Message(Result):
    """One captured message. A message of a forgotten memory has ``hidden`` (the marker) as its content and no tool
    arguments or result; an erased one already reads ``[erased]``."""

    id: str
    session: str
    turn: int
    role: Literal["user", "assistant", "tool"]
    content: str
    at: str
    tool_name: str | None = None
    call_id: str | None = None
    arguments: Any = None
    result: Any = None
    is_error: bool | None = None
    hidden: str | None = None
    # Secret placeholders in content, arguments and result: 0 means the message is shown exactly as it was said.
    placeholders: int = 0


def message_view(msg: SourceMessage, session: str, hidden: forgotten.Forgotten) -> Message:
    event_id = hidden.message_event(msg) if hidden else None
    if event_id is not None:
        mark = hidden.marker(event_id)
        return Message(id=msg.ref, session=session, turn=msg.turn_seq, role=msg.role, content=mark,
                       at=msg.created_at, tool_name=msg.tool_name, hidden=mark)
    out = Message(id=msg.ref, session=session, turn=msg.turn_seq, role=msg.role, content=msg.content,
                  at=msg.created_at)
    if msg.role == "tool":
        out.tool_name, out.call_id, out.is_error = msg.tool_name, msg.tool_call_id, msg.is_error
        out.arguments, out.result = msg.arguments_value(), msg.result_value()
    out.placeholders = placeholder_count(msg.content or "") + sum(
        placeholder_count(json.dumps(v, ensure_ascii=False)) for v in (out.arguments, out.result) if v is not None
    )
    return out


def _source(row: Any) -> SourceMessage:
    return SourceMessage(**{k: row[k] for k in SourceMessage.model_fields if k in row.keys()})


class BlocksParams(BaseModel):
    model_config = ConfigDict(extra="forbid")

    namespace: Name
    session: Name
    limit: int = Field(50, ge=1, le=200)
    offset: int = Field(0, ge=0)


class BlockItem(Result):
    id: str
    session: str
    status: str
    first_turn: int
    last_turn: int
    level: int
    title: str | None
    summary_source: str | None
    tokens: dict[str, int]
    tool_records: int
    sealed_at: str
    ready_at: str | None


class BlocksResult(Result):
    blocks: list[BlockItem]
    total: int


def _title(block: BlockRow, hidden: forgotten.Forgotten) -> str | None:
    if not block.ready or block.l0_title is None:
        return None
    if hidden and hidden.restates(block.l0_title, with_titles=True) is not None:
        return "[hidden: the title restates a forgotten memory]"
    return block.l0_title


@method("page.blocks.list", params=BlocksParams, result=BlocksResult, http="GET /blocks")
async def blocks_list(app: App, p: BlocksParams) -> BlocksResult:
    """One session's blocks, oldest first, each at its current decay level."""
    ns = await lookup.namespace_id(app.db, p.namespace)
    sess = await lookup.session_id(app.db, ns, p.session)
    if sess is None:
        raise NotFound(f"unknown session {p.session!r} in namespace {p.namespace!r}")
    blocks = await session_blocks(app.db, ns, sess, app.settings.block_decay_lambda)
    extras = await q.block_extras(app.db, ns, sess)
    hidden = await forgotten.load(app.db, ns, sess)
    page = blocks[p.offset: p.offset + p.limit]
    return BlocksResult(total=len(blocks), blocks=[
        BlockItem(
            id=b.ref, session=b.session, status=b.status, first_turn=b.first_turn, last_turn=b.last_turn,
            level=b.level, title=_title(b, hidden), summary_source=extras.get(b.id, (None, 0))[0],
            tokens={str(lv): b.tokens_at(lv) for lv in b.available_levels()},
            tool_records=extras.get(b.id, (None, 0))[1], sealed_at=b.sealed_at, ready_at=b.ready_at,
        )
        for b in page
    ])


class BlockViewParams(BaseModel):
    model_config = ConfigDict(extra="forbid")

    namespace: Name
    id: str = Field(description="blk_N")
    level: int = Field(ge=0, le=5)


class ToolRecord(Result):
    name: str | None
    call_id: str | None
    arguments: Any = None
    result: Any = None
    hidden: str | None = None


class BlockView(Result):
    id: str
    status: str
    level: int
    text: str
    note: str | None = None
    messages: list[Message] | None = None
    tool_records: list[ToolRecord]


def parse_id(value: str, prefix: str, example: str) -> int:
    key = ids.parse(value, prefix)
    if key is None:
        raise Invalid(f"id must look like {example!r} (got {value!r})")
    return key


@method("page.blocks.view", params=BlockViewParams, result=BlockView, http="GET /block")
async def block_view(app: App, p: BlockViewParams) -> BlockView:
    """A block at any level 0–5 (5: every message with its tool calls), as memory_expand_block shows it."""
    ns = await lookup.namespace_id(app.db, p.namespace)
    block = await get_block(app.db, ns, parse_id(p.id, "blk", "blk_12"), app.settings.block_decay_lambda)
    level, note = p.level, None
    if level not in block.available_levels():
        level, note = 3, f"L{p.level} is written by the model and this block is still pending; showing L3"
    hidden = await forgotten.load(app.db, ns, block.session_id)
    text = await forgotten.shown_view(app.db, block, level, hidden)
    messages = [message_view(m, block.session, hidden) for m in await block_messages(app.db, ns, block.id)]
    records = [
        ToolRecord(name=m.tool_name, call_id=m.call_id, arguments=m.arguments, result=m.result, hidden=m.hidden)
        for m in messages if m.role == "tool"
    ]
    return BlockView(id=block.ref, status=block.status, level=level, text=text, note=note,
                     messages=messages if level == 5 else None, tool_records=records)


class MessageParams(BaseModel):
    model_config = ConfigDict(extra="forbid")

    namespace: Name
    id: str = Field(description="msg_N")
    around: int = Field(2, ge=0, le=10)


class MessageResult(Result):
    message: Message
    around: list[Message]


@method("page.messages.get", params=MessageParams, result=MessageResult, http="GET /message")
async def message_get(app: App, p: MessageParams) -> MessageResult:
    """One message and up to ``around`` messages before and after it in its session."""
    ns = await lookup.namespace_id(app.db, p.namespace)
    row = await q.message(app.db, ns, parse_id(p.id, "msg", "msg_40"))
    if row is None:
        raise NotFound(f"unknown message {p.id} in namespace {p.namespace!r}")
    hidden = await forgotten.load(app.db, ns, int(row["session_id"]))
    around = await q.neighbours(app.db, ns, row, p.around) if p.around else []
    return MessageResult(
        message=message_view(_source(row), row["session"], hidden),
        around=[message_view(_source(r), r["session"], hidden) for r in around],
    )
