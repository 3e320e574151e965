"""The one rendering rule for memory that reaches a model: every field goes through ``inert``.

Memory is data, never instructions. Whatever a stored text says, once rendered it cannot
- close or forge the ``<stratagate-memory>`` wrapper or any other tag: ``<`` and ``>`` (and their full-width and
  small look-alikes) become ``&lt;``/``&gt;``, a bare ``&`` becomes ``&amp;``;
- carry a model special token: DeepSeek's added tokens all start with ``<`` or contain ``｜`` (U+FF5C), ChatML's
  with ``<|``; with ``<`` escaped and ``｜`` mapped to ``|`` none survives, so our tokenizer never sees one;
- hide text: control characters (but tab and newline), zero-width and other format characters (bidi embeddings,
  overrides and isolates, word joiners, BOM, soft hyphen, Unicode tag characters), the grapheme joiner, Hangul
  fillers and the
  supplementary variation selectors are removed; CR, VT, FF, NEL and the line/paragraph separators become ``\n``;
  lone surrogates become U+FFFD;
- start a line that reads as a role turn ("SYSTEM:", "Assistant:", "### Human:", "<|im_start|>user" …): such a line
  is put behind the quote bar ``│ ``;
- forge a heading: ``inline=True`` (heading fields: names, sessions, kinds, dates) folds every line break and tab
  into one space and turns ``[``, ``]`` and ``"`` into ``&#91;``, ``&#93;`` and ``&quot;`` (redaction placeholders
  ``[secret:kind#hash]`` excepted);
- leak a secret: redaction runs inside the rule, after invisible characters are gone (so none can split a key).

The rule is idempotent (``inert(inert(x)) == inert(x)``): the model reads entity-escaped text and may copy it into
what it writes (summaries, quotes), and rendering that again changes nothing.
"""

from __future__ import annotations

import re
import sys
import unicodedata
from collections.abc import Iterable
from functools import cache, lru_cache
from typing import Any

from stratagate.safety.secrets import key_version
from stratagate.safety.secrets import redact_text as redact

BAR = "│ "


# Invisible but not format characters: grapheme joiner, Hangul fillers, object replacement.
_ALSO_INVISIBLE = frozenset({0x034F, 0x115F, 0x1160, 0x3164, 0xFFA0, 0xFFFC})


def removed_ranges() -> list[tuple[int, int]]:
    """The code point ranges the rule deletes, from this Python's Unicode database (~100k code points looked at,
    ~15 ms: ``_invisible`` uses the table below instead when the database is the one it was made from)."""
    points: list[int] = []
    spans = ((0x0000, 0x3400), (0xA000, 0x10000), (0x10000, 0x20000), (0xE0000, 0xE0200))
    for lo, hi in spans:
        for cp in range(lo, hi):
            ch = chr(cp)
            if ch in "\t\n":
                continue
            cat = unicodedata.category(ch)
            if cat in ("Cc", "Cf") or cp in _ALSO_INVISIBLE or 0xE0100 <= cp <= 0xE01EF:
                points.append(cp)
    # Line breaks are mapped, not removed.
    breaks = {0x0B, 0x0C, 0x0D, 0x85, 0x2028, 0x2029}
    points = [cp for cp in points if cp not in breaks]
    ranges: list[tuple[int, int]] = []
    for cp in points:
        if ranges and ranges[-1][1] == cp - 1:
            ranges[-1] = (ranges[-1][0], cp)
        else:
            ranges.append((cp, cp))
    return ranges


# ``removed_ranges()`` under Unicode 14.0.0 (Python 3.11), so a sidecar does not compute it in its first sealing
# capture; tests/test_inert_table.py checks it against the computation.
REMOVED_RANGES_UNICODE = "14.0.0"
REMOVED_RANGES = (
    (0x0, 0x8), (0xE, 0x1F), (0x7F, 0x84), (0x86, 0x9F), (0xAD, 0xAD), (0x34F, 0x34F), (0x600, 0x605),
    (0x61C, 0x61C), (0x6DD, 0x6DD), (0x70F, 0x70F), (0x890, 0x891), (0x8E2, 0x8E2), (0x115F, 0x1160),
    (0x180E, 0x180E), (0x200B, 0x200F), (0x202A, 0x202E), (0x2060, 0x2064), (0x2066, 0x206F), (0x3164, 0x3164),
    (0xFEFF, 0xFEFF), (0xFFA0, 0xFFA0), (0xFFF9, 0xFFFC), (0x110BD, 0x110BD), (0x110CD, 0x110CD),
    (0x13430, 0x13438), (0x1BCA0, 0x1BCA3), (0x1D173, 0x1D17A), (0xE0001, 0xE0001), (0xE0020, 0xE007F),
    (0xE0100, 0xE01EF),
)


def _char_class(ranges: Iterable[tuple[int, int]]) -> str:
    def esc(cp: int) -> str:
        return f"\\U{cp:08x}"

    return "".join(esc(a) if a == b else f"{esc(a)}-{esc(b)}" for a, b in ranges)


@cache
def _invisible() -> re.Pattern[str]:
    """The class of removed characters (compiled on first use, <1 ms; computed only under another Unicode)."""
    table = REMOVED_RANGES if unicodedata.unidata_version == REMOVED_RANGES_UNICODE else removed_ranges()
    return re.compile(f"[{_char_class(table)}]")


def warm() -> None:
    """Build the class of removed characters now (~60–90 ms of CPU): `stratagate serve` does it in its start-up
    thread, before the tokenizer that a recall awaits, so the first recall does not build it on the event loop."""
    _invisible()


_BREAKS = re.compile("\r\n|[\r\x0b\x0c\x85\u2028\u2029]")
_SURROGATE = re.compile("[\ud800-\udfff]")
_AMP = re.compile(r"&(?!(?:amp|lt|gt|quot|#\d{1,7}|#x[0-9a-fA-F]{1,6});)")
# A view is tens of kB: nine C scans of str.replace (none of the replacements holds a character replaced) cost a
# fraction of str.translate with a table, which looks every character up in a dict.
_LOOKALIKES = tuple(
    {
        "<": "&lt;",
        ">": "&gt;",
        "\uff1c": "&lt;",  # full-width <
        "\uff1e": "&gt;",
        "\ufe64": "&lt;",  # small <
        "\ufe65": "&gt;",
        "\u2329": "&lt;",  # angle brackets that NFKC folds to 〈〉
        "\u232a": "&gt;",
        "\uff5c": "|",  # DeepSeek's special-token bar (｜User｜, ｜DSML｜)
    }.items()
)
_INLINE = str.maketrans({"[": "&#91;", "]": "&#93;", '"': "&quot;"})
_PLACEHOLDER = re.compile(r"(\[secret:[a-z0-9\-]+#[0-9a-f]{4}\])")
_ROLES = (
    r"(?:system|developer|assistant|user|human|tool|function|model|ai|bot|instructions?|im_start|im_end|inst|sys"
    r"|context|memory|stratagate)\b"
)
# A role turn: "System:" / "> **User**:" / "- assistant：" (any markdown or quote prefix, then a colon), or a
# header-like "### Human", "[INST]", "<|im_start|>user" (a heading, bracket or ChatML prefix, no colon needed).
# Linear on any line: the prefix is one loop over disjoint alternatives (a markup token or a blank), entered only
# on a markup token, so the engine has one way to read each prefix; nested repeats such as ``(?:(?:m)+\s*)*``
# read a run of dashes in exponentially many ways and held the loop for seconds on ``## ------…``.
_MARK = r"(?:[#>*\-_=|`~]|&lt;|&gt;)"
_ROLE_LINE = re.compile(
    rf"""(?imx)^(?=[^\S\n]*(?:
        (?:{_MARK}(?:{_MARK}|[^\S\n])*)? {_ROLES} [^\S\n]* [:：]
      | (?:\#{{1,6}}|&lt;\|?|&lt;&lt;|\[|\*\*)[^\S\n]* {_ROLES}
    ))"""
)
_SPACES = re.compile(r"\s+")


def inert(text: Any, *, inline: bool = False, redacted: bool = False) -> str:
    """``text`` as inert data (see the module docstring); ``inline`` for heading fields. ``redacted``: the caller
    vouches that ``text`` was built only from text redacted when it was stored (block views sealed from captured
    messages), so the redaction pass, the costly part, is skipped; every output renders it again in full."""
    out = text if isinstance(text, str) else str(text)
    if not out:
        return out
    if len(out) <= _CACHED_CHARS:  # the same views and names are rendered at every step
        return _cached(out, inline, redacted, key_version())
    return _render(out, inline, redacted)


_CACHED_CHARS = 8_192  # with maxsize below: at most ~32 MB held, whatever is rendered


@lru_cache(maxsize=1024)
def _cached(text: str, inline: bool, redacted: bool, _key_version: int) -> str:
    return _render(text, inline, redacted)


def _render(text: str, inline: bool, redacted: bool = False) -> str:
    out = _SURROGATE.sub("\ufffd", text)
    out = _BREAKS.sub("\n", out)
    out = _invisible().sub("", out)  # first: no invisible character may split a secret or a marker
    out = _AMP.sub("&amp;", out)
    for lookalike, entity in _LOOKALIKES:
        out = out.replace(lookalike, entity)
    if inline:
        # Brackets and quotes become entities too; redaction placeholders (already in the text) stay as they are.
        out = "".join(p if i % 2 else p.translate(_INLINE) for i, p in enumerate(_PLACEHOLDER.split(out)))
        out = _SPACES.sub(" ", out).strip()
    # Redaction after escaping: placeholders hold no markup, so the result stays escaped and a second pass is a
    # no-op (redacting first could let escaping expose a new secret-looking value to the second pass).
    if not redacted:
        out = redact(out)
    return out if inline else _ROLE_LINE.sub(BAR, out)


def quote(text: Any) -> str:
    """A multi-line memory text as a quoted block: inert, and every line behind the bar."""
    safe = inert(text)
    # A role-like line already carries the bar from the rule itself.
    lines = safe.split("\n")
    return "\n".join(line if line.startswith(BAR) else BAR + line if line else BAR.rstrip() for line in lines)


class Named(str):
    """A stored name (node, session, source) in a heading: shown in quotes so its words never read as labels."""

    __slots__ = ()


def heading(*fields: Any) -> str:
    """``[a · b · c]`` from heading fields, each inert and single-line (empty fields are left out)."""
    parts = []
    for f in fields:
        if f is None or str(f) == "":
            continue
        text = inert(str(f), inline=True)
        parts.append(f'"{text}"' if isinstance(f, Named) else text)
    return "[" + " · ".join(p for p in parts if p) + "]"


def inert_tree(value: Any, depth: int = 0) -> Any:
    """Every string (dictionary keys included) of a JSON-like value made inert; other scalars unchanged."""
    if isinstance(value, str):
        return inert(value)
    if depth > 64:  # tool results are shallow; a pathological depth is cut rather than recursed into
        return inert(repr(value)[:200])
    if isinstance(value, dict):
        return {inert(str(k), inline=True): inert_tree(v, depth + 1) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [inert_tree(v, depth + 1) for v in value]
    return value


def is_inert(text: str) -> bool:
    """True when ``text`` is a fixed point of the rule (what tests and output checks assert)."""
    return inert(text) == text


__all__ = ["BAR", "Named", "heading", "inert", "inert_tree", "is_inert", "quote"]
assert sys.maxunicode >= 0x10FFFF
