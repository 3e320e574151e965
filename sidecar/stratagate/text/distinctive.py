"""The words of a text that could single it out: what erase removes from tool records and forget hides echoes by.

A word is a *candidate* when it is a word run of the text (``text/terms.py``'s word pattern; a CJK run is one word)
that is not a stopword (English and Chinese, ``text/terms.py``), not one of the frequent words below, at least
``MIN_CHARS`` characters long, and not a short number (fewer than ``MIN_DIGITS`` digits: "3", "42" and "2024"-like
counts are everywhere). Callers add what only they know: erase keeps a candidate only when the namespace rarely holds
it (stratagate/erase/words.py), forget only within the turn the fact was said in (events/forgotten.py).
"""

from __future__ import annotations

import re

from stratagate.text.terms import _CJK, _WORD, STOPWORDS_EN, STOPWORDS_ZH

MIN_CHARS = 3
MIN_DIGITS = 4

FREQUENT_EN = frozenset(
    """able also always another anything around asked away back best better big call called came case change
    check come coming could day days done each else end enough even ever every example fact far feel file files
    find fine first found free full get gets getting give given go goes going gone good got great had hand has
    help here high hold home however idea important info just keep kind know known last later least left less
    let life like line lines list little long look looking lot made main make makes many may maybe mean means
    might mind moment much must name names need needs never new next nice note noted notes now number often old
    one ones open part people place point put quite rather read real really remember right run running said say
    says see seem seems set several show side since small something sometimes soon sort start still stuff sure
    take taken talk tell test tests text thank thanks thing things think thought three time times today told
    took top true try trying turn two type use used uses using want wants way ways well went whole without word
    words work working works world yeah year years yet code data value values output result results error errors
    message messages command commands folder path issue issues project user users memory today tomorrow yesterday
    week month morning evening night now new old true false none null yes okay sure done""".split()
)


def candidates(text: str) -> list[str]:
    """The candidate words of ``text``, lower-cased, in first-seen order."""
    out: dict[str, None] = {}
    for match in _WORD.finditer(text or ""):
        word = match.group(0).lower().replace("’", "'")
        word = word[:-2] if word.endswith("'s") else word
        for part in _CJK.split(word):  # a Latin run stuck to a CJK run is two words
            if _keep(part):
                out.setdefault(part, None)
        for run in _CJK.findall(word):
            if len(run) >= 2 and run not in STOPWORDS_ZH:
                out.setdefault(run, None)
    return list(out)


def _keep(word: str) -> bool:
    if len(word) < MIN_CHARS or word in STOPWORDS_EN or word in FREQUENT_EN:
        return False
    return not (word.isdigit() and len(word) < MIN_DIGITS)


def holds(text: str, word: str) -> bool:
    """Whether ``text`` holds ``word`` as a whole word (case-insensitive)."""
    return re.search(rf"(?<![^\W_]){re.escape(word)}(?![^\W_])", text, flags=re.IGNORECASE) is not None
