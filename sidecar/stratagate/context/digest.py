"""Automatic digests: an extractive fold of the oldest finished rounds, written by StrataGate (no model call) when
the model does not fold on its own.

What is kept, in surface order: user messages, the start of each assistant reply, every tool call with its command
or path and its result's first line, and errors. The digest is capped at a share (12 %) of the folded text, at
least 1,200 characters; lines are taken by priority (user, errors, calls, replies) until the cap, then printed in
their original order. Every memory field goes through ``inert`` (without its redaction pass: the archive's text was
redacted when it was stored).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from stratagate.context.cards import argument_of, exit_code, first_line
from stratagate.context.records import Node
from stratagate.safety.inert import inert

REPLY_CHARS = 240
USER_CHARS = 400


def digest_tag(ref: str, first: str, last: str) -> str:
    return (
        f"[stratagate:fold:t1 id={ref} auto=1 · written by StrataGate, not the model · older context "
        f"{first}–{last}, not an instruction · decompress(\"{ref}\") restores it]"
    )


@dataclass(frozen=True)
class Line:
    order: int
    priority: int  # lower is kept first
    text: str


def _field(text: str) -> str:
    """One line of archived (already redacted) text through the rendering rule."""
    return inert(text, inline=True, redacted=True)


def _clip(text: str, limit: int) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _untagged(text: str) -> str:
    """A replacement's text without its tag line (a card's or checkpoint's content starts below it)."""
    return text.split("\n", 1)[1] if text.startswith("[stratagate:") and "\n" in text else text


def digest_lines(nodes: Sequence[Node], card_texts: dict[int, str] | None = None) -> list[Line]:
    """The candidate lines of a digest over ``nodes``; ``card_texts`` gives a landed card's first line (the node's
    own text is the card then, which keeps the tool's first line)."""
    lines: list[Line] = []
    calls: dict[str, tuple[str, str]] = {}
    for i, node in enumerate(nodes):
        if node.kind == "user" and node.text.strip():
            lines.append(Line(i, 0, "user: " + _field(_clip(node.text, USER_CHARS))))
        elif node.kind == "assistant":
            if node.text.strip():
                lines.append(Line(i, 3, "assistant: " + _field(_clip(node.text, REPLY_CHARS))))
            for call in node.calls:
                calls[call.call_id] = (call.name, call.arguments)
        elif node.kind == "tool":
            name, arguments = calls.get(node.call_id or "", (node.tool_name or "tool", ""))
            arg = argument_of(arguments)
            head = _field(name or "tool") + (f" {_field(_clip(arg, 160))}" if arg else "")
            text = node.text
            first = first_line(_untagged(text))
            code = exit_code(text)
            outcome = []
            if code is not None:
                outcome.append(f"exit {code}")
            if node.is_error:
                outcome.append("ERROR")
            detail = f" → {_field(_clip(first, 160))}" if first else ""
            status = f" [{', '.join(outcome)}]" if outcome else ""
            lines.append(Line(i, 1 if node.is_error else 2, f"call {head}{status}{detail}"))
        elif node.kind == "checkpoint" and node.text.strip():
            # Our checkpoint starts with its tag line: what it says is below it (behind the quote bar).
            body = _untagged(node.text)
            first = first_line("\n".join(line.removeprefix("│ ").removeprefix("│") for line in body.splitlines()))
            if first:
                lines.append(Line(i, 1, "earlier: " + _field(_clip(first, 200))))
    return lines


def digest_body(nodes: Sequence[Node], share: float, min_chars: int) -> str:
    """The digest's body (without the tag line): the candidate lines by priority within the cap, in order."""
    folded = sum(len(n.text) for n in nodes)
    cap = max(min_chars, int(share * folded))
    chosen: list[Line] = []
    used = 0
    for line in sorted(digest_lines(nodes), key=lambda ln: (ln.priority, ln.order)):
        cost = len(line.text) + 1
        if used + cost > cap:
            continue
        chosen.append(line)
        used += cost
    chosen.sort(key=lambda ln: ln.order)
    return "\n".join(ln.text for ln in chosen)
