"""One-line summaries of tool results, used by L4 and L3: at most 160 characters, read from the result only (the
call's arguments stay in L5).

DSH's built-in tools return structured values (recorded in tests/fixtures/dsh/): bash a process record
(``exitCode``, ``signal``, ``timedOut``, ``stdout: {text, truncated}``…), file tools a path with lines or
before/after texts, search tools lists of paths or matches, agent and job tools ids and statuses. Each known shape
reads as its status first (exit code, error), then its first output line; any other value as its first text field,
found depth-first."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

SUMMARY_CHARS = 160
FAILED = "failed: "
_SKIP_KEYS = {"arguments", "params", "input", "request"}
_TEXT_KEYS = ("summary", "message", "text", "content")
_WALK_LIMIT = 2_000  # values visited when looking for a text field: big results stay cheap
_EXIT_TRAILER = re.compile(r"\n?\[exit code: (-?\d{1,6})\]\s*\Z")
_TRUNCATED = "\n[output truncated"  # DSH's marker line after a cut output
_ERROR_PREFIX = re.compile(r"\A\s*(?:error|failed)\s*:\s*", re.IGNORECASE)


@dataclass(frozen=True)
class Outcome:
    text: str
    failed: bool = False


def _clip(text: str, limit: int) -> str:
    text = " ".join(text.lstrip()[: limit * 8].split())
    return text if len(text) <= limit else text[: max(limit - 1, 0)] + "…"


def _first_line(text: str, skip: str = "") -> str:
    """The first non-blank line (other than ``skip``), read without splitting the whole text (outputs can be MB)."""
    start = 0
    while start < len(text):
        end = text.find("\n", start)
        end = len(text) if end < 0 else end
        line = text[start:end].strip()
        if line and line != skip:
            return line
        start = end + 1
    return ""


def _joined(*parts: str, tail: str = "") -> str:
    """Status parts, then the output line clipped so the tail (a marker) survives the limit and a ``failed: ``."""
    head = " · ".join(p for p in parts[:-1] if p)
    line = parts[-1] if parts else ""
    room = SUMMARY_CHARS - len(FAILED) - len(head) - len(tail) - 3
    line = _clip(line, room) if line and room > 8 else ""
    return " · ".join(p for p in (head, line) if p) + tail


def summarize_result(value: Any) -> str:
    """A result in at most 160 characters (``failed: …`` when the value itself states a failure)."""
    return render_outcome(outcome_of(value))


def render_outcome(outcome: Outcome, is_error: bool = False) -> str:
    text = outcome.text
    if outcome.failed or is_error:
        text = FAILED + (_ERROR_PREFIX.sub("", text, count=1) or "error")
    return _clip(text, SUMMARY_CHARS)


def outcome_of(value: Any) -> Outcome:
    """The outcome of any JSON value; one nested past the interpreter's recursion limit reads as its first text."""
    try:
        return _outcome(value)
    except RecursionError:
        return Outcome(_clip(_first_text(value) or "deeply nested result", SUMMARY_CHARS))


def _outcome(value: Any, depth: int = 0) -> Outcome:
    if value is None:
        return Outcome("no result")
    if isinstance(value, bool):
        return Outcome("true" if value else "false")
    if isinstance(value, int | float):
        return Outcome(str(value))
    if isinstance(value, str):
        return _text_outcome(value, depth)
    if isinstance(value, list):
        return _list_outcome(value)
    if isinstance(value, dict):
        return _dict_outcome(value)
    return Outcome(str(value))


def _text_outcome(value: str, depth: int) -> Outcome:
    stripped = value.strip()
    if depth < 2 and stripped[:1] in "{[":
        try:
            return _outcome(json.loads(stripped), depth + 1)
        except (ValueError, RecursionError):
            pass
    if not stripped:
        return Outcome("empty result")
    tail_at = max(len(value) - 64, 0)
    trailer = _EXIT_TRAILER.search(value, tail_at)
    if trailer is None:
        return Outcome(_clip(value, SUMMARY_CHARS))
    # DSH's bash text when the canonical value was missed: "…\n[stderr]\n…\n[exit code: N]".
    code = int(trailer.group(1))
    body = value[: trailer.start()]
    cut = body.find(_TRUNCATED)
    body = body[:cut] if cut >= 0 else body
    line = _first_line(body, skip="[stderr]")
    return Outcome(_joined(f"exit {code}", line, tail=" (output truncated)" if cut >= 0 else ""), failed=code != 0)


def _stream(value: Any) -> tuple[str, bool]:
    """A bash stream: DSH's ``{text, truncated}`` or a plain string."""
    if isinstance(value, dict):
        text = value.get("text")
        return (text if isinstance(text, str) else ""), value.get("truncated") is True
    return (value if isinstance(value, str) else ""), False


def _bash(value: dict[str, Any]) -> Outcome:
    status: list[str] = []
    failed = False
    if value.get("timedOut") is True:
        ms = value.get("timeoutMs")
        limit = f" after {ms / 1000:g} s" if isinstance(ms, int | float) and 0 < ms < 1e12 else ""
        status.append("timed out" + limit)
        failed = True
    if isinstance(value.get("signal"), str) and value["signal"]:
        status.append(f"killed by {value['signal']}")
        failed = True
    if value.get("aborted") is True:
        status.append("aborted")
        failed = True
    code = value.get("exitCode")
    if isinstance(code, int) and not isinstance(code, bool):
        status.append(f"exit {code}")
        failed = failed or code != 0
    out, out_cut = _stream(value.get("stdout"))
    err, err_cut = _stream(value.get("stderr"))
    line = _first_line(out)
    if not line and _first_line(err):
        line = "stderr: " + _first_line(err)
    tail = " (output truncated)" if out_cut or err_cut else ""
    if not status and not line:
        status.append(_first_text(value) or "no output")
    return Outcome(_joined(*status, line, tail=tail), failed=failed)


def _is_bash(value: dict[str, Any]) -> bool:
    return "exitCode" in value or (
        isinstance(value.get("stdout"), str | dict) and isinstance(value.get("stderr", ""), str | dict))


def _first_changed_line(before: str, after: str) -> str:
    old, new = before.splitlines(), after.splitlines()
    for i, line in enumerate(new):
        if i >= len(old) or old[i] != line:
            if line.strip():
                return line.strip()
    return ""


def _file(value: dict[str, Any]) -> Outcome | None:
    path = value["path"]
    lines = value.get("lines")
    if isinstance(lines, list):
        total = value.get("totalLines")
        shown = f"{len(lines)} of {total} lines" if isinstance(total, int) and total != len(lines) else \
            f"{len(lines)} lines"
        first = next((str(x.get("text", "")).strip() for x in lines if isinstance(x, dict)
                      and str(x.get("text", "")).strip()), "")
        return Outcome(_joined(f"{path}: {shown}", first))
    if isinstance(value.get("image"), dict):
        image = value["image"]
        size = f"{image.get('width')}×{image.get('height')}" if "width" in image else ""
        return Outcome(_joined(path, " ".join(str(p) for p in (image.get("mediaType"), size) if p),
                               f"{image['bytes']} bytes" if "bytes" in image else ""))
    if isinstance(value.get("after"), str):
        before = value.get("before") if isinstance(value.get("before"), str) else ""
        op = value.get("operation")
        verb = {"create": "created", "overwrite": "overwrote", "update": "updated"}.get(str(op), "edited")
        if op is None and not before:
            verb = "wrote"
        count = len(value["after"].splitlines())
        return Outcome(_joined(f"{verb} {path} ({count} lines)", _first_changed_line(before or "", value["after"])))
    return None


def _goal(goal: dict[str, Any], value: dict[str, Any]) -> Outcome:
    phase = goal.get("phase", "goal")
    extra = f" ({value['activation']})" if isinstance(value.get("activation"), str) else ""
    return Outcome(_joined(f"goal {phase}{extra}", str(goal.get("objective") or goal.get("id") or "")))


def _job(job: dict[str, Any], lead: str) -> Outcome:
    status = " ".join(str(job[k]) for k in ("id", "status") if job.get(k))
    detail = job.get("detail")
    if isinstance(detail, str) and detail:
        status += f" ({detail})"
    code = re.search(r"exit code: (-?\d+)", str(detail or ""))
    failed = job.get("status") == "failed" or bool(code and code.group(1) != "0")
    return Outcome(_joined(f"job {status}", lead), failed=failed)


def _shaped(value: dict[str, Any]) -> Outcome | None:
    """DSH's built-in result shapes (the recorded fixtures), by their keys."""
    kind = value.get("kind")
    if kind == "background" and "jobId" in value:
        return Outcome(f"started background job {value['jobId']}")
    if kind == "continuable" and "subagentId" in value:
        return Outcome(f"started subagent {value['subagentId']}")
    if _is_bash(value):
        return _bash(value)
    if isinstance(value.get("path"), str) and (shaped := _file(value)):
        return shaped
    if isinstance(value.get("job"), dict) and isinstance(value["job"].get("id"), str):
        lead = _first_line(value["text"]) if isinstance(value.get("text"), str) else str(value.get("outcome") or "")
        return _job(value["job"], lead)
    if isinstance(value.get("goal"), dict):
        return _goal(value["goal"], value)
    if isinstance(value.get("todos"), list):
        return _todos(value)
    if "runId" in value and isinstance(value.get("output"), list | dict | str):
        return Outcome(_joined(_first_text(value["output"]) or "subagent finished"))
    if "agentsStarted" in value and "result" in value:
        started = value["agentsStarted"]
        return Outcome(_joined(f"workflow finished ({started} agent{'s' if started != 1 else ''})",
                               _first_text(value["result"]) or ""))
    if "messageId" in value and len(value) == 1:
        return Outcome(f"message queued ({value['messageId']})")
    if isinstance(value.get("accepted"), bool) and len(value) == 1:
        return Outcome("accepted" if value["accepted"] else "not accepted", failed=not value["accepted"])
    if isinstance(value.get("name"), str) and isinstance(value.get("content"), str) and "provider" in value:
        return Outcome(_joined(f"skill {value['name']}", _first_line(value["content"])))
    return None


def _todos(value: dict[str, Any]) -> Outcome:
    todos = value["todos"]
    counts = value.get("counts")
    head = f"{len(todos)} todo{'' if len(todos) == 1 else 's'}"
    if isinstance(counts, dict):
        head += ": " + ", ".join(f"{n} {_words(k)}" for k, n in counts.items())
    doing = next((t.get("content") for t in todos if isinstance(t, dict) and t.get("status") == "in_progress"), None)
    return Outcome(_joined(head, f"in progress: {doing}" if isinstance(doing, str) else ""))


def _words(key: str) -> str:
    return re.sub(r"(?<=[a-z])([A-Z])", lambda m: " " + m.group(1).lower(), key)


def _dict_outcome(value: dict[str, Any]) -> Outcome:
    error = value.get("error")
    if isinstance(error, dict):
        error = error.get("message")
    if isinstance(error, str) and error.strip():
        return Outcome(_clip(error, SUMMARY_CHARS), failed=True)
    shaped = _shaped(value)
    if shaped is not None:
        return shaped
    for key in _TEXT_KEYS:
        if isinstance(value.get(key), str) and value[key].strip():
            return Outcome(_clip(value[key], SUMMARY_CHARS))
    sized = [f"{k}: {len(v)}" for k, v in value.items() if isinstance(v, list) and k not in _SKIP_KEYS]
    lists = [v for k, v in value.items() if isinstance(v, list) and k not in _SKIP_KEYS]
    if sized:
        detail = next((t for t in (_items_text(v) for v in lists if v) if t), "") or _first_text(value) or ""
        return Outcome(_joined(", ".join(sized), detail))
    if value.get("ok") is True:
        return Outcome("completed")
    if value.get("ok") is False:
        return Outcome("not completed", failed=True)
    return _fallback(value)


def _item_text(item: Any) -> str:
    """One list item in words: a grep match as ``path:line: text``, anything else its first text field."""
    if isinstance(item, dict) and isinstance(item.get("path"), str) and isinstance(item.get("line"), str):
        number = item.get("lineNumber")
        return f"{item['path']}:{number}: {item['line'].strip()}" if number is not None else item["path"]
    if isinstance(item, dict) and isinstance(item.get("id"), str) and isinstance(item.get("status"), str):
        name = item.get("label") if item.get("kind") == "child" else item["id"]
        detail = f" ({item['detail']})" if isinstance(item.get("detail"), str) else ""
        return f"{name} {item['status']}{detail}"
    if isinstance(item, dict) and isinstance(item.get("id"), str) and isinstance(item.get("selected"), list):
        chosen = ", ".join(str(s) for s in item["selected"]) or str(item.get("custom") or "")
        return f"{item['id']}: {chosen}"
    return _first_text(item) or ""


def _items_text(items: list[Any]) -> str:
    """The first few items in words (paths joined with commas, other items with semicolons)."""
    if all(isinstance(v, str) for v in items[:20]):
        shown = ", ".join(v.strip() for v in items[:20] if v.strip())
    else:
        shown = "; ".join(t for t in (_item_text(v) for v in items[:5]) if t)
    return shown or _first_text(items) or ""


def _list_outcome(value: list[Any]) -> Outcome:
    if not value:
        return Outcome("empty list")
    noun = "item" if len(value) == 1 else "items"
    return Outcome(_joined(f"{len(value)} {noun}", _items_text(value)))


def _first_text(value: Any) -> str | None:
    """The first non-empty string, depth-first (``key: text`` inside an object; never an arguments field)."""
    stack: list[tuple[str | None, Any]] = [(None, value)]
    seen = 0
    while stack and seen < _WALK_LIMIT:
        key, item = stack.pop()
        seen += 1
        if isinstance(item, str) and item.strip():
            return f"{key}: {item.strip()}" if key else item.strip()
        if isinstance(item, dict):
            # A content block's or message's own words first: {"type": "text", "text": "…"} reads as its text.
            keys = sorted((k for k in item if k not in _SKIP_KEYS), key=lambda k: k not in _TEXT_KEYS)
            stack.extend(reversed([(None if k in _TEXT_KEYS else str(k), item[k]) for k in keys]))
        elif isinstance(item, list):
            stack.extend(reversed([(key, v) for v in item]))
    return None


def _fallback(value: dict[str, Any]) -> Outcome:
    text = _first_text(value)
    if text:
        return Outcome(_clip(text, SUMMARY_CHARS))
    scalars = [f"{k}: {v}" for k, v in value.items() if isinstance(v, bool | int | float) and k not in _SKIP_KEYS]
    if scalars:
        return Outcome(_clip(", ".join(scalars), SUMMARY_CHARS))
    return Outcome("fields: " + _clip(", ".join(map(str, value)), SUMMARY_CHARS - 8) if value else "empty result")
