"""Cue sentences: the table of patterns, per language, that say a sentence states a decision, a preference, a plan,
a change or a stated fact. Zero-model mode reads it twice: block key facts (blocks/extractive.py) and rule-based
events (events/rule_extraction.py).

The table is data: each row is a language, an event type, its patterns, a scope hint (a first-person preference
is about the user), a polarity, and at least one example the row must match and one it must not
(tests/test_cues.py checks every row against its own examples). Rows are tried in table order and the first match
wins, so the more specific kinds come first: a change ("switch to pnpm") before a decision ("let's use pnpm"),
a plan before a stated fact. Questions are never cues: "should we switch to pnpm?" decides nothing.

Patterns are matched case-insensitively anywhere in one sentence; ``sentences`` cuts a text into sentences with
their character offsets, so a quote taken from it is verbatim.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import cached_property
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

CueType = Literal["decision", "preference", "plan", "change", "fact"]
Kind = CueType  # the name blocks/extractive.py uses
KINDS: tuple[CueType, ...] = ("change", "decision", "plan", "preference", "fact")
Polarity = Literal["positive", "negative"]
Lang = Literal["en", "zh"]

MAX_SENTENCE = 400
"""Longer 'sentences' are pasted text (logs, code), not statements."""


class CueRow(BaseModel):
    """One row of the cue table."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    id: str = Field(pattern=r"^(en|zh)\.[a-z_]+$")
    lang: Lang
    type: CueType
    patterns: tuple[str, ...] = Field(min_length=1)
    scope: Literal["project", "user"] = "project"
    polarity: Polarity = "positive"
    examples: tuple[str, ...] = Field(min_length=1)
    counterexamples: tuple[str, ...] = Field(min_length=1)

    @field_validator("patterns")
    @classmethod
    def _compiles(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        for p in value:
            re.compile(p)
        return value

    @cached_property
    def compiled(self) -> tuple[re.Pattern[str], ...]:
        return tuple(re.compile(p, re.I) for p in self.patterns)

    def matches(self, sentence: str) -> bool:
        return any(p.search(sentence) for p in self.compiled)


# Subjects: who "we" is in English (the project) and Chinese.
_WE = r"(?:we|we've|we're|we'll|we'd|our team|the team|the project|this project|our project|the repo|our repo)"
_I = r"(?:i|i'm|i've|i'll|i'd)"
_ZH_WE = r"(?:我们|咱们|团队|项目|这个项目|本项目|我们项目)"
_ZH_TIME = (
    r"(?:下周[一二三四五六日天]?|下个?星期[一二三四五六日天]?|下个?月|下个?季度|明天|后天|明年|月底|年底|周末|本周[一二三四五六日天]?|"
    r"这周[一二三四五六日天]?|周[一二三四五六日天]|星期[一二三四五六日天]|\d{1,2}月\d{1,2}[日号]|\d{4}-\d{2}-\d{2})"
)
_ZH_DONE = r"(?:完成|做完|搞定|上线|发布|交付|提交|写完|实现|推出)"

# The table. Order matters (first match wins): changes, negated decisions, plans, preferences, decisions, facts.
_ROWS: list[dict[str, object]] = [
    # --- English ---------------------------------------------------------------------------------------------
    {
        "id": "en.change_switch", "lang": "en", "type": "change",
        "patterns": [
            r"\b(?:switch(?:ed|es|ing)?|mov(?:e|ed|es|ing)|migrat(?:e|ed|es|ing)|transition(?:ed|ing)?)\s+"
            r"(?:over\s+|back\s+)?(?:(?:from|off)\s+\S+(?:\s+\S+)?\s+)?to\b",
            r"\b(?:switch(?:ed|es|ing)?|migrat(?:e|ed|es|ing))\s+(?:the|our|this|my)\s+(?:[\w.-]+\s+){1,3}?"
            r"(?:over\s+)?(?:from\s+\S+\s+)?to\b",
            r"\bmov(?:e|ed|es|ing)\s+(?:the|our|this)\s+(?:project|repo|codebase|build|tests|test suite|app|ci)\s+"
            r"(?:over\s+)?(?:from\s+\S+\s+)?to\b",
            r"\breplac(?:e|ed|es|ing)\s+\S+(?:\s+\S+){0,3}\s+(?:with|by)\b", r"\binstead of\b",
            r"\bfrom now on\b", r"\bgoing forward,?\s+(?:we|i)\b",
        ],
        "examples": ["Let's switch to pnpm.", "We moved from Jest to Vitest", "Replace webpack with Vite.",
                     "From now on we deploy on Fridays.", "Please switch the package manager to pnpm"],
        "counterexamples": ["The light switch is broken.", "I moved the file into src/.", "Change the colour."],
    },
    {
        "id": "en.change_stop", "lang": "en", "type": "change", "polarity": "negative",
        "patterns": [r"\bno longer (?:use|uses|using|need|needs|rely on)\b", r"\bstop(?:ped|s)? using\b",
                     r"\b(?:dropped|drop|ditch(?:ed)?|got rid of)\s+(?:support for\s+)?(?!the\s+(?:file|line|table)\b)"
                     r"(?=\S*[A-Za-z])\S+\s+(?:entirely|completely|for good)\b"],
        "examples": ["We no longer use npm.", "We stopped using Jest last month."],
        "counterexamples": ["We still use npm.", "The bus stop is near."],
    },
    {
        "id": "en.decision_against", "lang": "en", "type": "decision", "polarity": "negative",
        "patterns": [rf"\b{_WE}\s+(?:have\s+)?decided\s+(?:not\s+to|against)\b",
                     r"\blet'?s not\s+(?:use|go with|adopt)\b",
                     rf"\b{_WE}\s+(?:won't|will not|shall not)\s+(?:use|adopt|support)\b"],
        "examples": ["We decided not to use Redis.", "Let's not use Docker here.", "We won't support IE11."],
        "counterexamples": ["We decided to use Redis.", "I won't be long."],
    },
    {
        "id": "en.plan_intent", "lang": "en", "type": "plan",
        "patterns": [
            rf"\b(?:{_WE}|{_I})\s+(?:plan|planning|intend|aim|hope|want)\s+to\b",
            rf"\b(?:{_WE}|{_I})\s+(?:are|am|'re|'m)?\s*going to\b",
            r"\b(?:we|i)(?:'ll|\s+will|\s+shall|\s+need to|\s+have to|\s+must)\s+"
            r"(?:finish|ship|release|deliver|complete|launch|deploy|start|begin|write|build|add|migrate|publish|"
            r"prepare|review|implement|set up|get)\b",
            r"\b(?:the\s+)?(?:plan|next step|goal|deadline)\s+is\b",
            r"^(?:let's\s+|please\s+)?(?:finish|ship|release|deliver|complete|launch|deploy|publish)\b.*"
            r"\b(?:next|by|tomorrow|tonight|this (?:week|month|friday|monday)|before|until|end of)\b",
        ],
        "examples": ["We need to finish the prototype next week.", "I plan to refactor the parser.",
                     "Ship the beta by Friday.", "The deadline is May 11."],
        "counterexamples": ["We finished the prototype last week.", "It will rain tomorrow.", "Ship it."],
    },
    {
        "id": "en.preference_negative", "lang": "en", "type": "preference", "scope": "user", "polarity": "negative",
        "patterns": [rf"\b{_I}\s+(?:really\s+)?(?:don't|do not|never)\s+(?:like|want|use|enjoy)\b",
                     rf"\b{_I}\s+(?:really\s+)?(?:hate|dislike|can't stand)\b", r"\bplease (?:never|don't ever)\b"],
        "examples": ["I don't like tabs.", "I hate trailing whitespace.", "Please never commit to main."],
        "counterexamples": ["I like tabs.", "Don't worry about it."],
    },
    {
        "id": "en.preference_user", "lang": "en", "type": "preference", "scope": "user",
        "patterns": [rf"\b{_I}\s+(?:really\s+|strongly\s+|usually\s+|always\s+)?(?:prefer|like|love|favou?r)\b"
                     r"(?!\s+(?:it|this|that|them|these|those|not)\b)",
                     r"\bi(?:\s+would|'d)\s+rather\b", r"\bmy (?:preference|favou?rite)\b",
                     rf"\b{_I}\s+always\s+(?:use|want|write)\b", r"\bplease always\b"],
        "examples": ["I prefer tabs over spaces.", "I'd rather use Python.", "Please always write tests first."],
        "counterexamples": ["Do you prefer tabs?", "It looks like rain.", "The user likes it?", "I like it!",
                            "I love this, thanks!"],
    },
    {
        "id": "en.preference_team", "lang": "en", "type": "preference",
        "patterns": [rf"\b{_WE}\s+(?:really\s+|usually\s+)?(?:prefer|favou?r|like to)\b"],
        "examples": ["We prefer small pull requests."],
        "counterexamples": ["They prefer big ones.", "We like it?"],
    },
    {
        "id": "en.decision", "lang": "en", "type": "decision",
        "patterns": [
            rf"\b(?:{_WE}|{_I})\s+(?:have\s+|'ve\s+)?(?:decided|agreed|settled on|chose|chosen|picked|went with)\b",
            r"\blet'?s (?:use|go with|stick with|adopt|pick|choose|keep|standardi[sz]e on)\b",
            rf"\b{_WE}\s+(?:will|'ll|shall|should)\s+(?:use|go with|stick with|adopt|keep)\b",
            r"\b(?:decision|decided)\s*:", r"\bwe(?:'re| are) going with\b",
        ],
        "examples": ["Let's use pnpm for this repo.", "We decided to use PostgreSQL.", "Decision: keep the monorepo."],
        "counterexamples": ["Let's see.", "Did we decide?", "The decision is pending?"],
    },
    {
        "id": "en.fact_uses_negative", "lang": "en", "type": "fact", "polarity": "negative",
        "patterns": [rf"\b{_WE}\s+(?:don't|do not|never|doesn't|does not)\s+(?:use|rely on|depend on|need)\b",
                     rf"\b{_WE}\s+(?:is|are)\s+not\s+using\b"],
        "examples": ["We don't use Jest.", "The project does not depend on Redis."],
        "counterexamples": ["We use Jest.", "I don't know."],
    },
    {
        "id": "en.fact_uses", "lang": "en", "type": "fact",
        "patterns": [rf"\b{_WE}\s+(?:currently\s+|still\s+|already\s+|now\s+)?"
                     r"(?:use|uses|using|are using|is using|rely on|relies on|depend on|depends on|run on|runs on|"
                     r"is built (?:with|on)|are built (?:with|on))\b(?!\s+(?:too|so|a lot|lots|it|this|that)\b)"],
        "examples": ["We use npm.", "The project uses PostgreSQL 16.", "We're using GitHub Actions."],
        "counterexamples": ["They use npm.", "Use npm to install it.", "We are using too much memory."],
    },
    {
        # Last of the English rows: a future time with nothing else to go on ("prototype next week") is a plan.
        "id": "en.plan_when", "lang": "en", "type": "plan",
        "patterns": [
            r"\b(?:next|coming)\s+(?:week|month|sprint|quarter|year|release|monday|tuesday|wednesday|thursday|friday|"
            r"saturday|sunday)\b",
            r"\b(?:tomorrow|tonight|later today)\b",
            r"\bby\s+(?:monday|tuesday|wednesday|thursday|friday|saturday|sunday|the end of|end of|eod|eow)\b",
            r"\b(?:deadline|due (?:on|by)|milestone)\b",
        ],
        "examples": ["Prototype next week.", "Notes on the wiki by Friday.", "The demo is tomorrow."],
        "counterexamples": ["We shipped it last week.", "Yesterday went fine."],
    },
    # --- Chinese ---------------------------------------------------------------------------------------------
    {
        "id": "zh.change_switch", "lang": "zh", "type": "change",
        "patterns": [r"改用|换成|换用|改成|改为|切换到|切换成|切到|迁移到|迁到|转用|替换为|替换成|代替|取代",
                     r"用.{1,30}?替换",
                     r"从现在起|从今以后|今后|以后(?:都|就|一律|统一)?(?:用|使用|改用)"],
        "examples": ["改用 pnpm。", "我们把 npm 换成 pnpm", "测试框架切换到 Vitest", "从现在起周五部署。",
                     "用 Vitest 替换 Jest", "不用 npm 了，改成 pnpm"],
        "counterexamples": ["我们用 npm。", "换个话题吧"],
    },
    {
        "id": "zh.change_stop", "lang": "zh", "type": "change", "polarity": "negative",
        "patterns": [r"不再(?:用|使用|依赖|需要)|别再用|停用|弃用|放弃(?:了)?(?:用|使用)?"],
        "examples": ["我们不再用 npm 了。", "停用 Jest"],
        "counterexamples": ["我们还在用 npm", "再用一次"],
    },
    {
        "id": "zh.decision_against", "lang": "zh", "type": "decision", "polarity": "negative",
        "patterns": [r"决定不|不打算(?:用|使用|采用)|不采用|不会(?:用|使用|采用)"],
        "examples": ["我们决定不用 Redis。", "不采用微服务"],
        "counterexamples": ["我们决定用 Redis。", "不会吧"],
    },
    {
        "id": "zh.plan", "lang": "zh", "type": "plan",
        "patterns": [
            r"计划|打算|准备(?:在|于|要)|预计|争取|目标是|截止",
            rf"{_ZH_TIME}[^。！？!?]{{0,12}}?(?:之前|前|内)?[^。！？!?了]{{0,8}}?{_ZH_DONE}(?!了)",
            rf"(?:要|会|得|需要|必须)[^。！？!?]{{0,6}}?{_ZH_DONE}[^。！？!?了]{{0,10}}{_ZH_TIME}",
        ],
        "examples": ["下周完成原型。", "我们计划重写解析器", "明天之前要上线", "需要完成原型，下周五"],
        "counterexamples": ["上周完成了原型。", "原型完成了"],
    },
    {
        "id": "zh.preference_negative", "lang": "zh", "type": "preference", "scope": "user", "polarity": "negative",
        "patterns": [r"我(?:很|真|最|非常)?(?:不喜欢|讨厌|不想用|受不了)", r"请(?:永远)?不要|千万别"],
        "examples": ["我不喜欢用 Tab 缩进。", "请不要直接推到 main"],
        "counterexamples": ["我喜欢 Tab 缩进", "不要紧"],
    },
    {
        "id": "zh.preference_user", "lang": "zh", "type": "preference", "scope": "user",
        "patterns": [r"(?<!们)我(?:更|比较|很|最|非常|一直|通常)?(?:喜欢|偏好|偏爱|倾向于?|习惯(?:用|于)?|爱用)",
                     r"我的(?:偏好|习惯)", r"请(?:总是|始终|一直)"],
        "examples": ["我喜欢用 Tab 缩进。", "我更倾向于函数式写法", "请总是先写测试"],
        "counterexamples": ["你喜欢什么？", "他喜欢咖啡"],
    },
    {
        "id": "zh.preference_team", "lang": "zh", "type": "preference",
        "patterns": [rf"{_ZH_WE}(?:更|比较|一直|通常)?(?:喜欢|偏好|倾向于?|习惯)"],
        "examples": ["我们更喜欢小的合并请求。"],
        "counterexamples": ["他们喜欢大的"],
    },
    {
        "id": "zh.decision", "lang": "zh", "type": "decision",
        "patterns": [r"决定|定了|确定(?:用|使用|采用)|就用|采用|选定|选择了|统一(?:用|使用)|那就用"],
        "examples": ["我们决定用 PostgreSQL。", "就用 pnpm 吧", "统一使用 ESLint"],
        "counterexamples": ["还没想好", "你来选吧"],
    },
    {
        "id": "zh.fact_uses_negative", "lang": "zh", "type": "fact", "polarity": "negative",
        "patterns": [rf"{_ZH_WE}(?:并|从来|根本)?(?:不|没有|没)(?:在)?(?:用|使用|依赖)"],
        "examples": ["我们不用 Jest。", "项目没有使用 Redis"],
        "counterexamples": ["我们用 Jest。", "他们不用"],
    },
    {
        "id": "zh.fact_uses", "lang": "zh", "type": "fact",
        "patterns": [rf"{_ZH_WE}(?:现在|目前|一直|都|还是|还|也|就)*(?:在)?(?:用|使用|依赖|基于|跑在)"],
        "examples": ["我们用 npm。", "项目目前使用 PostgreSQL", "我们一直在用 GitHub Actions", "我们还是用 yarn 吧"],
        "counterexamples": ["用 npm 安装", "他们用 npm"],
    },
    {
        "id": "zh.plan_when", "lang": "zh", "type": "plan",
        "patterns": [r"下(?:周|个?星期|个?月|季度|一版)|明天|后天|今晚|月底|年底|截止|里程碑"],
        "examples": ["原型下周", "明天再检查一遍"],
        "counterexamples": ["上周完成了原型", "昨天很顺利"],
    },
]

CUES: tuple[CueRow, ...] = tuple(CueRow.model_validate(row) for row in _ROWS)
"""The cue table, validated at import (a broken row fails loudly, in every test)."""


class Sentence(str):
    """One sentence of a text, a ``str`` equal to ``source[start:end]`` (verbatim, stripped of surrounding spaces)."""

    __slots__ = ("end", "start")
    start: int
    end: int

    def __new__(cls, text: str, start: int, end: int) -> Sentence:
        self = super().__new__(cls, text)
        self.start = start
        self.end = end
        return self

    @property
    def text(self) -> str:
        return str(self)


@dataclass(frozen=True)
class Cue:
    """The row a sentence matched."""

    row: str
    lang: Lang
    type: CueType
    scope: Literal["project", "user"]
    polarity: Polarity


# A sentence ends at ASCII .!?; followed by space or the end, at CJK 。！？； (no space needed), or at a line break.
_BOUNDARY = re.compile(r"(?<=[.!?;])(?=\s|$)|(?<=[。！？；])|\n+")
_QUESTION = re.compile(r"[?？]\s*$|^\s*(?:should|shall|do|does|did|can|could|would|will|is|are)\s+(?:we|i)\b|"
                       r"吗[。！]?\s*$|要不要|是否", re.I)
# A question that asks for something ("can you switch us to pnpm?", "请改用 pnpm 吗") is a request, not open.
_REQUEST = re.compile(r"^\s*(?:can|could|would|will) you\b|^\s*please\b|请|能不能", re.I)
_FENCE = re.compile(r"```.*?(?:```|$)", re.DOTALL)
_NOISE = re.compile(r"^[\s\W_]*$")
_MARKER = re.compile(r"(?:[-*+•]|\d{1,3}[.)])\s+")


def sentences(text: str) -> list[Sentence]:
    """The sentences of ``text`` with offsets; markdown list markers and blank pieces are skipped."""
    out: list[Sentence] = []
    # Code fences are pasted code, never statements: they cut the text and are skipped whole.
    cuts = sorted([(m.start(), m.end()) for m in _BOUNDARY.finditer(text)] +
                  [(m.start(), m.end()) for m in _FENCE.finditer(text)])
    merged: list[tuple[int, int]] = []
    for a, b in cuts:
        if merged and a < merged[-1][1]:
            merged[-1] = (merged[-1][0], max(b, merged[-1][1]))
        else:
            merged.append((a, b))
    cuts = merged
    pos = 0
    for cut_start, cut_end in [*cuts, (len(text), len(text))]:
        start, end = pos, cut_start
        pos = cut_end
        while start < end and text[start].isspace():
            start += 1
        while end > start and text[end - 1].isspace():
            end -= 1
        marker = _MARKER.match(text, start, end)
        if marker:
            start = marker.end()
        if start < end and not _NOISE.match(text[start:end]):
            out.append(Sentence(text[start:end], start, end))
    return out


def is_question(sentence: str) -> bool:
    """An open question decides nothing; a request phrased as one ("could you switch us to pnpm?") is kept."""
    return bool(_QUESTION.search(sentence)) and not _REQUEST.search(sentence)


def classify(sentence: str) -> Cue | None:
    """The first row of the table the sentence matches, or None (questions and pasted blobs never match)."""
    if not sentence.strip() or len(sentence) > MAX_SENTENCE or is_question(sentence):
        return None
    folded = sentence.replace("’", "'")  # curly apostrophes match the table's straight ones
    for row in CUES:
        if row.matches(folded):
            return Cue(row.id, row.lang, row.type, row.scope, row.polarity)
    return None


def cue_sentences(text: str) -> list[tuple[Sentence, Cue]]:
    """Every sentence of ``text`` that is a cue, in order, with the row it matched."""
    found = []
    for s in sentences(text):
        cue = classify(s.text)
        if cue is not None:
            found.append((s, cue))
    return found


def language(text: str) -> Lang:
    """'zh' when CJK characters are a fifth or more of the letters, else 'en' (a CJK character carries a word)."""
    cjk = len(re.findall(r"[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]", text))
    latin = len(re.findall(r"[A-Za-z]", text))
    return "zh" if cjk and cjk * 5 >= cjk + latin else "en"


def key_kind(sentence: str, lang: Lang | None = None) -> CueType | None:
    """The cue type of a sentence (decision, preference, plan, change or fact), None when it is none. ``lang`` is
    accepted for callers that know it; every row is tried anyway (Chinese text names English tools)."""
    del lang
    cue = classify(sentence)
    return cue.type if cue is not None else None


def is_key_sentence(sentence: str, lang: Lang | None = None) -> bool:
    """A decision, preference, plan, change or stated-fact sentence: a block's key fact written by rule."""
    return key_kind(sentence, lang) is not None
