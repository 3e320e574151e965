"""The one tokenizer shared by every index and every query.

Words are lower-cased Unicode word runs; CJK runs become overlapping bigrams (plus the lone character
for one-character runs) because Chinese has no spaces; stopwords in English and Chinese are dropped
so a query's filler words cannot make everything match. English words are stemmed (Snowball English,
"Porter 2": "painting", "painted" and "paints" are all "paint"), possessives lose their "'s", and dates in any
common spelling become date tokens (see ``text/dates.py``: "May 2023" and "2023-05-08" share ``m202305``).

Indexes store ``fts_document(text)``; queries use ``fts_query(text)``; both come from ``terms``. Changing this
file changes every index (message_fts, event_fts, graph_fts) for rows written afterwards; rows written before
keep their old terms until re-indexed (see ``stratagate.search.raw.reindex_messages``).
"""

from __future__ import annotations

import re
import threading
from functools import lru_cache
from typing import Any, Literal

import Stemmer  # PyStemmer: Snowball's own C stemmers; the same stems as snowballstemmer's Python (tests prove it)

from stratagate.text.dates import find_dates

_WORD = re.compile(r"[^\W_]+(?:['’][^\W_]+)*", re.UNICODE)
# ``_WORD`` on lower-cased ASCII text (there ``[^\W_]`` is ``[a-z0-9]``); ``_ascii_split`` finds the same words.
_ASCII_WORD = re.compile(r"[a-z0-9]+(?:'[a-z0-9]+)*")
# Every ASCII character that cannot be in a word becomes a space (str.translate's ASCII fast path).
_ASCII_SPACES = str.maketrans({c: " " for c in map(chr, range(128)) if not (c.isalnum() or c == "'")})
_CJK = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\u3040-\u30ff\uac00-\ud7af]+")

STOPWORDS_EN = frozenset(
    """a about above after again against all am an and any are as at be because been before being below
    between both but by can could did do does doing down during each few for from further had has have
    having he her here hers herself him himself his how i if in into is it its itself just me more most my
    myself no nor not now of off on once only or other our ours ourselves out over own same she should so
    some such than that the their theirs them themselves then there these they this those through to too
    under until up very was we were what when where which while who whom why will with would you your
    yours yourself yourselves user assistant tool please ok okay yes
    im ive id youre youve youll youd hes shes theyre theyve theyll weve thats theres whats lets dont doesnt
    didnt isnt arent wasnt werent cant couldnt wont wouldnt shouldnt hasnt havent hadnt""".split()
)
STOPWORDS_ZH = frozenset(
    "的 了 和 是 在 我 有 就 不 人 都 一 也 很 到 说 要 去 你 会 着"
    " 没有 看 好 自己 这 那 吗 呢 吧 啊 嗯 哦 么 与 及 或".split()
)

Stemming = Literal["snowball", "plural", "none"]
MAX_WORD = 64


_local = threading.local()


def _snowball() -> Stemmer.Stemmer:
    """One stemmer per thread: a Snowball stemmer holds the word it works on, and terms are made in worker
    threads too."""
    stemmer: Stemmer.Stemmer | None = getattr(_local, "stemmer", None)
    if stemmer is None:
        stemmer = _local.stemmer = Stemmer.Stemmer("english", 0)  # no cache of its own: _latin caches terms
    return stemmer


def _stem_plural(word: str) -> str:
    """Harman's S-stemmer: plurals only (kept to measure against Snowball)."""
    if len(word) > 3 and word.endswith("ies") and not word.endswith(("eies", "aies")):
        return word[:-3] + "y"
    if len(word) > 3 and word.endswith("es") and not word.endswith(("aes", "ees", "oes")):
        return word[:-1]
    if len(word) > 2 and word.endswith("s") and not word.endswith(("us", "ss")):
        return word[:-1]
    return word


@lru_cache(maxsize=131072)
def _latin(word: str, stem: Stemming) -> str | None:
    """The term of one lower-cased non-CJK word, or None for a stopword (cached: vocabularies repeat)."""
    if "'" in word or "’" in word:
        word = word.replace("’", "'")
        if word.endswith("'s"):
            word = word[:-2]
        word = word.replace("'", "")
    if not word or word in STOPWORDS_EN or len(word) > MAX_WORD:
        return None
    if stem != "none" and word.isascii() and word.isalpha():
        return _snowball().stemWord(word) if stem == "snowball" else _stem_plural(word)
    return word


def _cjk_terms(run: str) -> list[str]:
    if len(run) == 1:
        return [] if run in STOPWORDS_ZH else [run]
    return [run[i : i + 2] for i in range(len(run) - 1)]


# The term (or None) of each ASCII word already seen, per stemming mode: a plain dict read from C (``map``) is
# several times cheaper per word than a call; cleared when full (vocabularies repeat, memory stays bounded).
_ASCII_TERMS: dict[str, dict[str, str | None]] = {"snowball": {}, "plural": {}, "none": {}}
_ASCII_TERMS_MAX = 131072
_UNSEEN: Any = object()


def _ascii_split(lowered: str) -> list[str]:
    """``_ASCII_WORD.findall(lowered)``, four times faster: the text cut at every character that cannot be in a word;
    only a piece with an apostrophe (kept inside a word, not at its ends or doubled) goes through the pattern."""
    pieces = lowered.translate(_ASCII_SPACES).split()
    if "'" not in lowered:
        return pieces
    words: list[str] = []
    for piece in pieces:
        if "'" in piece:
            words.extend(_ASCII_WORD.findall(piece))
        else:
            words.append(piece)
    return words


def _ascii_words(lowered: str, stem: Stemming, out: list[str]) -> None:
    """``_words`` of lower-cased ASCII text: no CJK run to split, so every word is one lookup."""
    words = _ascii_split(lowered)
    known = _ASCII_TERMS[stem]
    try:
        found = list(map(known.__getitem__, words))
    except KeyError:
        if len(known) > _ASCII_TERMS_MAX:
            known.clear()
        found = []
        for word in words:  # read once per word: another thread may clear the dict meanwhile
            term = known.get(word, _UNSEEN)
            if term is _UNSEEN:
                term = known[word] = _latin(word, stem)
            found.append(term)
    out.extend([term for term in found if term is not None])


def _words(text: str, stem: Stemming, out: list[str]) -> None:
    lowered = text.lower()
    if lowered.isascii():
        _ascii_words(lowered, stem, out)
        return
    for word in _WORD.findall(lowered):
        if word.isascii() or _CJK.search(word) is None:
            if (term := _latin(word, stem)) is not None:
                out.append(term)
            continue
        # Split mixed runs such as "DSH插件" into latin and CJK parts.
        pos = 0
        for cjk in _CJK.finditer(word):
            if (latin := _latin(word[pos : cjk.start()], stem)) is not None:
                out.append(latin)
            out.extend(_cjk_terms(cjk.group(0)))
            pos = cjk.end()
        if (tail := _latin(word[pos:], stem)) is not None:
            out.append(tail)


def terms(text: str, *, stem: Stemming = "snowball", dates: bool = True) -> list[str]:
    """Index/query terms of ``text`` in order, stopwords removed.

    ``stem`` and ``dates`` exist to measure the tokenizer (bench/bench_locomo.py); every index uses the defaults.
    """
    out: list[str] = []
    pos = 0
    if dates:
        for span in find_dates(text):
            _words(text[pos : span.start], stem, out)
            out.extend(span.tokens)
            pos = span.end
    _words(text[pos:], stem, out)
    return out


def fts_document(text: str, *, stem: Stemming = "snowball", dates: bool = True) -> str:
    return " ".join(terms(text, stem=stem, dates=dates))


def quote(term: str) -> str:
    return '"' + term.replace('"', '""') + '"'


def fts_query(text: str, *, stem: Stemming = "snowball", dates: bool = True) -> str | None:
    """An FTS5 MATCH expression OR-ing the distinct query terms, or None when nothing is searchable."""
    seen = dict.fromkeys(terms(text, stem=stem, dates=dates))
    if not seen:
        return None
    return " OR ".join(quote(t) for t in seen)
