"""The words of a text that could single it out: what erase removes from tool records and forget hides echoes by.

A word is a *candidate* when it is a word run of the text (``text/terms.py``'s word pattern, lower-cased, a
possessive "'s" dropped) that is not a stopword (English and Chinese, ``text/terms.py``), not one of the frequent
English words below (words that say little about any one fact: "note", "file", "keep", "today"…), at least
``MIN_CHARS`` characters long and not a number of fewer than ``MIN_DIGITS`` digits ("3", "42" are everywhere).

CJK text has no spaces: each CJK run of at least two characters is one word (found anywhere), and a Latin word
written against it is a word of its own ("Kalo的钥匙" holds "kalo" and "的钥匙"); a Latin word's ends may touch CJK
but no other letter or digit.

Callers add what only they know: erase keeps a candidate only when the namespace rarely holds it
(stratagate/erase/words.py); forget looks for it only within the turn the fact was said in (events/forgotten.py).
"""

from __future__ import annotations

import re
from functools import lru_cache

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
    week month morning evening night now new old true false none null yes okay sure done
    key keys option options door doors room house place home live lives living life family
    water food money car road street city town country state school class group team company business
    job office room book books story page pages letter table chair bed window box bag phone email address
    question questions answer answers problem problems reason reasons result side area part parts level
    form line order power light night hour hours minute minutes second seconds morning afternoon evening
    small large big little short long high low young old early late hard easy simple clear sure ready
    open close closed start started stop stopped begin began finish finished keep keeps kept leave left
    bring brought buy bought pay paid sell sold send sent show shown move moved play played turn turned
    live lived believe hold held happen happened write wrote written sit stand lose lost meet met include
    continue learn learned change changed lead understand watch follow followed create created speak spoke
    allow add added spend spent grow grew offer offered remember love loved consider appear appeared wait
    serve die sent expect build built stay fall cut reach kill remain suggest raise pass passed report
    decide pull prefer prefers preferred said says tell told ask asked call called went gone going come
    came give gave given find found think thought know knew known see saw seen look looked want wanted
    like liked need needed feel felt try tried use used work worked seem seemed put set run ran read
    near far across along around behind beside inside outside upon within without every each both either
    neither another other others such same different important possible public private real sure whole
    able again also always never often sometimes usually already almost enough just only quite rather
    really still then there here today together very well yet maybe perhaps instead however although
    things thing something anything everything nothing someone anyone everyone nobody people person
    number numbers system systems program programs service services version versions update updates
    change changes step steps plan plans list lists name names term terms case cases point points
    fix fixed bug bugs build builds release releases check checks config setting settings default""".split()
)


_CJK_RANGES = "\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\u3040-\u30ff\uac00-\ud7af"
_LATIN_WORD_CHAR = f"[^\\W_{_CJK_RANGES}]"
"""A word character that is not CJK: what may not touch a word's ends (CJK text runs on without spaces)."""


def candidates(text: str) -> list[str]:
    """The candidate words of ``text``, lower-cased, in first-seen order."""
    out: dict[str, None] = {}
    for match in _WORD.finditer(text or ""):
        word = match.group(0).lower().replace("’", "'")
        word = word[:-2] if word.endswith("'s") else word
        for part in _CJK.split(word):  # a Latin word written against CJK text is a word of its own
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


@lru_cache(maxsize=4096)
def pattern(word: str) -> re.Pattern[str]:
    """``word`` as a whole word, any case: no Latin letter or digit may touch a Latin word's ends (CJK may: no
    spaces there); a CJK word anywhere."""
    if _CJK.search(word):
        return re.compile(re.escape(word), re.IGNORECASE)
    return re.compile(rf"(?<!{_LATIN_WORD_CHAR}){re.escape(word)}(?!{_LATIN_WORD_CHAR})", re.IGNORECASE)


def holds(text: str, word: str) -> bool:
    """Whether ``text`` holds ``word`` as a whole word (case-insensitive)."""
    return pattern(word).search(text) is not None
