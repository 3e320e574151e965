"""DSH's raw session events, as the shim forwards them (shapes of DSH 0.1.0-rc.8's session.jsonl).

Tolerant by design: an event of a type this module does not know, or with fields it does not use, is kept and
ignored by the fold; only the envelope (``type``, ``time``, ``data``) is checked. DSH may add event types and
fields at any time, and a capture must never be refused for that.
"""

from __future__ import annotations

import json
from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field, StringConstraints

TURN_EVENT_TYPES = ("turn/start", "user/message", "assistant/message", "tool/call", "tool/result", "turn/end")
"""The event types the fold and the recall query read. The shim forwards only these (``stratagate turn-events`` >
plugin/turn-events.json): the others (stream deltas, request headers with the whole system prompt and tool schemas,
titles, steps) would only multiply the size of every spooled turn and every step."""

OWN_TOOL_PREFIX = "memory_"
"""The plugin's own tools: their calls are not captured (reading memory is not new evidence)."""
OWN_TOOL_NAMES = frozenset({"compress", "decompress", "search_context"})
"""The context-window tools, named plainly (the model knows them by these names): also the plugin's own."""


class RawEvent(BaseModel):
    """One ``session/event`` envelope: ``{type, seq, time, data}``; anything else is kept but unused."""

    model_config = ConfigDict(extra="allow")

    type: Annotated[str, StringConstraints(max_length=256)]
    time: Any = Field(None, description="Epoch milliseconds (anything else: the fold uses the current time).")
    data: dict[str, Any] = Field(default_factory=dict)


def text_of_blocks(blocks: Any) -> str:
    """Model-facing text of content blocks: text (and text inside tool results) joined by newlines; images
    become ``[image]``; reasoning and tool-call blocks are not text."""
    if not isinstance(blocks, list):
        return ""
    out: list[str] = []
    for block in blocks:
        if not isinstance(block, dict):
            continue
        kind = block.get("type")
        if kind == "text" and isinstance(block.get("text"), str):
            if block["text"].strip():
                out.append(block["text"])
        elif kind == "tool-result":
            nested = text_of_blocks(block.get("content"))
            if nested:
                out.append(nested)
        elif kind == "image":
            out.append("[image]")
    return "\n".join(out)


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


def parse_arguments(raw: Any) -> Any:
    """A tool call's raw JSON argument string, parsed; text that is not JSON is kept as ``{"raw": text}``."""
    if not isinstance(raw, str):
        return raw
    if raw.strip() == "":
        return {}
    try:
        return json.loads(raw, parse_constant=_no_constant)
    except ValueError:
        return {"raw": raw}


def is_human(message: Any) -> bool:
    """A human prompt, not plugin-injected context, a runtime-context snapshot or a compaction checkpoint."""
    source = message.get("source") if isinstance(message, dict) else None
    return isinstance(source, dict) and source.get("kind") == "user"


def result_call_id(message: Any) -> str:
    """The call id a ``tool/result`` message answers."""
    if not isinstance(message, dict):
        return ""
    source = message.get("source")
    if isinstance(source, dict) and source.get("callId") is not None:
        return str(source["callId"])
    content = message.get("content")
    if isinstance(content, list) and content and isinstance(content[0], dict):
        if content[0].get("toolCallId") is not None:
            return str(content[0]["toolCallId"])
    return ""


def is_replacement(event: RawEvent) -> bool:
    """An event that rewrites earlier history instead of adding to it: DSH marks every replacement with an object
    ``surfaceOp`` (``{op: 'replace', start, end}``; a new message is ``'append'``). The context engine lands its
    cards that way (a ``tool/result`` re-sent under the replaced call's id, its text the card) and its folds, digests
    and block views as checkpoints (a ``user/message``); DSH's own compaction and tool-result pruner do the same.
    None of them is something the agent or the human said in this turn."""
    extra = event.model_extra or {}
    return isinstance(extra.get("surfaceOp"), dict)


def own_tool(name: Any) -> bool:
    return isinstance(name, str) and (name.startswith(OWN_TOOL_PREFIX) or name in OWN_TOOL_NAMES)
