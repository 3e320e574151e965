"""One-line summaries of tool results, used by L3 (and as L4's overflow hint)."""

from __future__ import annotations

import json
from typing import Any

SUMMARY_CHARS = 160
ERROR_CHARS = 140
_SKIP_KEYS = {"arguments", "params", "input", "request"}


def _clip(text: str, limit: int) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def summarize_result(value: Any, depth: int = 0) -> str:
    if value is None:
        return "no result"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return str(value)
    if isinstance(value, str):
        stripped = value.strip()
        if depth < 2 and stripped[:1] in "{[":
            try:
                return summarize_result(json.loads(stripped), depth + 1)
            except ValueError:
                pass
        return _clip(value, SUMMARY_CHARS) if stripped else "empty result"
    if isinstance(value, list):
        return f"{len(value)} items" if value else "empty list"
    if isinstance(value, dict):
        if isinstance(value.get("error"), str):
            return "failed: " + _clip(value["error"], ERROR_CHARS)
        for key in ("summary", "message", "text", "content"):
            if isinstance(value.get(key), str) and value[key].strip():
                return _clip(value[key], SUMMARY_CHARS)
        sized = [f"{k}: {len(v)}" for k, v in value.items() if isinstance(v, list) and k not in _SKIP_KEYS]
        if sized:
            return _clip(", ".join(sized), SUMMARY_CHARS)
        if value.get("ok") is True:
            return "completed"
        if value.get("ok") is False:
            return "not completed"
        return "structured result returned"
    return _clip(str(value), SUMMARY_CHARS)
