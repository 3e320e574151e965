"""Reading blocks: current display level from decay, the view at any level, and expansion."""

from __future__ import annotations

import asyncio
import json
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel

from stratagate import ids
from stratagate.blocks.decay import display_level, weight
from stratagate.blocks.render import LEVEL_LABELS, render_l0, render_l2, render_l5
from stratagate.blocks.source import ROW_COLUMNS, SourceMessage, from_row
from stratagate.errors import Invalid, NotFound
from stratagate.safety.inert import inert
from stratagate.safety.secrets import placeholder_clause, placeholder_count
from stratagate.storage.db import Database, audit
from stratagate.timeutil import now_iso
from stratagate.tokens import count_tokens

_BLOCK_COLUMNS = (
    "b.id, b.namespace_id, b.session_id, s.key AS session, b.seq, b.first_turn, b.last_turn, b.status,"
    " b.sealed_at, b.ready_at, b.l5_tokens, b.l4, b.l4_tokens, b.l3, b.l3_tokens, b.l2, b.l2_tokens, b.l1,"
    " b.l1_tokens, b.l0_title, b.l0_tags, b.l0_tokens, b.anchor_level, b.anchor_pos, b.lifted_at, b.lifted_by"
)


class BlockRow(BaseModel):
    id: int
    namespace_id: int
    session_id: int
    session: str
    seq: int
    first_turn: int
    last_turn: int
    status: str
    sealed_at: str
    ready_at: str | None
    l5_tokens: int
    l4: str
    l4_tokens: int
    l3: str
    l3_tokens: int
    l2: str | None
    l2_tokens: int | None
    l1: str | None
    l1_tokens: int | None
    l0_title: str | None
    l0_tags: str | None
    l0_tokens: int | None
    anchor_level: int
    anchor_pos: int
    lifted_at: str | None
    lifted_by: str | None
    age: int = 0
    level: int = 5

    @property
    def ready(self) -> bool:
        return self.status == "ready"

    @property
    def ref(self) -> str:
        return ids.make("blk", self.id)

    def tokens_at(self, level: int) -> int:
        return {
            5: self.l5_tokens,
            4: self.l4_tokens,
            3: self.l3_tokens,
            2: self.l2_tokens,
            1: self.l1_tokens,
            0: self.l0_tokens,
        }[level] or 0

    def available_levels(self) -> list[int]:
        return [0, 1, 2, 3, 4, 5] if self.ready else [3, 4, 5]

    def meta(self, lam: float) -> dict[str, Any]:
        return {
            "id": self.ref,
            "session": self.session,
            "seq": self.seq,
            "status": self.status,
            "turns": [self.first_turn, self.last_turn],
            "sealed_at": self.sealed_at,
            "ready_at": self.ready_at,
            "level": self.level,
            "label": LEVEL_LABELS[self.level],
            "age": self.age,
            "weight": round(weight(self.age, lam), 4) if self.ready else 1.0,
            "tokens": {f"L{lv}": self.tokens_at(lv) for lv in self.available_levels()},
        }


def _with_decay(rows: list[BlockRow], lam: float) -> list[BlockRow]:
    ready_seqs = [b.seq for b in rows if b.ready]
    for block in rows:
        block.age = sum(1 for s in ready_seqs if s > block.anchor_pos)
        block.level = display_level(block.anchor_level, block.age, lam, block.ready)
    return rows


async def session_blocks(db: Database, ns_id: int, session_id: int, lam: float) -> list[BlockRow]:
    rows = await db.fetchall(
        f"SELECT {_BLOCK_COLUMNS} FROM blocks b JOIN sessions s ON s.id = b.session_id"
        " WHERE b.namespace_id = ? AND b.session_id = ? ORDER BY b.seq",
        (ns_id, session_id),
    )
    return _with_decay([BlockRow(**dict(r)) for r in rows], lam)


async def get_block(db: Database, ns_id: int, block_id: int, lam: float) -> BlockRow:
    row = await db.fetchone("SELECT session_id FROM blocks WHERE id = ? AND namespace_id = ?", (block_id, ns_id))
    if row is None:
        raise NotFound(f"unknown block {ids.make('blk', block_id)} in this namespace")
    for block in await session_blocks(db, ns_id, row["session_id"], lam):
        if block.id == block_id:
            return block
    raise NotFound(f"unknown block {ids.make('blk', block_id)} in this namespace")


async def block_messages(
    db: Database, ns_id: int, block_id: int, offset: int = 0, limit: int | None = None
) -> list[Any]:
    """The block's source messages in order; ``offset``/``limit`` select a page of them."""
    rows = await db.fetchall(
        f"SELECT {ROW_COLUMNS} FROM messages m JOIN turns t ON t.id = m.turn_id"
        " WHERE t.block_id = ? AND m.namespace_id = ? ORDER BY t.seq, m.position LIMIT ? OFFSET ?",
        (block_id, ns_id, -1 if limit is None else limit, offset),
    )
    return [from_row(r) for r in rows]


L5_PAGE_MESSAGES = 100
"""Default messages per page of a level-5 expansion."""
L5_PAGE_MAX_MESSAGES = 500
L5_PAGE_CHARS = 60_000
"""A page also ends once its messages hold this many characters (content, arguments, results; at least one message),
so one request's rendering stays bounded however many or however large the block's tool calls are."""


@dataclass
class L5Page:
    messages: list[SourceMessage]
    offset: int
    total: int

    @property
    def next_offset(self) -> int | None:
        end = self.offset + len(self.messages)
        return end if end < self.total else None

    def public(self) -> dict[str, Any]:
        nxt = self.next_offset
        return {"offset": self.offset, "count": len(self.messages), "total": self.total, "next_offset": nxt,
                "more": nxt is not None}


def _size(msg: SourceMessage) -> int:
    return len(msg.content) + len(msg.tool_arguments or "") + len(msg.tool_result or "")


async def l5_page(db: Database, block: BlockRow, offset: int, limit: int) -> L5Page:
    """Up to ``limit`` messages from ``offset``, cut at L5_PAGE_CHARS."""
    total = int(await db.scalar(
        "SELECT COUNT(*) FROM messages m JOIN turns t ON t.id = m.turn_id WHERE t.block_id = ? AND m.namespace_id = ?",
        (block.id, block.namespace_id),
    ) or 0)
    if offset and offset >= total:
        raise Invalid(f"offset {offset} is past the end of {block.ref}, which has {total} messages")
    messages = await block_messages(db, block.namespace_id, block.id, offset, limit)
    kept: list[Any] = []
    chars = 0
    for msg in messages:
        if kept and chars + _size(msg) > L5_PAGE_CHARS:
            break
        kept.append(msg)
        chars += _size(msg)
    return L5Page(kept, offset, total)


def _render_page(page: L5Page, whole_tokens: int) -> tuple[str, int, list[dict[str, Any]]]:
    """View, its tokens and the public messages of a page: CPU work, run off the event loop."""
    view = inert(render_l5(page.messages))
    whole = page.offset == 0 and page.next_offset is None
    return view, whole_tokens if whole else count_tokens(view), [m.public() for m in page.messages]


async def view_text(db: Database, block: BlockRow, level: int) -> str:
    if level == 5:  # rendered like the stored views (blocks/render.py seal_views), so its token count holds
        return inert(render_l5(await block_messages(db, block.namespace_id, block.id)))
    if level == 4:
        return block.l4
    if level == 3:
        return block.l3
    facts = json.loads(block.l2 or "[]")
    if level == 2:
        return render_l2(facts) if facts else block.l3
    if level == 1:
        return block.l1 or block.l3
    return render_l0(block.l0_title or "", json.loads(block.l0_tags or "[]"))


def parse_level(spec: object, current: int) -> int:
    """0–5, "L0".."L5", "raw"/"source" (5) or "next" (one level more detail than now)."""
    if isinstance(spec, bool):
        raise Invalid("level must be 0–5, 'L0'–'L5' or 'next'")
    if isinstance(spec, int) and 0 <= spec <= 5:
        return spec
    if isinstance(spec, str):
        text = spec.strip().lower()
        if text in ("next", "+1"):
            return min(5, current + 1)
        if text in ("raw", "source"):
            return 5
        text = text.removeprefix("l")
        if text.isdigit() and 0 <= int(text) <= 5:
            return int(text)
    raise Invalid(f"level must be 0–5, 'L0'–'L5' or 'next' (got {spec!r})")


async def expand_block(
    db: Database,
    ns_id: int,
    block_id: int,
    level_spec: object,
    caller_session: int | None,
    lam: float,
    actor: str,
    call_id: str | None = None,
    offset: int = 0,
    limit: int = L5_PAGE_MESSAGES,
) -> dict[str, Any]:
    """The view at the requested level. Expanding a block of the caller's session re-anchors its decay here.

    Level 5 comes in pages of its messages (``offset``, at most ``limit`` and L5_PAGE_CHARS): a block with
    thousands of tool calls is read page by page, and each page is rendered in a worker thread."""
    block = await get_block(db, ns_id, block_id, lam)
    target = parse_level(level_spec, block.level)
    note = None
    if target not in block.available_levels():
        note = f"L{target} is written by the model and this block is still pending; showing L3"
        target = 3
    if offset and target != 5:
        raise Invalid(f"offset pages level 5 (the source messages) only; L{target} is one text")
    page = await l5_page(db, block, offset, limit) if target == 5 else None
    reanchored = False
    if caller_session == block.session_id and target > block.level:
        async with db.transaction() as conn:
            (pos,) = await conn.execute_fetchall(
                "SELECT MAX(seq) FROM blocks WHERE session_id = ?", (block.session_id,)
            )
            stamp = now_iso()
            await conn.execute(
                "UPDATE blocks SET anchor_level = ?, anchor_pos = ?, lifted_at = ?, lifted_by = ? WHERE id = ?",
                (target, int(pos[0]), stamp, actor, block.id),
            )
            await audit(
                conn,
                ns_id,
                actor,
                "block.expanded",
                "block",
                block.ref,
                {"level": block.level, "anchor_level": block.anchor_level, "anchor_pos": block.anchor_pos},
                {"level": target, "anchor_level": target, "anchor_pos": int(pos[0]), "call_id": call_id},
            )
        block.anchor_level, block.anchor_pos, block.level, block.age = target, int(pos[0]), target, 0
        block.lifted_at, block.lifted_by = stamp, actor
        reanchored = True
    result = block.meta(lam)
    if page is None:
        view, view_tokens = await view_text(db, block, target), block.tokens_at(target)
    else:
        view, view_tokens, messages = await asyncio.to_thread(_render_page, page, block.tokens_at(5))
    result.update(
        level=target,
        label=LEVEL_LABELS[target],
        view=view,
        view_tokens=view_tokens,
        reanchored=reanchored,
        available_levels=block.available_levels(),
    )
    if page is not None:
        result["messages"] = messages
        result["page"] = page.public()
        result["placeholders"] = secrets = placeholder_count(view)
        if secrets:
            note = f"{note}; " if note else ""
            note += f"the source is {placeholder_clause(secrets)}"
    if note:
        result["note"] = note
    return result
