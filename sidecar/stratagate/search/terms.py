"""The one tokenizer shared by every index and every query.

Words are lower-cased Unicode word runs; CJK runs become overlapping bigrams (plus the lone character
for one-character runs) because Chinese has no spaces; stopwords in English and Chinese are dropped
so a query's filler words cannot make everything match.
"""

from __future__ import annotations

import re

_WORD = re.compile(r"[^\W_]+", re.UNICODE)
_CJK = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\u3040-\u30ff\uac00-\ud7af]+")

STOPWORDS_EN = frozenset(
    """a about above after again against all am an and any are as at be because been before being below
    between both but by can could did do does doing down during each few for from further had has have
    having he her here hers herself him himself his how i if in into is it its itself just me more most my
    myself no nor not now of off on once only or other our ours ourselves out over own same she should so
    some such than that the their theirs them themselves then there these they this those through to too
    under until up very was we were what when where which while who whom why will with would you your
    yours yourself yourselves user assistant tool please ok okay yes""".split()
)
STOPWORDS_ZH = frozenset(
    "的 了 和 是 在 我 有 就 不 人 都 一 也 很 到 说 要 去 你 会 着"
    " 没有 看 好 自己 这 那 吗 呢 吧 啊 嗯 哦 么 与 及 或".split()
)


def _cjk_terms(run: str) -> list[str]:
    if len(run) == 1:
        return [] if run in STOPWORDS_ZH else [run]
    return [run[i : i + 2] for i in range(len(run) - 1)]


def terms(text: str) -> list[str]:
    """Index/query terms of ``text`` in order, stopwords removed."""
    out: list[str] = []
    for match in _WORD.finditer(text.lower()):
        word = match.group(0)
        if _CJK.search(word) is None:
            if word not in STOPWORDS_EN and len(word) <= 64:
                out.append(word)
            continue
        # Split mixed runs such as "DSH插件" into latin and CJK parts.
        pos = 0
        for cjk in _CJK.finditer(word):
            latin = word[pos : cjk.start()]
            if latin and latin not in STOPWORDS_EN:
                out.append(latin)
            out.extend(_cjk_terms(cjk.group(0)))
            pos = cjk.end()
        tail = word[pos:]
        if tail and tail not in STOPWORDS_EN:
            out.append(tail)
    return out


def fts_document(text: str) -> str:
    return " ".join(terms(text))


def fts_query(text: str) -> str | None:
    """An FTS5 MATCH expression OR-ing the distinct query terms, or None when nothing is searchable."""
    seen: dict[str, None] = {}
    for term in terms(text):
        seen.setdefault(term, None)
    if not seen:
        return None
    return " OR ".join('"' + t.replace('"', '""') + '"' for t in seen)
