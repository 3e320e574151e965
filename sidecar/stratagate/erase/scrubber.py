"""The erased strings of one erase and how every stored copy of them is rewritten (plain, inside JSON text, and
distinctive words as whole words)."""

from __future__ import annotations

import json
import re
from typing import Any

from stratagate.text.distinctive import pattern

ERASED = "[erased]"
ERASED_JSON = json.dumps(ERASED)
MIN_SCRUB_CHARS = 8  # shorter strings are too common to replace everywhere they occur


async def is_erased(conn: Any, namespace_id: int, subject: str) -> bool:
    fetch = getattr(conn, "execute_fetchall", None) or conn.fetchall
    rows = await fetch(
        "SELECT 1 FROM erasures WHERE namespace_id = ? AND subject_id = ? LIMIT 1", (namespace_id, subject)
    )
    return bool(list(rows))


class Scrubber:
    """Replaces every copy of the erased strings (plain, and as they appear escaped inside JSON text)."""

    def __init__(self) -> None:
        self.texts: set[str] = set()
        self.words: set[str] = set()  # node names: replaced only as whole words

    def add(self, text: str | None) -> None:
        if text and len(text.strip()) >= MIN_SCRUB_CHARS and text != ERASED:
            self.texts.add(text)
            self.texts.add(text.strip())

    def add_word(self, text: str | None) -> None:
        if text and len(text.strip()) >= 3:
            self.words.add(text.strip())

    def holds(self, value: str | None) -> bool:
        """Whether ``value`` holds an erased string (anywhere, also JSON-escaped) or word (whole), any case."""
        if not value:
            return False
        if self.text(value) != value:
            return True
        low = value.lower()
        return any(n.lower() in low for n in self.needles() if n not in self.words)

    def needles(self) -> list[str]:
        out: set[str] = set()
        for t in [*self.texts, *self.words]:
            out.add(t)
            out.add(json.dumps(t, ensure_ascii=False)[1:-1])
            out.add(json.dumps(t)[1:-1])
        return sorted(out, key=len, reverse=True)

    def text(self, value: str) -> str:
        """Case-insensitive: a search query or a lower-cased key holds the same words."""
        for t in sorted(self.texts, key=len, reverse=True):
            value = re.sub(re.escape(t), ERASED, value, flags=re.IGNORECASE)
        for w in sorted(self.words, key=len, reverse=True):
            value = pattern(w).sub(ERASED, value)
        return value

    def value(self, value: Any) -> Any:
        if isinstance(value, str):
            return self.text(value)
        if isinstance(value, list):
            return [self.value(v) for v in value]
        if isinstance(value, dict):
            return {self.text(k) if isinstance(k, str) else k: self.value(v) for k, v in value.items()}
        return value

    def stored(self, raw: str) -> str:
        """A stored column: JSON text is rewritten value by value (its escaping stays valid), else as text."""
        try:
            data = json.loads(raw)
        except ValueError:
            return self.text(raw)
        if isinstance(data, str | int | float) or data is None:
            return self.text(raw)
        rewritten = json.dumps(self.value(data), ensure_ascii=False, sort_keys=True)
        return rewritten if rewritten != json.dumps(data, ensure_ascii=False, sort_keys=True) else raw

ERASED_ARCHIVE = "[erased: this text was erased for good and cannot be restored]"
"""What an archived context node or layer that held erased text says instead (``decompress`` reports it)."""
