"""Deterministic pruning for L3: drop filler lines, replace repeated pastes with a pointer to L5."""

from __future__ import annotations

import re

# Acknowledgements that carry no information on their own (English and Chinese).
FILLER = frozenset(
    {
        "ok",
        "okay",
        "k",
        "got it",
        "thanks",
        "thank you",
        "thx",
        "yes",
        "yep",
        "yeah",
        "correct",
        "sure",
        "right",
        "great",
        "cool",
        "nice",
        "perfect",
        "alright",
        "all right",
        "sounds good",
        "noted",
        "understood",
        "will do",
        "np",
        "no problem",
        "好",
        "好的",
        "好滴",
        "嗯",
        "嗯嗯",
        "哦",
        "噢",
        "明白",
        "明白了",
        "收到",
        "谢谢",
        "多谢",
        "感谢",
        "辛苦了",
        "是",
        "是的",
        "对",
        "对的",
        "没错",
        "可以",
        "行",
        "同意",
        "就这样",
        "知道了",
        "了解",
    }
)
_TRAILING = "。！？，、,.!?～~ "
_SENTENCE_SPLIT = re.compile(r"(?<=[。！？!?])|\n")
_FENCE = re.compile(r"```.*?```", re.DOTALL)
# Blanks up to the line's end only: ``^\s*`` would rescan every following blank line from each line start.
_CODE_START = re.compile(
    r"^[^\S\n]*(const|let|var|function|class|import|export|def|return|SELECT|INSERT|UPDATE|DELETE|CREATE)\b",
    re.MULTILINE,
)
PASTE_MIN_CHARS = 80
REPEATED_PASTE = "[repeated paste omitted; original remains in L5]"


def is_filler(piece: str) -> bool:
    return piece.strip().rstrip(_TRAILING).strip().lower() in FILLER


def _normalise(text: str) -> str:
    return " ".join(text.split()).lower()


def looks_like_code(text: str) -> bool:
    return "\n" in text and bool(_CODE_START.search(text) or "=>" in text or re.search(r"[{};]", text))


class PasteDeduper:
    """Remembers pastes across one block; later identical pastes become a pointer."""

    def __init__(self) -> None:
        self._seen: set[str] = set()

    def keep(self, text: str) -> str:
        key = _normalise(text)
        if len(key) < PASTE_MIN_CHARS and not looks_like_code(text):
            return text
        if key in self._seen:
            return REPEATED_PASTE
        self._seen.add(key)
        return text


def prune_text(text: str, dedup: PasteDeduper) -> str:
    """Filler-free, paste-deduplicated version of one message's text."""
    parts: list[str] = []
    pos = 0
    for fence in _FENCE.finditer(text):
        parts.extend(_prune_prose(text[pos : fence.start()], dedup))
        parts.append(dedup.keep(fence.group(0).strip()))
        pos = fence.end()
    parts.extend(_prune_prose(text[pos:], dedup))
    return "\n\n".join(p for p in parts if p)


def _prune_prose(text: str, dedup: PasteDeduper) -> list[str]:
    out: list[str] = []
    for paragraph in re.split(r"\n\s*\n", text):
        paragraph = paragraph.strip()
        if not paragraph:
            continue
        pieces = [p for p in _SENTENCE_SPLIT.split(paragraph) if p.strip()]
        kept = [p for p in pieces if not is_filler(p)]
        if not kept:
            continue
        # Keep the paragraph byte-for-byte when nothing was dropped.
        body = paragraph if len(kept) == len(pieces) else "\n".join(p.strip() for p in kept)
        out.append(dedup.keep(body))
    return out
