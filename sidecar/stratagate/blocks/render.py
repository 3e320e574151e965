"""Deterministic views L5 (source), L4 (near-verbatim) and L3 (pruned), with the length guard."""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence

from stratagate.blocks.prune import PasteDeduper, prune_text
from stratagate.blocks.source import SourceMessage
from stratagate.blocks.toolsummary import outcome_of, render_outcome
from stratagate.safety.inert import inert

LEVEL_LABELS = {
    0: "L0 title and tags",
    1: "L1 summary",
    2: "L2 key facts",
    3: "L3 pruned transcript",
    4: "L4 near-verbatim transcript",
    5: "L5 source transcript",
}


def render_l0(title: str, tags: list[str]) -> str:
    """L0 of a summarised block (the summary job stores it; views and forget filtering render it again)."""
    return f"{title}\nTags: {', '.join(tags) if tags else 'none'}"


def render_l2(key_facts: list[str]) -> str:
    return "\n".join(f"- {fact}" for fact in key_facts)


def _turn_header(msg: SourceMessage, with_time: bool) -> str:
    return f"[turn {msg.turn_seq} · {msg.created_at}]" if with_time else f"[turn {msg.turn_seq}]"


def _grouped(messages: Sequence[SourceMessage]) -> list[list[SourceMessage]]:
    groups: list[list[SourceMessage]] = []
    for msg in messages:
        if not groups or groups[-1][0].turn_seq != msg.turn_seq:
            groups.append([])
        groups[-1].append(msg)
    return groups


def render_l5(messages: Sequence[SourceMessage]) -> str:
    """Every word and every tool record exactly as captured."""
    chunks: list[str] = []
    for turn in _grouped(messages):
        lines = [_turn_header(turn[0], with_time=True)]
        for msg in turn:
            if msg.role == "tool":
                lines.append(f"Tool call: {msg.tool_name} {msg.arguments_text()}")
                label = "Tool result (error)" if msg.is_error else "Tool result"
                lines.append(f"{label}: {msg.result_text()}")
            else:
                lines.append(f"{msg.role.capitalize()}: {msg.content}")
        chunks.append("\n".join(lines))
    return "\n\n".join(chunks)


def _tidy(text: str) -> str:
    text = "\n".join(line.rstrip() for line in text.strip().splitlines())
    return re.sub(r"\n{3,}", "\n\n", text)


def tool_outcome(msg: SourceMessage) -> str:
    """A tool record's result in at most 160 characters, read from the result only (never its arguments):
    ``failed: …`` for errors and for results that state a failure (a bash exit code other than 0)."""
    return render_outcome(outcome_of(msg.result_value()), is_error=msg.is_error)


def render_l4(messages: Sequence[SourceMessage]) -> str:
    """Near-verbatim: the words whitespace-tidied; a tool record is its name and a result summary of at most 160
    characters. Raw arguments (and params/input/request fields of results) never appear: they stay in L5."""
    chunks: list[str] = []
    for turn in _grouped(messages):
        lines = [_turn_header(turn[0], with_time=True)]
        for msg in turn:
            if msg.role == "tool":
                lines.append(f"Tool call: {msg.tool_name} ({tool_outcome(msg)})")
            elif text := _tidy(msg.content):
                lines.append(f"{msg.role.capitalize()}: {text}")
        if len(lines) > 1:
            chunks.append("\n".join(lines))
    return "\n\n".join(chunks)


def render_l3(messages: Sequence[SourceMessage]) -> str:
    """Pruned: no filler, repeated pastes replaced, tool records reduced to name and outcome."""
    dedup = PasteDeduper()
    chunks: list[str] = []
    for turn in _grouped(messages):
        lines = [_turn_header(turn[0], with_time=False)]
        for msg in turn:
            if msg.role == "tool":
                lines.append(f"Tool {msg.tool_name} → {tool_outcome(msg)}")
            elif text := prune_text(msg.content, dedup):
                lines.append(f"{msg.role.capitalize()}: {text}")
        if len(lines) > 1:
            chunks.append("\n".join(lines))
    return "\n\n".join(chunks)


class SealedViews:
    __slots__ = ("l3", "l3_tokens", "l4", "l4_tokens", "l5", "l5_tokens")

    def __init__(self, l5: str, l5_tokens: int, l4: str, l4_tokens: int, l3: str, l3_tokens: int):
        self.l5, self.l5_tokens = l5, l5_tokens
        self.l4, self.l4_tokens = l4, l4_tokens
        self.l3, self.l3_tokens = l3, l3_tokens


def seal_views(messages: Sequence[SourceMessage], count: Callable[[str], int]) -> SealedViews:
    """Compute L5/L4/L3 and enforce tokens(L3) <= tokens(L4) <= tokens(L5).

    Views are stored (and counted) in their rendered form (safety/inert.py): what a tool or a prompt shows is
    exactly this text, so the recorded token counts are the counts of what the model reads. Captured messages were
    redacted before they were stored, so the views skip the redaction pass (outputs render them again in full)."""
    l5 = inert(render_l5(messages), redacted=True)
    l4 = inert(render_l4(messages), redacted=True)
    l3 = inert(render_l3(messages), redacted=True)
    t5, t4, t3 = count(l5), count(l4), count(l3)
    if t4 > t5:
        l4, t4 = l5, t5
    if t3 > t4:
        l3, t3 = l4, t4
    return SealedViews(l5, t5, l4, t4, l3, t3)
