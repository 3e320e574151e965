"""Cue sentences: the table of patterns, per language, that say a sentence states a decision, a preference, a plan,
a change or a stated fact. Zero-model mode reads it twice: block key facts (blocks/extractive.py), and as one
feature of the sentence classifier that picks rule-based events (events/sentence_kind.py).

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
# Parts of a project a tool is chosen for: the subject of "Our CI runs on Jenkins" / "测试框架用 Jest".
_TOPIC = (
    r"ci|ci/cd|the ci|ci pipeline|pipeline|builds?|the build|tests?|unit tests|e2e tests|test runner|test framework|"
    r"testing|test suite|database|db|datastore|storage|cache|caching|queue|package manager|packages|dependencies|"
    r"bundler|bundling|linter|linting|formatter|formatting|frontend|front end|backend|back end|server|api|app|"
    r"deploys?|deployments?|hosting|infra|infrastructure|stack|tech stack|orm|framework|runtime|docs|"
    r"documentation|monitoring|logging|auth|authentication|container(?:s)?|orchestration|repo|codebase|code"
)
TOPIC = _TOPIC
"""The topics as a regex alternation (no anchors), for events/claims.py: a topic subject is the project."""
ZH_TOPIC = (
    r"(?:测试框架|测试工具|测试|单元测试|数据库|缓存|包管理器?|依赖管理|打包工具|构建工具|构建|打包|CI|"
    r"持续集成|流水线|前端|后端|服务端|框架|部署|运行时|代码检查|格式化工具|格式化|消息队列|队列|容器|"
    r"编排|文档|监控|日志|认证|鉴权|存储)"
)
_CALENDAR = (
    r"(?:monday|tuesday|wednesday|thursday|friday|saturday|sunday|january|february|march|april|may|june|july|"
    r"august|september|october|november|december|tomorrow|next|the next|q[1-4])\b"
)
_ZH_TOPIC = ZH_TOPIC[3:-1]
_ZH_TIME = (
    r"(?:下周[一二三四五六日天]?|下个?星期[一二三四五六日天]?|下个?月|下个?季度|明天|后天|明年|月底|年底|周末|本周[一二三四五六日天]?|"
    r"这周[一二三四五六日天]?|周[一二三四五六日天]|星期[一二三四五六日天]|\d{1,2}月\d{1,2}[日号]|\d{4}-\d{2}-\d{2}|"
    r"[\d一二两三四五六七八九十]+(?:天|周|个?星期|个月)(?:之内|以内|内|后|之后)|月末|年末)"
)
_ZH_DONE = r"(?:完成|做完|搞定|上线|发布|交付|提交|写完|实现|推出)"

# The table. Order matters (first match wins): negated decisions ("we won't switch"), changes, plans, preferences,
# decisions, facts.
_ROWS: list[dict[str, object]] = [
    # --- English ---------------------------------------------------------------------------------------------
    {
        "id": "en.decision_against", "lang": "en", "type": "decision", "polarity": "negative",
        "patterns": [rf"\b{_WE}\s+(?:have\s+)?decided\s+(?:not\s+to|against)\b",
                     r"\blet'?s not\s+(?:use|go with|adopt|switch|move|migrate|replace)\b",
                     rf"\b{_WE}\s+(?:won't|will not|shall not)\s+(?:use|adopt|support)\b",
                     rf"\b(?:{_WE}|{_I})\s+(?:won't|will not|shall not|aren't|are not|am not|not|"
                     r"don't|do not|didn't|did not|never)\s+(?:going to\s+|want to\s+|plan to\s+)?"
                     r"(?:switch|switching|move|moving|migrate|migrating|replace|replacing)\b",
                     r"\bdecided against\b",
                     r"^\s*(?:please\s+)?(?:don't|do not|never)\s+(?:switch|move|migrate|replace|use)\b"],
        "examples": ["We decided not to use Redis.", "Let's not use Docker here.", "We won't support IE11.",
                     "We're not moving to GitHub Actions.", "Don't switch to pnpm."],
        "counterexamples": ["We decided to use Redis.", "I won't be long."],
    },
    {
        "id": "en.change_switch", "lang": "en", "type": "change",
        "patterns": [
            r"\b(?:switch(?:ed|es|ing)?|mov(?:e|ed|es|ing)|migrat(?:e|ed|es|ing)|transition(?:ed|ing)?)\s+"
            r"(?:over\s+|back\s+)?(?:(?:from|off)\s+\S+(?:\s+\S+)?\s+)?to\b",
            r"\b(?:switch(?:ed|es|ing)?|migrat(?:e|ed|es|ing))\s+(?:the|our|this|my)\s+(?:[\w.-]+\s+){1,3}?"
            r"(?:over\s+)?(?:from\s+\S+\s+)?to\b",
            r"\bmov(?:e|ed|es|ing)\s+(?:the|our|this)\s+(?:project|repo|codebase|build|tests|test suite|app|ci)\s+"
            r"(?:over\s+)?(?:from\s+\S+\s+)?to\b",
            # "moving CI to GitHub Actions", "migrate the database to Postgres": a topic, then a name-like target
            # (not a day or a month: "move the meeting to Friday" is no change of tool).
            rf"\b(?:switch|mov|migrat|port)(?:e|ed|es|ing)?\s+(?:(?:the|our|this|my)\s+)?(?:[\w.-]+\s+){{1,3}}?"
            rf"(?:over\s+)?(?:(?:from|off)\s+\S+(?:\s+\S+)?\s+)?(?:on)?to\s+(?:using\s+)?(?!{_CALENDAR})(?-i:[A-Z0-9])",
            r"\b(?:mov|migrat|switch)(?:e|ed|es|ing)?\s+(?:away\s+from|off(?:\s+of)?)\s+\S+",
            r"\breplac(?:e|ed|es|ing)\s+\S+(?:\s+\S+){0,3}\s+(?:with|by)\b", r"\binstead of\b",
            r"\bfrom now on\b", r"\bgoing forward,?\s+(?:we|i)\b", r"\b(?:starting|beginning) (?:today|now)\b",
            r"\bswap(?:ped|ping|s)?\s+\S+(?:\s+\S+)?\s+(?:for|with|out for)\b", r"\bin fav(?:ou)?r of\b",
            r"^(?:please\s+)?(?:use|go with|pick)\s+\S+(?:\s+\S+)?,?\s+(?:not|rather than)\s+\S+",
        ],
        "examples": ["Let's switch to pnpm.", "We moved from Jest to Vitest", "Replace webpack with Vite.",
                     "From now on we deploy on Fridays.", "Please switch the package manager to pnpm",
                     "We're moving CI to GitHub Actions.", "We've moved off Jenkins.", "Swap Jest for Vitest.",
                     "We're dropping Jest in favour of Vitest.", "Use pnpm, not npm."],
        "counterexamples": ["The light switch is broken.", "I moved the file into src/.", "Change the colour.",
                            "Move the meeting to Friday.", "I moved the file to src/utils."],
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
            rf"\b(?:{_WE}\s+(?:will|shall|should)|we'll|i'll|i will)\s+"
            r"(?:be\s+using|use|go with|stick with|adopt|keep)\b",
            r"\b(?:decision|decided)\s*:", r"\bwe(?:'re| are) going with\b",
        ],
        "examples": ["Let's use pnpm for this repo.", "We decided to use PostgreSQL.", "Decision: keep the monorepo.",
                     "We'll use Redis for the cache."],
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
        # A part of the project as the subject, and a name as the object: "Our CI runs on Jenkins", "Tests are
        # written with Jest", "The database is PostgreSQL", "Our stack: React".
        "id": "en.fact_topic", "lang": "en", "type": "fact",
        "patterns": [
            rf"^(?:(?:our|the|this|my)\s+)?(?:{_TOPIC})\s+(?:currently\s+|still\s+|now\s+|all\s+)?"
            r"(?:uses?|is using|are using|runs? on|(?:is|are) (?:running|run|hosted|deployed) on|"
            r"(?:is|are) (?:written|built|done|handled|managed|tested|bundled|stored|run) (?:with|in|by|on|using)|"
            r"(?:is|are)|lives? in|go(?:es)? through|:)\s+(?:on\s+)?(?:all\s+)?(?-i:[A-Z])",
            r"^(?:we're|we are|we've been|i'm|i am)\s+(?:currently\s+|still\s+)?(?:on|using)\s+(?-i:[A-Z0-9])",
        ],
        "examples": ["Our CI runs on Jenkins right now.", "Tests are written with Jest.", "The database is PostgreSQL.",
                     "We're on Node 20.", "Deploys go through GitHub Actions."],
        "counterexamples": ["The tests are flaky.", "Our CI is slow today.", "The database is down.",
                            "Tests are written by hand.", "The tests are 5 minutes slower.",
                            "Builds are broken."],
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
            r"\bwithin\s+(?:the\s+next\s+)?\w+\s+(?:days?|weeks?|months?)\b",
            r"\bin\s+(?:\d+|a|one|two|three|four|five|six|a couple of)\s+(?:days?|weeks?|months?)\b",
            r"\bby\s+(?:eod|eow|eom|mid-?\s*\w+|early\s+\w+|late\s+\w+|january|february|march|april|june|july|"
            r"august|september|october|november|december|Q[1-4])\b",
            r"\bbefore\s+the\s+(?:release|launch|deadline|demo|freeze)\b",
            # A future word and a date: "We'll cut the RC on June 3", "The launch is planned for Q3".
            r"\b(?:will|'ll|going to|planned|scheduled|due|expected|set)\b.*\b(?:on|by|for|before|in|until)\s+"
            r"(?:the\s+)?(?:\d|jan|feb|mar|apr|may|jun|jul|aug|sep|oct|nov|dec|q[1-4]\b|mon|tue|wed|thu|fri|sat|sun)",
        ],
        "examples": ["Prototype next week.", "Notes on the wiki by Friday.", "The demo is tomorrow.",
                     "We need to freeze the API within two weeks.", "Docs by the end of March.",
                     "Beta in two weeks.", "We'll cut the release candidate on June 3.",
                     "The launch is planned for Q3."],
        "counterexamples": ["We shipped it last week.", "Yesterday went fine."],
    },
    # --- Chinese ---------------------------------------------------------------------------------------------
    {
        "id": "zh.change_switch", "lang": "zh", "type": "change",
        "patterns": [r"改用|换成|换用|改成|改为|切换到|切换成|切到|迁移到|迁到|转用|替换为|替换成|代替|取代",
                     r"用.{1,30}?替换",
                     r"不(?:再)?用\s*[A-Za-z0-9][^，,。；]*?了?[，,、]\s*(?:改|换|就|都)?(?:用|使用)",
                     r"(?:从|把)\s*[A-Za-z0-9][^，,。]*?(?:迁|换|转|切)",
                     r"从现在起|从今以后|今后|以后(?:都|就|一律|统一)?(?:用|使用|改用)"],
        "examples": ["改用 pnpm。", "我们把 npm 换成 pnpm", "测试框架切换到 Vitest", "从现在起周五部署。",
                     "用 Vitest 替换 Jest", "不用 npm 了，改成 pnpm",
                     "不用 Jest 了，用 Vitest", "把 CI 从 Jenkins 迁到 GitHub Actions"],
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
        "examples": ["下周完成原型。", "我们计划重写解析器", "明天之前要上线", "需要完成原型，下周五",
                     "两周内上线新版本。"],
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
        # A topic first, then what it uses: "我们的测试框架用 Jest", "CI 跑在 Jenkins 上", "数据库是 PostgreSQL".
        "id": "zh.fact_topic", "lang": "zh", "type": "fact",
        "patterns": [
            rf"^(?:{_ZH_WE}的?)?(?:{_ZH_TOPIC}){{1,2}}\s*(?:现在|目前|一直|都|还是|也)*(?:在)?"
            r"(?:用的是|用|使用|采用|基于|跑在|部署在|是|为|选的是|选用)\s*(?:的是\s*)?[A-Za-z0-9]",
            rf"^{_ZH_WE}的[\u4e00-\u9fff]{{1,8}}?(?:现在|目前|一直|都|还是|也)*(?:用的是|用|使用|采用|基于|跑在|是)\s*"
            r"[A-Za-z0-9]",
        ],
        "examples": ["我们的测试框架用 Jest。", "数据库是 PostgreSQL", "CI 跑在 Jenkins 上",
                     "我们的部署工具用 Ansible", "后端框架用 Django。"],
        "counterexamples": ["他们的测试框架用 Jest", "数据库很慢", "用 npm 安装"],
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
# Hypotheticals, musings and reported speech state nothing current: "what if we used Bun", "we could move to
# pnpm", "maybe switch to Vite later", "he said we should migrate", "如果改用 pnpm", "我们在考虑换成 Vitest".
_HYPOTHETICAL = re.compile(
    r"^\s*(?:what if|what about|how about|maybe|perhaps|if|suppose|supposing|imagine|in case|i wonder|wondering|"
    r"not sure|do you think|any thoughts|someday|one day|ideally)\b|"
    r"\b(?:we|i)\s+(?:could|might|may)\s+(?:\w+\s+)?(?:switch|move|migrate|use|go|try|replace|consider|adopt)\b|"
    r"\b(?:thinking about|thinking of|considering|debating|wondering|evaluating|if we)\b|"
    r"\b(?:he|she|they|someone|somebody|the docs?|the article|the blog|people|the readme)\s+"
    r"(?:said|says|suggested|suggests|recommend(?:s|ed)?|thinks?|claims?)\b|"
    r"如果|假如|要是|假设|万一|也许|或许|可能会?|考虑|要不(?!要)|是不是|会不会|不如|听说|据说|他们说|有人说",
    re.I,
)
# A quoted phrase is someone else's words (or an example), not the user's statement: it is blanked before matching.
_QUOTED = re.compile(
    r"\"[^\"]*\s[^\"]*\"|“[^”]*\s[^”]*”|「[^」]*」|『[^』]*』|`[^`]*\s[^`]*`|(?<!\w)'[^']*\s[^']*'(?!\w)"
)
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


def is_hypothetical(sentence: str) -> bool:
    """A hypothetical, a musing or someone else's words ("what if we used Bun", "he said we should migrate")."""
    return bool(_HYPOTHETICAL.search(sentence.replace("’", "'")))


def classify(sentence: str) -> Cue | None:
    """The first row of the table the sentence matches, or None (questions and pasted blobs never match)."""
    if not sentence.strip() or len(sentence) > MAX_SENTENCE or is_question(sentence):
        return None
    folded = sentence.replace("’", "'")  # curly apostrophes match the table's straight ones
    if _HYPOTHETICAL.search(folded):
        return None
    folded = _QUOTED.sub(lambda m: " " * len(m.group(0)), folded)
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
