"""Fold one DSH turn's raw events (its ``turn/start`` … ``turn/end``) into the ``turn.capture`` params.

The rules (formerly shim-js/fold.js): replacements are not turn content (the context engine's cards, folds, digests
and block views, DSH's own summaries and pruned results: every event DSH marks with an object ``surfaceOp``); the
user text is the turn's human prompts only (no injected context, runtime-context snapshots or compaction
checkpoints); the assistant text is every step's text (no reasoning); every tool call is kept with parsed arguments,
its result (DSH's canonical value when the shim saw one, else the rendered text) and its error flag, except the
plugin's own tools; a call left without result is an error; the times come from the events; the receipt is
``dsh:<session>:turn:<n>``, so re-sending a turn is idempotent.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from stratagate.dsh.events import (
    RawEvent,
    is_human,
    is_replacement,
    own_tool,
    parse_arguments,
    result_call_id,
    text_of_blocks,
)

DEFAULT_MAX_CAPTURE_BYTES = 7 * 1024 * 1024
"""The largest folded turn kept whole (bigger ones lose the longest tool results first, with a visible marker)."""


def receipt_of(session: str, turn: Any) -> str:
    return f"dsh:{session}:turn:{turn}"


def _iso(ms: Any, now_ms: float) -> str:
    value = ms if isinstance(ms, int | float) and not isinstance(ms, bool) else now_ms
    try:
        at = datetime.fromtimestamp(value / 1000, UTC)
    except (OverflowError, OSError, ValueError):
        at = datetime.fromtimestamp(now_ms / 1000, UTC)
    return at.isoformat(timespec="milliseconds").replace("+00:00", "Z")


@dataclass
class _Turn:
    """What the events of one turn said so far."""

    canonical: dict[str, Any]
    turn: Any = None
    started_at: float | None = None
    ended_at: float | None = None
    end_reason: Any = None
    user: list[str] = field(default_factory=list)
    steps: list[str] = field(default_factory=list)
    tools: list[dict[str, Any]] = field(default_factory=list)
    by_call: dict[str, dict[str, Any]] = field(default_factory=dict)
    skipped: set[str] = field(default_factory=set)

    def add(self, event: RawEvent) -> None:
        data = event.data
        if is_replacement(event):  # a card for an earlier call would read as a call of this turn named "unknown"
            return
        if event.type == "turn/start":
            self.turn = data.get("turn", self.turn) if data.get("turn") is not None else self.turn
            self.started_at = event.time if event.time is not None else self.started_at
        elif event.type == "user/message":
            if is_human(data) and (text := text_of_blocks(data.get("content"))):
                self.user.append(text)
        elif event.type == "assistant/message":
            message = data.get("message")
            if isinstance(message, dict) and (text := text_of_blocks(message.get("content"))):
                self.steps.append(text)
        elif event.type == "tool/call":
            self._call(data)
        elif event.type == "tool/result":
            self._result(data)
        elif event.type == "turn/end":
            self.turn = data.get("turn", self.turn) if data.get("turn") is not None else self.turn
            self.ended_at = event.time
            reason = data.get("reason")
            self.end_reason = reason.get("kind") if isinstance(reason, dict) else None

    def _call(self, data: dict[str, Any]) -> None:
        call_id = "" if data.get("callId") is None else str(data["callId"])
        if own_tool(data.get("name")):
            self.skipped.add(call_id)
            return
        record: dict[str, Any] = {
            "name": "unknown" if data.get("name") is None else str(data["name"]),
            "arguments": parse_arguments(data.get("arguments")),
            "result": None,
            "is_error": False,
        }
        if call_id:
            record["call_id"] = call_id
        self.by_call[call_id] = record
        self.tools.append(record)

    def _record_of(self, call_id: str) -> dict[str, Any]:
        record = self.by_call.get(call_id)
        if record is None:  # a result without its call (a partial event list): the agent's output still, keep it
            record = {"name": "unknown", "arguments": None, "result": None, "is_error": False}
            if call_id:
                record["call_id"] = call_id
            self.by_call[call_id] = record
            self.tools.append(record)
        return record

    def _result(self, data: dict[str, Any]) -> None:
        message = got if isinstance(got := data.get("message"), dict) else {}
        call_id = result_call_id(message)
        if call_id in self.skipped:
            return
        record = self._record_of(call_id)
        content = message.get("content")
        block = next((b for b in content if isinstance(b, dict) and b.get("type") == "tool-result"), None) if (
            isinstance(content, list)
        ) else None
        flag = block.get("isError") if block is not None else None
        if flag is None:
            flag = message.get("isError")
        if flag is None:
            flag = data.get("error")
        is_error = bool(flag)
        if not is_error and call_id in self.canonical:
            record["result"] = self.canonical[call_id]
        else:
            record["result"] = text_of_blocks(content)
        record["is_error"] = is_error

    def close_unanswered(self) -> None:
        """Calls that never got a result (an aborted turn): errors without a result."""
        for record in self.tools:
            if record["result"] is None and not record["is_error"]:
                record["is_error"] = True
                ended = self.end_reason and self.end_reason != "completed"
                record["result"] = f"no result: the turn ended ({self.end_reason})" if ended else "no result"


def fold_turn(
    events: list[RawEvent], session: str, canonical: dict[str, Any] | None = None, now_ms: float | None = None
) -> dict[str, Any] | None:
    """The ``turn.capture`` params (without ``namespace``) of one turn, or None when it holds nothing to store.

    ``canonical`` maps a tool call id to DSH's canonical result value (``tools/result``), preferred over the
    rendered text for successful calls.
    """
    now = time.time() * 1000 if now_ms is None else now_ms
    t = _Turn(canonical or {})
    for event in events:
        t.add(event)
    if t.turn is None:
        return None
    t.close_unanswered()
    user_text = "\n\n".join(t.user)
    assistant_text = "\n\n".join(t.steps)  # narration of earlier steps ("Let me check…") before the answer
    if not user_text.strip() and not assistant_text.strip() and not t.tools:
        return None
    started_at, ended_at = t.started_at, t.ended_at
    start = started_at if started_at is not None else ended_at if ended_at is not None else now
    end = ended_at if ended_at is not None else started_at if started_at is not None else now
    params: dict[str, Any] = {
        "session": session,
        "receipt": receipt_of(session, t.turn),
        "user": user_text,
        "assistant": assistant_text,
        "tools": t.tools,
        "started_at": _iso(start, now),
        "ended_at": _iso(max(start, end), now),
    }
    if t.end_reason:
        params["end_reason"] = str(t.end_reason)[:64]
    return params



def _size(value: Any) -> int:
    return len(json.dumps(value, ensure_ascii=False, separators=(",", ":")).encode("utf-8", "surrogatepass"))


def _cut(value: Any, limit: int, max_bytes: int) -> Any:
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
    if len(text) <= limit:
        return value
    return (
        f"{text[:limit]}\n[…{len(text) - limit} more characters cut by StrataGate: the turn exceeded {max_bytes} bytes]"
    )


def fit_capture(params: dict[str, Any], max_bytes: int = DEFAULT_MAX_CAPTURE_BYTES) -> dict[str, Any]:
    """Shrink a folded turn until its JSON fits ``max_bytes``: the longest tool results and arguments are cut first
    (with a visible marker), user and assistant text last. Returns ``params`` itself when it fits."""
    if _size(params) <= max_bytes:
        return params
    out = json.loads(json.dumps(params))
    limit = 256 * 1024
    while limit >= 1024 and _size(out) > max_bytes:
        for record in out["tools"]:
            record["result"] = _cut(record["result"], limit, max_bytes)
            args = record["arguments"]
            if isinstance(args, str) or _size(args) > limit:
                record["arguments"] = _cut(args, limit, max_bytes)
        if _size(out) > max_bytes:
            out["user"] = _cut(out["user"], limit * 4, max_bytes)
            out["assistant"] = _cut(out["assistant"], limit * 4, max_bytes)
        limit //= 2
    return out
