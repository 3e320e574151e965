"""The text that indexes a stored message: what message search (message_fts), the dense channel's message vectors
and a scrub's re-index all read, so the three always agree."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any


def search_text(row: Mapping[str, Any]) -> str:
    """A message row's indexed text: its content, or for a tool record its name, arguments and result."""
    if row["role"] != "tool":
        return str(row["content"])
    return " ".join([row["tool_name"], row["tool_arguments"] or "", row["tool_result"] or ""])
