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

_TILDES: Final = re.compile(r"(?<!~)~~(?!~)")  # exactly two tildes (a longer run is no strike delimiter)
_REMARK: Final = re.compile(r"\([^()]*\)|\[[^\[\]]*\]|（[^（）]*）|【[^【】]*】")
_REMARK_DEPTH: Final = 4
_WORD: Final = re.compile(r"[^\W_]+")


def code_spans(text: str) -> list[tuple[int, int]]:
    """The ``[start, end)`` offsets of the backtick code spans of ``text``, leftmost first: what
    ``re.finditer(r"(`+)(?:(?!\\1).)+?\\1", text, re.DOTALL)`` finds, in linear time (that pattern backtracks
    quadratically or worse on a long run of backticks).

    A match opens at a backtick with the longest opener ``L`` that leaves less than ``L`` backticks of its run
    behind it (the content may not start with the opener) and meets a later run at least ``L`` long; it closes on
    the first ``L`` backticks of the first such run.
    """
    runs: list[list[int]] = []  # [start, length] of each maximal backtick run
    pos = text.find("`")
    while pos >= 0:
        end = pos
        while end < len(text) and text[end] == "`":
            end += 1
        runs.append([pos, end - pos])
        pos = text.find("`", end)
    later = [0] * (len(runs) + 1)  # later[i]: the longest run after run i - 1
    for i in range(len(runs) - 1, -1, -1):
        later[i] = max(later[i + 1], runs[i][1])
    spans: list[tuple[int, int]] = []
    i = 0
    while i < len(runs):
        start, length = runs[i]
        best = later[i + 1]
        # Try each start in the run (the remaining length shrinks); the opener is as long as a later run allows.
        for offset in range(length):
            remaining = length - offset
            opener = min(remaining, best)
            if 2 * opener > remaining:
                break
        else:
            i += 1
            continue
        j = i + 1
        while runs[j][1] < opener:  # runs passed over here lie inside the span: each is looked at once
            j += 1
        close_start, close_length = runs[j]
        spans.append((start + offset, close_start + opener))
        if close_length > opener:  # the rest of the closing run may open the next span
            runs[j] = [close_start + opener, close_length - opener]
            later[j] = max(later[j + 1], close_length - opener)
        i = j if close_length > opener else j + 1
    return spans


def struck_spans(text: str) -> list[tuple[int, int]]:
    """The ``[start, end)`` offsets of every ``~~…~~`` run in ``text`` (tildes included), outside code spans."""
    pieces, last = [], 0
    for start, end in code_spans(text):
        pieces += [text[last:start], " " * (end - start)]
        last = end
    masked = "".join(pieces) + text[last:]
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
