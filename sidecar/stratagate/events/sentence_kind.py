"""Sentence kinds: does a sentence of the user's state a decision, a change, a plan, a preference, a rule or a fact
about the project, or nothing durable (a question, a request, a hypothetical, someone else's words, encouragement,
small talk)? Zero-model mode asks this of every sentence before the rules fill the event's slots.

Two steps, cheapest first:

1. Guards that no wording can outvote: questions, requests for information ("remind me what the deadline is"),
   hypotheticals and reported speech ("my colleague said we should switch") are never events.
2. A linear model (multinomial logistic regression) over features that generalise across wordings: word and
   word-pair stems with the names of tools and products replaced by placeholders ("switch from TOOL to TOOL"),
   character 1–3-grams of Chinese, the cue table's verdict (text/cues.py) as one more feature, whether the
   sentence names a time and whether that time is ahead, word groups ("must / never / 必须"), and how the sentence
   is built (its first word's class, tense, modal, negation, "from X to Y" and "X instead of Y" shapes, a one-off
   edit of the code at hand, Chinese aspect markers and subjects). A sentence is an event only when the model is
   confident enough of both "an event" and its kind (``Model``); one tool put in another's place ("use pnpm, not
   npm") is then a change whatever the model's likeliest kind. It is trained offline by
   ``scripts/train_sentence_kinds.py`` on the train split of the labelled corpus in ``tests/fixtures/extraction/``
   (settings chosen by cross-validation on that split) and shipped as ``events/data/sentence_kinds.json``; run
   time is pure Python (no numpy, no encoder), loaded on first use, so it works with the dense channel off.

English and Chinese are what the corpus covers. Other languages get the guards that apply to them (a trailing
question mark) and whatever their Latin-script words and tool names share with English; the model's "none" is the
usual answer, so they stay quiet rather than guess.
"""

from __future__ import annotations

import json
import math
import re
import threading
from dataclasses import dataclass
from datetime import UTC, datetime
from functools import lru_cache
from itertools import pairwise
from pathlib import Path
from typing import Any, Literal

from stratagate.text import cues

Label = Literal["none", "decision", "change", "plan", "preference", "rule", "fact"]
LABELS: tuple[Label, ...] = ("none", "decision", "change", "plan", "preference", "rule", "fact")
EVENT_LABELS: tuple[Label, ...] = LABELS[1:]
MIN_PROBABILITY = 0.5
"""A sentence can be an event when the model gives 'none' less than this (the weights file may set its own)."""
MAX_SENTENCE = 400
WEIGHTS = Path(__file__).with_name("data") / "sentence_kinds.json"
# Features read time against a fixed day, so the same sentence gets the same features whenever it is judged.
_REFERENCE = datetime(2026, 5, 6, 10, 0, tzinfo=UTC)


@dataclass(frozen=True)
class Kind:
    """What a sentence states: its label, the model's probability for it, scope and polarity for the draft."""

    label: Label
    probability: float
    scope: Literal["project", "user"] = "project"
    negative: bool = False
    change_probability: float = 0.0
    """The model's probability that it is a change, whatever its label ("let's change the ORM to Prisma" is a
    decision that also replaces something)."""
    reason: str | None = None
    """For 'none': which guard fired ('question', 'request', 'hypothetical', 'reported', 'encouragement'), or None
    (the model)."""


# --- guards ---------------------------------------------------------------------------------------------------

_QUESTION_END = re.compile(r"[?？]\s*[\"'”’)]*\s*$|吗\s*[。！.!]?\s*$")
_REQUEST = re.compile(
    r"^\s*(?:hey[,\s]+|so[,\s]+|ok[,\s]+|and\s+)?(?:please\s+)?(?:remind me|tell me|let me know|can you|could you|"
    r"would you|will you|do you know|do you remember|any idea|refresh my memory|what(?:'s| is| are| was| were)?|"
    r"which|who|where|why|how)\b|"
    r"^\s*(?:请|麻烦你?)?(?:提醒我|告诉我|帮我回忆|你还记得|记得.{0,10}吗|能不能|能否|可不可以|你知道)|"
    r"(?:是什么|是哪个|是哪天|是多少|什么时候|怎么样|为什么|来着)\s*[。.]?\s*$",
    re.I,
)
_REPORTED = re.compile(
    r"\b(?:apparently|according to|i heard|i've heard|i read that|rumou?r has it)\b|"
    r"^\s*(?:my|our|their|his|her|the|a|an|one of the)\s+(?:[\w-]+\s+){0,2}(?:said|says|say|thinks|think|suggested|"
    r"suggests|reckons|asked|told me|mentioned|claims?|recommended|recommends|insists?|believes?|argued)\b|"
    r"^\s*(?-i:[A-Z][a-z]+)\s+(?:said|says|thinks|suggested|suggests|reckons|asked|told me|mentioned|claims?)\b|"
    r"^(?:(?:我|我们)?(?:以前|之前)?的?(?:同事|朋友|老板|经理|领导|客户|顾问|供应商|厂商|实习生|队友|老师|专家|前辈|"
    r"对方|他们|对手)|他|她|他们|别人|有人|网上有人|大家|小[\u4e00-\u9fff]|老[\u4e00-\u9fff])"
    r"[^，,。]{0,6}?(?:说|觉得|认为|建议|推荐|问|提到)|据说|听说|据称|"
    # Someone else's content: "the tutorial deploys to Heroku", "书里作者用的是 Haskell".
    r"^\s*(?:in\s+)?(?:the|that|this)\s+(?:tutorial|book|article|blog(?:\s+post)?|video|course|talk|paper)\b|"
    r"^(?:那篇|这篇)?(?:教程|书|文章|博客|视频|课程|论文|网上)(?:里|上|中)?|"
    # Other companies' and projects' systems: "their backend runs on Java", "竞争对手刚发布了移动端".
    r"^\s*(?:their|(?:our\s+|a\s+)?competitors?(?:'s?)?|other\s+(?:companies|teams|projects)|"
    r"(?:another|some other)\s+(?:company|team|project)(?:'s)?)\b|"
    r"^(?:他们的|她们的|别的公司|别家|友商|竞争对手|其他公司|别的团队|其他团队|别人家)",
    re.I,
)


# Wishes state nothing decided: "it would be nice to have dark mode", "I wish we had tests", "有深色模式就好了".
_WISH = re.compile(r"\b(?:would be (?:nice|great|cool|good)|i wish|we wish|hopefully|if only|i hope|would love)\b|"
                   r"就好了|要是能|希望能|但愿", re.I)


# Encouragement says how to feel about the work, not what was decided: "we'll keep going!", "let's keep it up",
# "继续加油". Only when the cheer is the whole sentence: "let's keep using Postgres" is a decision.
_CHEER = re.compile(
    r"^\s*(?:ok(?:ay)?|alright|great|nice|cool|good)?[,!.\s]*(?:so\s+)?(?:let's|we'll|we will|we're going to|i'll)?\s*"
    r"(?:keep (?:(?:on )?going|it up|pushing|at it|the (?:momentum|energy|pace) (?:going|up))|carry on|push on|"
    r"continue|stay (?:positive|focused|motivated))(?:\s+(?:then|guys|team|everyone|together))?\s*[!.…]*\s*$|"
    r"^\s*(?:我们)?(?:继续)?(?:加油|冲|保持住?|继续努力|继续保持)(?:吧|啊|哈|呀)?[!！。.…~]*\s*$",
    re.I,
)


def guard(sentence: str) -> str | None:
    """Why a sentence can never be an event whatever it says ('question', 'request', 'hypothetical',
    'reported', 'encouragement'), or None."""
    text = sentence.replace("’", "'").strip()
    if _QUESTION_END.search(text) or cues.is_question(text):
        return "question"
    if _REQUEST.search(text):
        return "request"
    if _REPORTED.search(text):
        return "reported"
    if cues.is_hypothetical(text) or _WISH.search(text):
        return "hypothetical"
    if _CHEER.search(text):
        return "encouragement"
    return None


# --- features -------------------------------------------------------------------------------------------------

_LATIN = re.compile(r"[A-Za-z0-9][A-Za-z0-9_+#'.-]*[A-Za-z0-9+#]|[A-Za-z0-9]")
_CJK = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]")
_TOKEN = re.compile(r"[a-z0-9][a-z0-9_+#'.-]*[a-z0-9+#]|[a-z0-9]|[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]|[!:]")
_FIRST_PERSON = re.compile(r"^\s*(?:i|i'm|i've|i'd|i'll|my|me)\b|\b(?:for me|to me|i|my)\b|(?<!们)我(?![们])", re.I)
_NEGATIVE = re.compile(
    r"\b(?:no longer|not anymore|stop(?:ped)? using|dropp(?:ed|ing)|ditch(?:ed|ing)?|retir(?:ed|ing)|"
    r"don't use|do not use|doesn't use|aren't using|not using)\b|不再|停用|弃用|不用|别用|去掉|撤掉",
    re.I,
)


# Word groups that carry a kind whatever else the sentence says: they let a small corpus generalise to wordings
# it never saw ("is mandatory" and "must" both say rule). Each is one feature ``kw:<group>``.
_GROUPS: dict[str, str] = {
    "rule": r"\b(?:must|mustn't|never|always|at all times|required|requires?|mandatory|not allowed|forbidden|"
    r"have to|has to|need to|needs to|under no circumstances|ever|no exceptions?|only)\b|"
    r"必须|一律|禁止|不许|不准|不能|不得|绝不|永远|任何时候|一定要|都要|至少|只有|随时|严禁|务必",
    "preference": r"\b(?:prefer\w*|rather|like|likes|love|hate|dislike|fan of|favou?r\w*|can't stand|enjoy|"
    r"i want|i'd like|my default|lean\w* towards|to me|for me|keep it|keep the|keep them)\b|"
    r"喜欢|偏好|偏爱|倾向|习惯|讨厌|受不了|最好|宁愿|更愿意|希望|一点|别太|不要太",
    "change": r"\b(?:now|instead|anymore|no more|no longer|switch\w*|swap\w*|replac\w*|migrat\w*|moved|moving|"
    r"changed|upgrad\w*|bump\w*|ditch\w*|dropp?\w*|retir\w*|scratch|rather than|these days|going forward|"
    r"from now on|from today|turns out|after all|update|pushed back|postponed|rewr\w+|not \w+ anymore)\b|"
    r"\bfrom\s+\S+\s+(?:\S+\s+)?to\b|改|换|迁|切|升级|推迟|提前|不再|停用|去掉|撤掉|现在|以后|原来|已经|不是",
    "decision": r"\b(?:decid\w*|decision|settled|agreed?|chose|choose|chosen|picked|opted|go(?:ing)? with|went with|"
    r"landed on|final|let's|we'll|we will|will be|standardi[sz]\w*|adopt\w*|the call|our choice)\b|"
    r"决定|定了|定为|定下|就定|选|采用|统一|商量好|敲定|确定|就用|这么定",
    "plan": r"\b(?:will|'ll|going to|plan\w*|target\w*|aim\w*|goal|deadline|due|by|before|until|scheduled|"
    r"expected|milestone|next|tomorrow|tonight|this week|this weekend|ready|sprint|launch\w*|ship\w*|release)\b|"
    r"计划|打算|预计|目标|截止|之前|前|内|下周|明天|将|交付|上线|发布|完成|搞定|冻结|生效|到期|开始|之后|"
    r"\d{1,2}[号日]|(?:on|by|before|until) the \d{1,2}(?:st|nd|rd|th)\b|\bfreeze\b|\bgoes live\b|\bstarts?\b",
    "fact": r"\b(?:is|are|runs?|written in|built (?:with|on)|handled by|lives? in|sits? in|stored|hosted|deployed|"
    r"served|uses?|talks? to|goes through|go through|targets?|contains?|exposes?|orchestrated|managed)\b|"
    r"是|跑在|部署在|放在|里|通过|负责|支持|走|基于|由|用的",
    # The qualities a standing preference asks for ("keep it short", "简洁一点").
    "quality": r"\b(?:short|brief|terse|concise|simple|plain|small|clean|readable|explicit|consistent|friendly|"
    r"minimal|fewer|less|quiet|obvious|boring|clear|clarity|tidy)\b|简洁|简单|朴素|短|小|清晰|清楚|明确|一致|友好|少|简短|"
    r"直白|安静|极简|可读",
    "should": r"\b(?:should|shouldn't|ought to|better|best)\b|应该|应当|最好|要|得|别|不要",
    "personal": r"\b(?:love|family|kids?|daughter|son|wife|husband|partner|mom|mum|dad|sister|brother|friends?|"
    r"weekend|vacation|holiday|birthday|house|home|dog|cat|weather|lunch|coffee|tired|hiking|book|movie|"
    r"painting|running|sick|trip|school|party)\b|"
    r"家人|孩子|女儿|儿子|老婆|老公|对象|妈|爸|妹妹|哥哥|朋友|度假|生日|搬家|新家|狗|猫|天气|午饭|咖啡|累|"
    r"爬山|书|电影|画画|跑步|旅游|病了|学校",
    "cheer": r"\b(?:keep (?:going|it up|pushing|up)|let's (?:continue|go|do it|keep)|great (?:work|job)|well done|"
    r"nice|good job|got this|onwards|hang in there|fingers crossed|thanks|thank you|cheers|awesome|perfect|"
    r"sounds good|looks good)\b|加油|继续|保持|冲|干得|做得|谢谢|感谢|辛苦|完美|不错|挺好",
    "project": r"\b(?:code|codebase|repo\w*|api|endpoints?|tests?|deploy\w*|builds?|server|database|db|"
    r"services?|app|frontend|backend|ci|pr|prs|branch|releases?|docs|readme|migrations?|dependenc\w+|lint\w*|"
    r"config\w*|schema|queue|cache|staging|production|package\w*|modules?|functions?|commits?|ui)\b|"
    r"代码|仓库|接口|测试|部署|构建|服务|数据库|前端|后端|分支|发布|文档|迁移|依赖|配置|上线|版本|缓存|队列|"
    r"模块|函数|提交|界面|环境",
    "we": r"\b(?:we|we're|we've|we'll|our|us|the team|let's)\b|我们|咱们|团队",
    "i": r"\b(?:i|i'm|i've|i'd|i'll|my|me)\b|(?<!们)我(?!们)",
    "imperative": r"^(?:please\s+)?(?:never|always|don't|do not|avoid|keep|use|make sure|no|only|every|all|"
    r"prefer|pin)\b|^(?:请|别|不要|千万|永远|一律|所有|每个|只)",
}
_GROUP_RES = {name: re.compile(p, re.I) for name, p in _GROUPS.items()}


_local = threading.local()


def _stemmer() -> Any:
    """One stemmer per thread: a Snowball stemmer keeps the word it works on in itself, and sentences are judged
    in worker threads."""
    stemmer = getattr(_local, "stemmer", None)
    if stemmer is None:
        from snowballstemmer.english_stemmer import EnglishStemmer

        stemmer = _local.stemmer = EnglishStemmer()
    return stemmer


def _placeholder(word: str, first: bool) -> str:
    """A tool or product name as TOOL / NAME, a number as NUM, any other word as its lower-cased stem."""
    from stratagate.events import lexicon

    if lexicon.lookup(word.rstrip(".")) is not None and word.casefold() not in lexicon.AMBIGUOUS:
        return "TOOL"
    if any(c.isdigit() for c in word):
        return "NUM"
    if not first and (word[0].isupper() or any(c.isupper() for c in word[1:])):
        return "NAME"
    low = word.casefold()
    return str(_stemmer().stemWord(low)) if low.isalpha() else low


def _normalised(sentence: str) -> list[str]:
    """The sentence as tokens: Latin words as stems or placeholders, each CJK character by itself."""
    text = sentence.replace("’", "'").replace("‘", "'").strip()
    out: list[str] = []
    pos = 0
    for m in _LATIN.finditer(text):
        out.extend(_TOKEN.findall(text[pos : m.start()]))
        first = not out
        out.append(_placeholder(m.group(0), first))
        pos = m.end()
    out.extend(_TOKEN.findall(text[pos:]))
    return out


def _time_features(sentence: str) -> list[str]:
    from stratagate.events.temporal import resolve

    found = resolve(sentence, _REFERENCE)
    if not found.resolved or found.end is None:
        return []
    return ["time", "time:ahead" if found.end > _REFERENCE else "time:past"]


_FIRST_CLASS: dict[str, str] = {
    **dict.fromkeys(("i", "i'm", "i've", "i'd", "i'll", "me", "my", "mine"), "i"),
    **dict.fromkeys(("we", "we're", "we've", "we'll", "we'd", "our", "us", "let's", "lets"), "we"),
    **dict.fromkeys(("you", "you're", "your", "you'll"), "you"),
    **dict.fromkeys(("they", "they're", "their", "he", "she", "his", "her", "someone", "somebody", "everyone",
                     "people"), "they"),
    **dict.fromkeys(("the", "this", "that", "these", "those", "it", "it's", "its", "there", "there's", "a", "an"),
                    "the"),
    **dict.fromkeys(("all", "every", "each", "no", "nobody", "nothing", "none", "any", "only", "anyone"), "all"),
    **dict.fromkeys(("never", "always", "don't", "do", "please", "avoid"), "imp"),
    **dict.fromkeys(("so", "ok", "okay", "right", "fine", "well", "alright", "yeah", "yes", "hey", "heads", "fyi",
                     "and", "but", "also", "btw", "actually", "update", "quick", "just"), "disc"),
    **dict.fromkeys(("from", "starting", "going", "as", "after", "before", "by", "in", "on", "for", "until", "next",
                     "tomorrow", "today", "now", "ideally", "honestly", "generally", "personally"), "prep"),
}
_MODAL = re.compile(r"\b(?:will|'ll|going to|gonna|shall)\b|\b(?:must|should|need to|needs to|have to|has to|"
                    r"can't|cannot|may not|mustn't|shouldn't)\b|\b(?:would|could|might|may)\b", re.I)
_SHAPES: dict[str, re.Pattern[str]] = {
    "from_to": re.compile(r"\bfrom\s+[\w.+#-]+(?:\s+[\w.+#-]+){0,2}\s+(?:to|into)\b|"
                          r"从.{1,12}(?:改|换|迁|切|升)?(?:到|成|为)", re.I),
    "instead": re.compile(r"\binstead(?: of)?\b|\brather than\b|\bin place of\b|"
                          r"代替|取代|替换|而不是|改用|换成|改成", re.I),
    "x_not_y": re.compile(r",\s*not\s+\w|\bnot\s+[\w.+#-]+\s*(?:anymore|any more)|，\s*不是|而非", re.I),
    "over": re.compile(r"\b\w+\s+over\s+\w+", re.I),
    "now_end": re.compile(r"\bnow\s*[.!]?\s*$|现在|了\s*[。！!.]?\s*$", re.I),
    "past": re.compile(r"\b(?:was|were|had|did|got|went|made|moved|\w{3,}ed)\b", re.I),
    "perfect": re.compile(r"\b(?:have|has|'ve|had)\s+(?:\w+\s+)?\w+(?:ed|en|wn|un|ne)\b", re.I),
    "progressive": re.compile(r"\b(?:am|is|are|'re|'m|'s)\s+(?:\w+\s+)?\w+ing\b", re.I),
    "negation": re.compile(r"\b(?:not|no|never|nobody|nothing|none|without)\b|n't\b|不|没|别|无", re.I),
    "please": re.compile(r"\bplease\b|\bpls\b|请|麻烦", re.I),
    "number": re.compile(r"\d"),
    # A one-off edit of the code at hand ("swap the axios call for fetch in this component") is no event.
    "local": re.compile(r"\b(?:this|that|these)\s+(?:file|function|component|line|class|method|snippet|block|call|"
                        r"loop|query|page|variable|object|test|cell)s?\b|\bhere\b|这个(?:文件|函数|组件|变量|方法|类)|"
                        r"这段|这里|这行|这块|此处", re.I),
    "zh_le_mid": re.compile(r"了(?=[\u4e00-\u9fff])"),
    "zh_guo": re.compile(r"过(?![去来])"),
    "zh_future": re.compile(r"将|要|会|打算|准备"),
    "zh_progressive": re.compile(r"正在|在做|在搞|在跑"),
    "zh_subject_we": re.compile(r"^(?:我们|咱们|咱|团队|大家)"),
    "zh_subject_i": re.compile(r"^我(?!们)"),
    "zh_imperative": re.compile(r"^(?:请|别|不要|用|把|给|记得|统一|尽量|保持)"),
}


_TOOL_SWAP = re.compile(r"TOOL not TOOL|TOOL instead of TOOL|from TOOL to TOOL|TOOL over TOOL|"
                        r"^(?:switch|swap|move|migrat|go|chang)\w* (?:\w+ ){0,3}(?:to|for|with) TOOL|"
                        r"^(?:use|go with) TOOL(?: not TOOL)?$|"
                        # a correction: "actually, make that pnpm" (the guide's "make that X instead")
                        r"^(?:actual |no |wait |ok |okay )?make (?:that|it|this) TOOL|"
                        # 改用 / 换成 / 切到 / 迁到 TOOL (Chinese is one token per character here)
                        r"(?:^|\s)(?:改|换|切|迁|转)\s(?:用|成|到|为)\s(?:\S\s){0,2}TOOL")


def _shape_features(sentence: str) -> list[str]:
    """How the sentence is built rather than which words it uses: its first word's class, tense, modal, negation,
    "from X to Y" / "X instead of Y" shapes, Chinese aspect markers and subjects; the word groups and shapes again
    per language, since the same group is a surer sign in one language than in the other."""
    text = sentence.replace("’", "'")
    feats: list[str] = []
    words = re.findall(r"[A-Za-z][A-Za-z']*", text)
    if words and not _CJK.search(text[:2]):
        feats.append(f"first:{_FIRST_CLASS.get(words[0].casefold(), 'other')}")
    shapes = [name for name, rx in _SHAPES.items() if rx.search(text)]
    feats += [f"shape:{name}" for name in shapes]
    modal = _MODAL.search(text)
    if modal:
        feats.append(f"modal:{modal.group(0).casefold()}")
    lang = "zh" if _CJK.search(text) else "en"
    feats += [f"kw{lang}:{name}" for name, rx in _GROUP_RES.items() if rx.search(text)]
    feats += [f"shape{lang}:{name}" for name in shapes]
    return feats


def features(sentence: str) -> list[str]:
    """The model's features of one sentence (the trainer and the run time share this function)."""
    tokens = _normalised(sentence)
    feats: list[str] = []
    latin = [t for t in tokens if not _CJK.fullmatch(t)]
    words = ["<s>", *latin, "</s>"]
    feats += [f"w:{w}" for w in latin]
    feats += [f"b:{a} {b}" for a, b in pairwise(words)]
    chars = "".join(t if _CJK.fullmatch(t) else "X" if t in ("TOOL", "NAME", "NUM") else "" for t in tokens)
    if _CJK.search(chars):
        seq = f"^{chars}$"
        for n in (1, 2, 3):
            feats += [f"c{n}:{seq[i : i + n]}" for i in range(len(seq) - n + 1)]
    cue = cues.classify(sentence)
    if cue is not None:
        feats += [f"cue:{cue.type}", f"cue:{cue.row}"]
    else:
        feats.append("cue:none")
    feats += _time_features(sentence)
    folded = sentence.replace("’", "'")
    feats += [f"kw:{name}" for name, rx in _GROUP_RES.items() if rx.search(folded)]
    if any(t in ("TOOL", "NAME", "NUM") for t in tokens):
        feats.append("named")
    if sentence.rstrip().endswith(("!", "！")):
        feats.append("end:!")
    size = len(latin) + len(chars) // 2
    feats.append("len:1" if size <= 2 else "len:3" if size <= 4 else "len:5+")
    feats += _shape_features(sentence)
    # One tool put in another's place: "use TOOL, not TOOL", "switch to TOOL", "TOOL instead of TOOL".
    if _TOOL_SWAP.search(" ".join(tokens)):
        feats.append("shape:tool_swap")
    return list(dict.fromkeys(feats))


# --- the model ------------------------------------------------------------------------------------------------


def _softmax(logits: list[float]) -> list[float]:
    top = max(logits)
    exps = [math.exp(v - top) for v in logits]
    total = sum(exps)
    return [e / total for e in exps]


@dataclass(frozen=True)
class Model:
    """One softmax over the labels from the sum of the features' rows. A sentence is an event when 'none' gets
    less than ``threshold`` and its likeliest kind holds at least ``min_kind`` of the event probability: a kind
    the model hesitates about (a decision or a change? a fact or a plan?) is more often wrong than right, so it is
    not stored (calibrated by cross-validation on the train split: less recall, knowingly, for more precision)."""

    labels: tuple[str, ...]
    bias: tuple[float, ...]
    weights: dict[str, tuple[float, ...]]
    threshold: float = MIN_PROBABILITY
    min_kind: float = 0.0

    def probabilities(self, feats: list[str]) -> list[float]:
        logits = list(self.bias)
        for f in feats:
            row = self.weights.get(f)
            if row is not None:
                logits = [a + b for a, b in zip(logits, row, strict=True)]
        top = max(logits)
        exps = [math.exp(v - top) for v in logits]
        total = sum(exps)
        return [e / total for e in exps]


def parse_model(data: dict[str, Any]) -> Model:
    labels = tuple(data["labels"])
    if labels != LABELS:
        raise ValueError(f"the weights are for labels {labels}, not {LABELS}")
    weights = {k: tuple(float(x) for x in v) for k, v in data["weights"].items()}
    return Model(labels, tuple(float(x) for x in data["bias"]), weights,
                 float(data.get("threshold", MIN_PROBABILITY)), float(data.get("min_kind", 0.0)))


@lru_cache(maxsize=1)
def model() -> Model:
    """The shipped weights, read on first use (a few hundred KB of JSON: not at sidecar start)."""
    return parse_model(json.loads(WEIGHTS.read_text(encoding="utf-8")))


def judge(sentence: str, weights: Model | None = None) -> Kind:
    """What one sentence states. ``weights`` replaces the shipped model (to score a model trained on a subset)."""
    text = sentence.strip()
    if not text or len(text) > MAX_SENTENCE:
        return Kind("none", 1.0, reason="length")
    why = guard(text)
    if why is not None:
        return Kind("none", 1.0, reason=why)
    chosen = weights or model()
    feats = features(text)
    probs = chosen.probabilities(feats)
    # One tool put in another's place ("switch to pnpm", "改用 pnpm") replaces a state, unless the sentence edits the
    # code at hand ("swap the axios call for fetch in this component"): a change whatever the model leans to.
    swap = "shape:tool_swap" in feats and "shape:local" not in feats
    if probs[0] >= chosen.threshold and not swap:
        return Kind("none", probs[0])
    best = max(range(1, len(LABELS)), key=lambda i: probs[i])
    if swap:
        best = LABELS.index("change")
    elif probs[best] < chosen.min_kind * (1.0 - probs[0]):
        return Kind("none", probs[0])
    label = LABELS[best]
    scope: Literal["project", "user"] = (
        "user" if label == "preference" and _FIRST_PERSON.search(text.replace("’", "'")) else "project"
    )
    change = probs[LABELS.index("change")]
    return Kind(label, probs[best], scope, negative=bool(_NEGATIVE.search(text)), change_probability=change)


def event_sentences(text: str) -> list[tuple[cues.Sentence, Kind]]:
    """Every sentence of a user's message that states something durable, with its kind, in order."""
    found = []
    for s in cues.sentences(text):
        kind = judge(s.text)
        if kind.label != "none":
            found.append((s, kind))
    return found
