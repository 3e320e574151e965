"""Cue words of durable sentences (decision, preference, plan, change) in English and Chinese, as data.

The zero-model block views (blocks/extractive.py) use these to pick an L2 key fact; the table sits in ``text/`` (the
leaf layer) so that a package above ``blocks`` can read the same table. Pure and fast: regexes compiled once.

``sentences`` splits a message into verbatim pieces (substrings of the input, whitespace-stripped), so a key fact is
always a sentence exactly as written.
"""

from __future__ import annotations

import re
from functools import cache
from typing import Literal

Lang = Literal["en", "zh"]
Kind = Literal["change", "preference", "plan", "decision"]

# Checked in this order: "let's switch to pnpm next week" is a change before it is a plan.
KINDS: tuple[Kind, ...] = ("change", "preference", "plan", "decision")

CUES: dict[Lang, dict[Kind, tuple[str, ...]]] = {
    "en": {
        "change": (
            r"\bswitch(?:ed|ing|es)?\b.{0,60}\b(?:to|over|from)\b",
            r"\b(?:mov(?:e|ed|ing)|migrat(?:e|ed|ing)|port(?:ed|ing)?)\b.{0,60}\bto\b",
            r"\breplac(?:e|ed|ing)\b.{0,60}\bwith\b",
            r"\bchang(?:e|ed|ing)\b.{0,60}\bto\b",
            r"\binstead of\b",
            r"\bno longer\b",
            r"\bstop(?:ped)? using\b",
            r"\b(?:drop|dropped|ditch|ditched)\b",
            r"\bfrom now on\b",
            r"\bgo(?:ing)? back to\b",
        ),
        "preference": (
            r"\bi (?:really )?(?:prefer|like|love|hate|dislike)\b",
            r"\bi'?d (?:rather|prefer|like)\b",
            r"\bi don'?t (?:like|want to use)\b",
            r"\bmy (?:favou?rite|preference)\b",
            r"\b(?:always|never) (?:use|write|run|put|add)\b",
            r"\bprefer(?:s|red)?\b",
        ),
        "plan": (
            r"\b(?:next|this|coming) (?:week|month|sprint|quarter|year|monday|tuesday|wednesday|thursday|friday)\b",
            r"\b(?:tomorrow|tonight|later today|by (?:monday|tuesday|wednesday|thursday|friday|saturday|sunday))\b",
            r"\b(?:plan(?:s|ned|ning)? to|going to|intend to|will (?:finish|ship|release|start|add|write|do))\b",
            r"\b(?:deadline|due (?:on|by)|milestone|roadmap|todo)\b",
            r"\bby (?:the )?end of\b",
            r"\b(?:19|20)\d\d-\d\d-\d\d\b",
        ),
        "decision": (
            r"\blet'?s\b",
            r"\bwe(?:'ll| will| are going to|'re going to| should| must)\b",
            r"\b(?:decided|decide|decision|agreed|settled on|go with|went with|chose|choose|pick(?:ed)?)\b",
            r"\bwe(?:'re| are)? (?:use|using|standardi[sz]e on)\b",
            r"\b(?:use|keep) \S+ for\b",
        ),
    },
    "zh": {
        "change": (
            r"改用|换成|换用|改为|改成|替换|迁移到|切换到|转到|不再|不用了|别再|以后都|从此",
        ),
        "preference": (
            r"我(?:更|比较|很|最)?(?:喜欢|偏好|倾向|习惯|讨厌|不喜欢|希望|想要)|偏好|总是用|一律|永远不要|不要用",
        ),
        "plan": (
            r"下(?:周|个?星期|个?月|季度|次)|明天|后天|今晚|本周|这周|月底|年底|周[一二三四五六日末]|星期[一二三四五六日天]",
            r"计划|打算|准备|截止|之前完成|前完成|排期|里程碑|\d{4}-\d\d-\d\d",
        ),
        "decision": (
            r"决定|定了|确定|我们(?:用|就用|采用|选|会|要|将)|就用|采用|选择|统一用|同意用",
        ),
    },
}

_QUESTION_OK = re.compile(r"^\s*(?:can|could|would|will) you\b|^\s*please\b|请|能不能|可以.*吗", re.IGNORECASE)
_CJK = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]")
_LATIN = re.compile(r"[A-Za-z]")
# A sentence ends at 。！？；!? anywhere, at ". " / "; " (not inside "node.js" or "v1.2"), or at a line break.
_END = re.compile(r"[。！？；!?]+|[.;](?=\s|$)|\n+")
_BULLET = re.compile(r"^(?:[-*•>]+|\d{1,3}[.)])\s+")
_FENCE = re.compile(r"```.*?(?:```|$)", re.DOTALL)


@cache
def _compiled(lang: Lang) -> tuple[tuple[Kind, re.Pattern[str]], ...]:
    return tuple(
        (kind, re.compile("|".join(f"(?:{p})" for p in CUES[lang][kind]), re.IGNORECASE)) for kind in KINDS
    )


def language(text: str) -> Lang:
    """``zh`` when CJK characters are a fifth or more of the letters, else ``en``."""
    cjk = len(_CJK.findall(text))
    latin = len(_LATIN.findall(text))
    return "zh" if cjk and cjk * 5 >= cjk + latin else "en"


def sentences(text: str) -> list[str]:
    """The sentences of ``text`` in order: verbatim substrings, stripped, list bullets and code fences left out."""
    out: list[str] = []
    for block in _FENCE.split(text):
        pos = 0
        for end in _END.finditer(block):
            _add(out, block[pos : end.end()])
            pos = end.end()
        _add(out, block[pos:])
    return out


def _add(out: list[str], piece: str) -> None:
    piece = piece.strip()
    if bullet := _BULLET.match(piece):
        piece = piece[bullet.end() :].strip()
    if any(ch.isalnum() for ch in piece):
        out.append(piece)


def key_kind(sentence: str, lang: Lang | None = None) -> Kind | None:
    """What durable kind of sentence this is, by its cue words; None for anything else (and for open questions)."""
    lang = lang or language(sentence)
    stripped = sentence.rstrip()
    if stripped.endswith(("?", "？", "吗")) and not _QUESTION_OK.search(stripped):
        return None
    for kind, pattern in _compiled(lang):
        if pattern.search(sentence):
            return kind
    if lang == "zh":  # Chinese text often names English tools: "let's use pnpm" inside a Chinese block
        for kind, pattern in _compiled("en"):
            if pattern.search(sentence):
                return kind
    return None


def is_key_sentence(sentence: str, lang: Lang | None = None) -> bool:
    """A decision, preference, plan or change sentence (the L2 key facts of a block written by rule)."""
    return key_kind(sentence, lang) is not None
