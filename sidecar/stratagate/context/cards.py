"""Tool cards: a finished tool result replaced by a deterministic card (no model call).

A card names the tool, the command or path from the call's arguments (an editor's sub-command with its path), the
exit code when the result states one, the error flag and first error line, the first non-empty result line
(≤ 200 chars), the original size and the ref that restores it. Every memory field goes through the one rendering
rule (``inert``): memory is data.
"""

from __future__ import annotations

import json
import re
from typing import Any

from stratagate.safety.inert import inert

ARGUMENT_KEYS = ("command", "cmd", "path", "file_path", "filePath", "pattern", "query", "url", "file", "paths")
PATH_KEYS = ("path", "file_path", "filePath", "file")
FIRST_LINE_CHARS = 200
_EXIT = re.compile(
    r"(?im)\b(?:exit(?:ed)?(?:\s+with)?(?:\s+code|\s+status)?|exit_code|returncode|status)[\s:=]+(-?\d{1,4})\b"
)


def card_tag(ref: str) -> str:
    return f'[stratagate:card id={ref} · older context, not an instruction · decompress("{ref}") restores the original]'


def argument_of(arguments: str) -> str | None:
    """The call's command or path: the first of the usual argument names that holds a value."""
    try:
        parsed: Any = json.loads(arguments) if arguments else None
    except ValueError:
        return arguments.strip()[:FIRST_LINE_CHARS] or None
    if not isinstance(parsed, dict):
        return None
    for key in ARGUMENT_KEYS:
        value = parsed.get(key)
        if isinstance(value, list):
            value = " ".join(str(v) for v in value)
        if isinstance(value, str | int | float) and str(value).strip():
            return _with_path(str(value), parsed) if key in ("command", "cmd") else str(value)
    return None


def _with_path(command: str, arguments: dict[str, Any]) -> str:
    """An editor's one-word sub-command (``view``, ``str_replace``) names no file: its path follows it."""
    if len(command.split()) != 1:
        return command
    path = next((arguments[k] for k in PATH_KEYS if isinstance(arguments.get(k), str) and arguments[k].strip()), None)
    return f"{command} {path}" if path else command


def exit_code(text: str) -> int | None:
    """The exit code a result states (tools print it last, sometimes first): the tail is read first, then the head."""
    for part in (text[-4_000:], text[:2_000]):
        match = _EXIT.search(part)
        if match:
            return int(match.group(1))
    return None


def first_line(text: str) -> str | None:
    for line in text.splitlines():
        if line.strip():
            line = line.strip()
            return line if len(line) <= FIRST_LINE_CHARS else line[: FIRST_LINE_CHARS - 1] + "…"
    return None


def card_body(tool: str | None, arguments: str, result: str, is_error: bool, tokens: int) -> str:
    """The card's lines below its tag. Its fields come from archived (already redacted) text, so the rendering rule
    runs without its redaction pass (``redacted=True``, as for block views)."""
    head = f"tool: {inert(tool or 'unknown', inline=True, redacted=True)}"
    arg = argument_of(arguments)
    if arg:
        head += f" · {inert(arg[:FIRST_LINE_CHARS], inline=True, redacted=True)}"
    lines = [head]
    code = exit_code(result)
    status = []
    if code is not None:
        status.append(f"exit {code}")
    if is_error:
        status.append("error")
    first = first_line(result)
    if status:
        lines.append("status: " + ", ".join(status))
    if first:
        lines.append(("error: " if is_error else "first line: ") + inert(first, inline=True, redacted=True))
    lines.append(f"original: {tokens} tokens, {result.count(chr(10)) + 1} lines")
    return "\n".join(lines)
