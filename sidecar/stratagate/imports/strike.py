"""Struck-out Markdown (``~~text~~``) in an import item: which spans are struck, and whether the whole item is.

A struck-out note is history the writer kept on purpose (``~~We use Jest~~ (old)``): importing it as a current
memory would recall a replaced fact as true. The decisions:

* Only GFM's double-tilde form counts. A single ``~`` is too common in prose (``~5 min``, ``~/.dsh``) to read as
  markup; ``~~`` inside a backtick code span is code, not a strike.
* An item is **struck out** when nothing but annotations is left once its struck spans are removed: bracketed or
  parenthesised remarks (``(old)``, ``[done]``, a task box), punctuation, and the words of :data:`ANNOTATION_WORDS`
  (``old``, ``deprecated``, ``已废弃`` …). Such an item is skipped by the import and named in its report.
* An item with struck words and other words (``We use ~~npm~~ pnpm``) is **partly struck**: it is imported with the
  struck words left out of its statement (``We use pnpm``); its quote stays the verbatim source text.
"""

from __future__ import annotations

import re
from typing import Final

# Words that annotate a struck item rather than state something new ("~~Use Jest~~ — old, removed").
ANNOTATION_WORDS: Final = frozenset(
    {
        "old",
        "obsolete",
        "outdated",
        "deprecated",
        "done",
        "removed",
        "replaced",
        "superseded",
        "dropped",
        "cancelled",
        "canceled",
        "wrong",
        "no",
        "longer",
        "not",
        "anymore",
        "used",
        "true",
        "valid",
        "旧",
        "过时",
        "已过时",
        "废弃",
        "已废弃",
        "作废",
        "已作废",
        "已完成",
        "完成",
        "不再",
        "取消",
        "已取消",
        "已删除",
        "删除",
    }
)

_CODE_SPAN: Final = re.compile(r"(`+)(?:(?!\1).)+?\1", re.DOTALL)
_TILDES: Final = re.compile(r"(?<!~)~~(?!~)")  # exactly two tildes (a longer run is no strike delimiter)
_REMARK: Final = re.compile(r"\([^()]*\)|\[[^\[\]]*\]|（[^（）]*）|【[^【】]*】")
_REMARK_DEPTH: Final = 4
_WORD: Final = re.compile(r"[^\W_]+")


def struck_spans(text: str) -> list[tuple[int, int]]:
    """The ``[start, end)`` offsets of every ``~~…~~`` run in ``text`` (tildes included), outside code spans."""
    masked = _CODE_SPAN.sub(lambda m: " " * len(m.group(0)), text)
    spans: list[tuple[int, int]] = []
    opened: int | None = None
    # One pass over the delimiters (linear in the text): an opener is followed by a non-space, a closer preceded by
    # one, and a closer ends the nearest open strike with some text in between.
    for delim in _TILDES.finditer(masked):
        start, end = delim.start(), delim.end()
        can_open = end < len(masked) and not masked[end].isspace()
        can_close = start > 0 and not masked[start - 1].isspace()
        if opened is not None and can_close and start > opened + 2:
            spans.append((opened, end))
            opened = None
        elif can_open:
            opened = start
    return spans


def without_spans(text: str, spans: list[tuple[int, int]]) -> str:
    """``text`` with the spans cut out and whitespace runs collapsed (the one-line statement of what is left)."""
    kept, pos = [], 0
    for start, end in spans:
        kept.append(text[pos:start])
        pos = end
    kept.append(text[pos:])
    return " ".join("".join(kept).split())


def is_struck_out(text: str, spans: list[tuple[int, int]]) -> bool:
    """True when ``text`` has struck spans and only annotations outside them (see the module docstring)."""
    if not spans:
        return False
    rest = without_spans(text, spans)
    for _ in range(_REMARK_DEPTH):  # nested remarks, "(old (2023))", a few levels deep (bounded work)
        cut = _REMARK.sub(" ", rest)
        if cut == rest:
            break
        rest = cut
    return all(word.casefold() in ANNOTATION_WORDS for word in _WORD.findall(rest))
