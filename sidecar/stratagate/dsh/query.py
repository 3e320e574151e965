"""The recall query of one model step, chosen from DSH's raw step material (formerly shim-js/fold.js).

The query is the human message the step answers, then, from the second step of a turn on, the words of the turn's
newest tool round. At step 0 the new prompt is not in the session log yet: DSH claims it from the inbox before it
assembles the prompt and logs it after, so the shim forwards the claimed messages too (shim-js/activation.js
explains the DSH source lines). Bounded: at most ``HUMAN_MAX`` + 2 + ``TOOL_ROUND_MAX`` characters.
"""

from __future__ import annotations

import re
from typing import Any

from stratagate.dsh.events import RawEvent, is_human, own_tool, parse_arguments, result_call_id, text_of_blocks

HUMAN_MAX = 4000
TOOL_ROUND_MAX = 2000


def _turn_start(log: list[RawEvent]) -> int:
    for i in range(len(log) - 1, -1, -1):
        if log[i].type == "turn/start":
            return i
    return -1


def latest_human_text(log: list[RawEvent], limit: int = HUMAN_MAX) -> str:
    """The newest human prompt of a log, cut to ``limit`` characters."""
    for event in reversed(log):
        if event.type == "user/message" and is_human(event.data):
            if text := text_of_blocks(event.data.get("content")):
                return text[:limit]
    return ""


def step_human_text(log: list[RawEvent], claimed: list[dict[str, Any]], limit: int = HUMAN_MAX) -> str:
    """The newest claimed human message the current turn has not logged yet, else the log's newest human one."""
    logged = {
        e.data.get("id")
        for e in log[max(_turn_start(log), 0):]
        if e.type == "user/message" and e.data.get("id") is not None
    }
    for message in reversed(claimed):
        if not is_human(message) or message.get("id") in logged:
            continue
        if text := text_of_blocks(message.get("content")):
            return text[:limit]
    return latest_human_text(log, limit)


def _leaf_words(value: Any, out: list[str]) -> None:
    if value is None:
        return
    if isinstance(value, bool):
        out.append("true" if value else "false")
    elif isinstance(value, str):
        out.append(value)
    elif isinstance(value, int | float):
        out.append(str(int(value)) if isinstance(value, float) and value.is_integer() else str(value))
    elif isinstance(value, list):
        for item in value:
            _leaf_words(item, out)
    elif isinstance(value, dict):
        for item in value.values():
            _leaf_words(item, out)


def _words(text: str) -> str:
    return re.sub(r"\s+", " ", text).strip()


def tool_round_text(log: list[RawEvent], limit: int = TOOL_ROUND_MAX) -> str:
    """The words of the current turn's newest tool round: per call, its name, argument values (no keys, no JSON
    syntax) and result text, one line each, each cut to an equal share of ``limit``. The plugin's own memory tools
    are left out (their results are memory already shown). '' before the turn's first tool round."""
    if limit <= 0:
        return ""
    start = max(_turn_start(log), 0)
    at = -1
    for i in range(len(log) - 1, start - 1, -1):
        event = log[i]
        message = event.data.get("message")
        content = message.get("content") if isinstance(message, dict) else None
        if event.type == "assistant/message" and isinstance(content, list):
            if any(isinstance(b, dict) and b.get("type") == "tool-call" for b in content):
                at = i
                break
    if at < 0:
        return ""
    step = log[at].data.get("step")
    calls: list[dict[str, str]] = []
    by_call: dict[str, dict[str, str]] = {}
    for event in log[at + 1:]:
        data = event.data
        if event.type == "tool/call" and (step is None or data.get("step") == step):
            if own_tool(data.get("name")):
                continue
            args: list[str] = []
            _leaf_words(parse_arguments(data.get("arguments")), args)
            call = {"name": "" if data.get("name") is None else str(data["name"]), "args": " ".join(args), "result": ""}
            calls.append(call)
            by_call["" if data.get("callId") is None else str(data["callId"])] = call
        elif event.type == "tool/result":
            message = got if isinstance(got := data.get("message"), dict) else {}
            if (found := by_call.get(result_call_id(message))) is not None:
                found["result"] = text_of_blocks(message.get("content"))
    if not calls:
        return ""
    share = max(1, (limit - (len(calls) - 1)) // len(calls))
    lines = [_words(" ".join(p for p in (c["name"], c["args"], c["result"]) if p))[:share] for c in calls]
    return "\n".join(line for line in lines if line)[:limit]


def step_query(log: list[RawEvent], claimed: list[dict[str, Any]]) -> str:
    """The ``activation.render`` query of one step ('' when the step has nothing to search for)."""
    return "\n\n".join(p for p in (step_human_text(log, claimed), tool_round_text(log)) if p)
