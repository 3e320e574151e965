"""Checks shared by the rendering-rule tests: what must never reach a model from memory."""

from __future__ import annotations

import re
import unicodedata
from typing import Any

from stratagate import tokens
from stratagate.safety.inert import is_inert
from stratagate.tokens import count_tokens

# Text that must never survive: markup, line breaks other than \n, invisible and bidi characters.
_FORBIDDEN = re.compile("[<>\uff1c\uff1e\ufe64\ufe65\u2329\u232a\r\x0b\x0c\x85\u2028\u2029\ud800-\udfff]")
_ROLE_START = re.compile(
    r"(?i)^[^\S\n]*(?:[#>*\-_=|`~]+[^\S\n]*)*(system|developer|assistant|user|human|tool|model|ai)[^\S\n*_`]*[:：]"
)


def _special_tokens() -> dict[str, int]:
    count_tokens("warm up")
    assert tokens._state is not None
    return dict(tokens._state.added.ids)


SPECIAL_IDS = _special_tokens()
SPECIALS = list(SPECIAL_IDS)


def invisible(ch: str) -> bool:
    cat = unicodedata.category(ch)
    return (cat in ("Cc", "Cf") and ch not in "\t\n") or ch in "\u034f\u115f\u1160\u3164\uffa0\ufffc" or (
        0xE0100 <= ord(ch) <= 0xE01EF
    )


def check_inert(out: str, lines: bool = True) -> None:
    """``lines``: the text is shown as lines (inline heading fields never start a line)."""
    assert not _FORBIDDEN.search(out), repr(out)
    assert not any(invisible(ch) for ch in out), repr(out)
    assert not any(tok in out for tok in SPECIALS), repr(out)
    for line in out.split("\n") if lines else ():
        assert not _ROLE_START.match(line), repr(line)




def check_tree(value: Any) -> int:
    """Every string of a JSON-like value (keys included) is inert and free of markup; returns how many were seen."""
    seen = 0
    stack = [value]
    while stack:
        v = stack.pop()
        if isinstance(v, str):
            check_inert(v)
            assert is_inert(v), repr(v)
            seen += 1
        elif isinstance(v, dict):
            stack.extend(v.keys())
            stack.extend(v.values())
        elif isinstance(v, list):
            stack.extend(v)
    return seen
