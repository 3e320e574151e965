"""The archive: every new surface node stored once, as the model saw it, before anything replaces it.

DSH's surface nodes are ``user/message`` (data = the message), ``assistant/message`` and ``tool/result`` (data =
``{turn, step, message}``). A node's kind says what it is to the engine: the human's message, a runtime-context
snapshot (``source.plugin == '@deepseek-ai/dsh-system-prompt'``: stored as a placeholder, never its text), another
plugin's message, a compaction checkpoint (ours or DSH's own summary), an assistant message (its tool calls in
``calls``) or a tool result. Text is redacted before it is stored; tokens are exact DeepSeek V4 counts of what the
model reads (the runtime context's real size, so the window accounting stays right).
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import Any

from stratagate.context import queries
from stratagate.context.models import SurfaceEvent
from stratagate.context.records import RUNTIME_PLACEHOLDER, RUNTIME_PLUGIN, Call, Node
from stratagate.errors import DomainError
from stratagate.redact import redact
from stratagate.storage.sqlite import Connection

MESSAGE_TYPES = ("user/message", "assistant/message", "tool/result")
CHECKPOINT_PLUGIN = "compact"
"""compactCheckpointSource's marker ({kind:'plugin', plugin:'compact', compactionId}): any engine's checkpoint."""


def _texts(content: Any, types: Sequence[str] = ("text",)) -> list[str]:
    if isinstance(content, str):
        return [content]
    if not isinstance(content, list):
        return []
    return [
        b["text"] for b in content if isinstance(b, dict) and b.get("type") in types and isinstance(b.get("text"), str)
    ]


def _arguments(value: Any) -> str:
    if isinstance(value, str):
        return value
    return json.dumps(value, ensure_ascii=False, separators=(",", ":")) if value is not None else ""


def _int(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def result_text(message: dict[str, Any]) -> tuple[str, bool, str | None]:
    """(the result's text exactly as sent, error flag, tool call id) of a tool/result message."""
    parts: list[str] = []
    is_error = False
    call_id = None
    for block in message.get("content") or []:
        if not isinstance(block, dict):
            continue
        if block.get("type") == "tool-result":
            parts.extend(_texts(block.get("content")))
            is_error = is_error or bool(block.get("isError"))
            call_id = call_id or block.get("toolCallId")
        elif block.get("type") == "text" and isinstance(block.get("text"), str):
            parts.append(block["text"])
    source = got if isinstance(got := message.get("source"), dict) else {}
    call_id = source.get("callId") or call_id
    return "".join(parts), is_error, call_id if isinstance(call_id, str) else None


def classify(event: SurfaceEvent, count: Callable[[str], int], tool_names: dict[str, str]) -> Node | None:
    """The archived form of one surface event (None: not a message, nothing to archive). ``tool_names`` maps call
    ids seen so far to their tool (a result names only its call id)."""
    data = event.data or {}
    replaces = tuple(s for s in (event.sourceEventSeqs or []) if isinstance(s, int))
    if event.type == "user/message":
        source = got if isinstance(got := data.get("source"), dict) else {}
        text = "\n".join(_texts(data.get("content")))
        if source.get("kind") == "plugin" and source.get("plugin") == RUNTIME_PLUGIN:
            return Node(event.seq, event.type, "runtime", None, None, None, None, (), False, RUNTIME_PLACEHOLDER,
                        count(text), replaces)
        if source.get("kind") == "plugin" and source.get("plugin") == CHECKPOINT_PLUGIN:
            kind = "checkpoint"
        elif source.get("kind") in ("user", None):
            kind = "user"
        else:
            kind = "other"
        return Node(event.seq, event.type, kind, None, None, None, None, (), False, redact(text), count(text),
                    replaces)
    if event.type == "assistant/message":
        message = got if isinstance(got := data.get("message"), dict) else {}
        content = message.get("content") or []
        text = "\n".join(_texts(content))
        reasoning = "\n".join(_texts(content, ("reasoning",)))
        calls: list[Call] = []
        for block in content if isinstance(content, list) else []:
            if isinstance(block, dict) and block.get("type") == "tool-call":
                call_id = block.get("id") or block.get("callId") or block.get("toolCallId")
                if isinstance(call_id, str):
                    name = str(block.get("name") or "")
                    calls.append(Call(call_id, redact(name), redact(_arguments(block.get("arguments")))))
                    tool_names[call_id] = name
        tokens = count(text) + count(reasoning) + sum(count(c.name) + count(c.arguments) for c in calls)
        return Node(event.seq, event.type, "assistant", _int(data.get("turn")), _int(data.get("step")), None, None,
                    tuple(calls), False, redact(text), tokens, replaces)
    if event.type == "tool/result":
        message = got if isinstance(got := data.get("message"), dict) else {}
        text, is_error, call_id = result_text(message)
        tool_name = tool_names.get(call_id or "")
        return Node(event.seq, event.type, "tool", _int(data.get("turn")), _int(data.get("step")), call_id,
                    redact(tool_name) if tool_name else None, (), is_error, redact(text), count(text), replaces)
    return None


def _fill_turns(nodes: list[Node], open_turn: int | None) -> list[Node]:
    """User-side nodes carry no turn: each takes the turn of the next node that has one (else the open turn)."""
    out: list[Node] = []
    following = open_turn
    for node in reversed(nodes):
        if node.turn is None:
            node = replace(node, turn=following)
        else:
            following = node.turn
        out.append(node)
    return list(reversed(out))


def to_nodes(
    surface: Sequence[SurfaceEvent], count: Callable[[str], int], open_turn: int | None,
    known: dict[int, Node] | None = None, replaced_turns: dict[int, int | None] | None = None,
) -> tuple[list[int], list[Node]]:
    """(the surface's message seqs in surface order, the nodes of the seqs not in ``known``) — pure.
    ``replaced_turns`` gives the turn of archived nodes a replacement shadows: a checkpoint belongs to the turn of
    the first node it replaces (so a block over a later turn does not take it for one of its own)."""
    known = known or {}
    replaced_turns = replaced_turns or {}
    tool_names = {c.call_id: c.name for n in known.values() for c in n.calls}
    fresh: dict[int, Node] = {}
    order: list[int] = []
    for event in surface:
        if event.type not in MESSAGE_TYPES:
            continue  # not a message: nothing the model reads as history (kept out of the engine's surface)
        order.append(event.seq)
        if event.seq in known:
            continue
        node = classify(event, count, tool_names)
        if node is not None:
            if node.turn is None and node.replaces:
                turn = next((replaced_turns[r] for r in node.replaces if replaced_turns.get(r) is not None), None)
                node = replace(node, turn=turn)
            fresh[node.seq] = node
    # Turns come from the whole surface: a new user message before archived assistant nodes takes their turn.
    by_seq = {**known, **fresh}
    ordered = _fill_turns([by_seq[s] for s in order if s in by_seq], open_turn)
    return order, [n for n in ordered if n.seq in fresh]


async def archive_surface(
    conn: Connection,
    ns_id: int,
    session_id: int,
    surface: Sequence[SurfaceEvent],
    count: Callable[[str], int],
    open_turn: int | None,
) -> tuple[list[int], int]:
    """Archive the surface's new nodes (inside the caller's write transaction). Returns (the surface's message seqs
    in surface order, how many nodes were new). A node the sidecar has not archived must carry its data."""
    seqs = [e.seq for e in surface]
    if len(set(seqs)) != len(seqs):
        raise DomainError("surface: a seq appears twice")
    known = await queries.archived_seqs(conn, session_id, seqs)
    missing = [e.seq for e in surface if e.seq not in known and e.data is None and e.type in MESSAGE_TYPES]
    if missing:
        raise DomainError(
            f"surface: seq {missing[0]} was never archived, so its data is needed (send data for every seq above "
            "archived_through)"
        )
    known_nodes = await queries.nodes_by_seqs(conn, session_id, [s for s in seqs if s in known])
    shadowed = sorted({r for e in surface if e.seq not in known for r in (e.sourceEventSeqs or [])})
    replaced = await queries.nodes_by_seqs(conn, session_id, shadowed) if shadowed else {}
    # Redaction and token counts of a large surface take seconds: off the event loop (to_nodes is pure).
    order, fresh = await asyncio.to_thread(
        to_nodes, surface, count, open_turn, known_nodes, {s: n.turn for s, n in replaced.items()}
    )
    new = 0
    for node in fresh:
        if await queries.insert_node(conn, ns_id, session_id, node):
            new += 1
    return order, new
