"""L0–L2 of a block written by rule (zero-model mode, and the fallback while the model fails).

Pure and deterministic: the block's source messages in, a ``BlockSummary`` out, the same proposal the model makes,
stored through the same ``_store`` (redaction, monotone ladder) in blocks/summarize.py.

- Topics: one per user request, in order: the request's decision/preference/plan/change sentences (text/cues.py),
  else its first sentence; acknowledgements and greetings are not topics.
- L0 title: the first topic as a headline ("Switch the package manager to pnpm"), the second one after it when it
  fits; tags are the block's salient terms.
- L1 summary: one clause per topic, in order, in the block's language (a Chinese frame for Chinese blocks).
- L2 key facts: the key sentences of user and assistant messages plus the topics that have none, verbatim.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

from stratagate.blocks.prune import is_filler
from stratagate.blocks.source import SourceMessage
from stratagate.blocks.summary_model import BlockSummary
from stratagate.text.cues import Kind, Lang, key_kind, language, sentences
from stratagate.text.terms import STOPWORDS_EN

TITLE_MAX = 120
FACT_MAX = 400
SUMMARY_MAX = 2000
MAX_FACTS = 20
MAX_ASSISTANT_FACTS = 5
MAX_TOPICS = 40
MAX_TAGS = 6
SCAN_CHARS = 4_000  # of one message: a pasted log is not read to its end for topics
TAG_SCAN_CHARS = 40_000  # of the whole block, for the language and the tags
CJK_SCAN_CHARS = 4_000
SENTENCES_PER_MESSAGE = 60

_GREETING = re.compile(r"^(?:hi|hello|hey|good (?:morning|afternoon|evening)|你好|您好|嗨|早上好|晚上好)\b\W*$", re.I)
_TAG_PREFIX = re.compile(r"^\s*(?:\[[^\]\n]{0,40}\]\s*)+")  # "[e2e] …", "[run 7] …": a harness label, not a topic
_MARKUP = re.compile(r"`+|\*{1,3}(?=\S)|(?<=\S)\*{1,3}|^[#>]+\s*")
_LEAD_EN = re.compile(
    r"^(?:(?:ok(?:ay)?|so|hey|hi|well|alright|also|and|then|now|great|thanks|actually|btw|anyway)\b[,!.:]?\s+)*"
    r"(?:(?:please|pls|let'?s|can you|could you|would you|i want (?:you )?to|i'?d like (?:you )?to|we should|"
    r"we need to|you should)\s+)?(?:please\s+)?",
    re.IGNORECASE,
)
_LEAD_ZH = re.compile(r"^(?:(?:好的?|那(?:么|就)?|嗯|另外|还有|然后|其实|请|麻烦你?|帮我|咱们)[，,、\s]*)+")
_TRAILING = " \t.。!！?？;；,，:：…、~～"
_TAG_WORD = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.+#/-]*[A-Za-z0-9+#]|[A-Za-z]")
_CJK_RUN = re.compile(r"[\u4e00-\u9fff]{2,}")
_CJK_STOP = frozenset("的了是在我你他她它这那吗呢吧啊和与就都也很要会把被给让")
GENERIC = frozenset(
    """use uses using used want need needs make let lets think like also get got go going know thing things sure
    thank thanks hi hello good great done next week weeks month today tomorrow time work working now still much
    many well really actually maybe something anything one two new old first last see look try add fix change
    switch move please can could should yes okay instead back finish start same way help don't it's i'm i'll
    we'll let's that's there's what's here's sounds right more less just very bit lot prefer prefers decided decide
    plan plans planned though actually instead""".split()
)


@dataclass(frozen=True)
class _Sentence:
    text: str
    kind: Kind | None
    position: tuple[int, int]  # (message index, sentence index): the order of the block


def extractive_summary(messages: Sequence[SourceMessage]) -> BlockSummary:
    """The rule-written views of a block; never raises on any text (tests/test_zero_model_blocks.py)."""
    said = [(i, m) for i, m in enumerate(messages) if m.role != "tool" and m.content.strip()]
    lang = language(_sample([m for _, m in said], TAG_SCAN_CHARS))
    parsed = {i: _sentences(i, m.content, lang) for i, m in said}
    topics = _topics([(i, m) for i, m in said if m.role == "user"], parsed)
    key = [s for i, m in said for s in parsed[i] if s.kind is not None and (m.role == "user" or s.kind != "plan")]
    facts = _facts(topics, key, {i for i, m in said if m.role == "assistant"})
    tools = _tool_names(messages)
    tags = _tags([m for _, m in said], lang)
    if not facts:
        facts = [_no_request(tools, messages, lang)]
    title = _title(topics, tags, tools, messages, lang)
    summary = _summary(topics, tools, lang)
    return BlockSummary(
        title=title, tags=tags, summary=summary, key_facts=facts, has_durable_facts=bool(key)
    )


def _sentences(index: int, text: str, lang: Lang) -> list[_Sentence]:
    out = []
    for n, sentence in enumerate(sentences(_TAG_PREFIX.sub("", text[:SCAN_CHARS]))[:SENTENCES_PER_MESSAGE]):
        if is_filler(sentence) or _GREETING.match(sentence):
            continue
        # A "sentence" this long is pasted text (a log, code), not a statement: never a key fact.
        kind = key_kind(sentence, lang) if len(sentence) <= FACT_MAX else None
        out.append(_Sentence(str(sentence), kind, (index, n)))
    return out


def _sample(said: list[SourceMessage], limit: int) -> str:
    """The block's words up to ``limit`` characters, spread over its messages (not just the first long paste)."""
    per = max(200, limit // max(1, len(said)))
    return "\n".join(m.content[:per] for m in said)[:limit]


def _norm(text: str) -> str:
    return " ".join(text.casefold().split()).strip(_TRAILING)


def _topics(user: list[tuple[int, SourceMessage]], parsed: dict[int, list[_Sentence]]) -> list[_Sentence]:
    """One or two sentences per user request: its key sentences, else its first sentence; repeats once."""
    topics: list[_Sentence] = []
    seen: set[str] = set()
    for i, _ in user:
        candidates = [s for s in parsed[i] if s.kind is not None][:2] or parsed[i][:1]
        for s in candidates:
            if (norm := _norm(s.text)) and norm not in seen:
                seen.add(norm)
                topics.append(s)
    return topics


def _facts(topics: list[_Sentence], key: list[_Sentence], assistant: set[int]) -> list[str]:
    """Key sentences (the assistant's at most 5) plus the topics without one, verbatim, in block order."""
    chosen: dict[tuple[int, int], _Sentence] = {s.position: s for s in topics}
    from_assistant = 0
    for s in key:
        if s.position[0] in assistant:
            if from_assistant >= MAX_ASSISTANT_FACTS:
                continue
            from_assistant += 1
        chosen.setdefault(s.position, s)
    ordered = sorted(chosen.values(), key=lambda s: (s.position[0] in assistant, s.position))[:MAX_FACTS]
    out, seen = [], set()
    for s in sorted(ordered, key=lambda s: s.position):
        if (norm := _norm(s.text)) not in seen:
            seen.add(norm)
            out.append(_clip(" ".join(s.text.split()), FACT_MAX))
    return out


def _clip(text: str, limit: int) -> str:
    """At most ``limit`` characters, cut at a word boundary where there is one."""
    if len(text) <= limit:
        return text
    cut = text[: limit - 1]
    if " " in cut[limit // 2 :]:
        cut = cut[: cut.rindex(" ")]
    return cut.rstrip(_TRAILING) + "…"


def _clause(text: str, limit: int, lang: Lang, headline: bool) -> str:
    """A topic sentence as a clause ("switch the package manager to pnpm") or a headline ("Switch …")."""
    text = " ".join(_MARKUP.sub("", text).split())
    stripped = (_LEAD_ZH if lang == "zh" else _LEAD_EN).sub("", text)
    if lang == "zh" and _LEAD_EN.match(stripped):  # an English request inside a Chinese block
        stripped = _LEAD_EN.sub("", stripped)
    text = (stripped or text).strip(_TRAILING) or text.strip()
    text = _clip(text, limit)
    first = text.split(" ", 1)[0]
    if headline:
        return text[:1].upper() + text[1:]
    # Lower-case a sentence-initial word ("Switch" → "switch"), never an acronym, a name like "pnpm" or "I".
    if first[:1].isupper() and first[1:].islower() and first != "I":
        return text[:1].lower() + text[1:]
    return text


def _title(
    topics: list[_Sentence], tags: list[str], tools: list[str], messages: Sequence[SourceMessage], lang: Lang
) -> str:
    if topics:
        title = _clause(topics[0].text, 72, lang, headline=True)
        if len(topics) > 1:
            second = _clause(topics[1].text, 44, lang, headline=False)
            joined = f"{title}{'；' if lang == 'zh' else '; '}{second}"
            if len(joined) <= TITLE_MAX:
                title = joined
        return _clip(title, TITLE_MAX)
    if tags:
        return _clip(("关于" + "、".join(tags[:3])) if lang == "zh" else "Notes on " + ", ".join(tags[:3]), TITLE_MAX)
    if tools:
        return _clip(("工具调用：" if lang == "zh" else "Tool calls: ") + ", ".join(tools[:4]), TITLE_MAX)
    if messages:
        first, last = messages[0].turn_seq, messages[-1].turn_seq
        return f"第 {first}–{last} 轮" if lang == "zh" else f"Turns {first}–{last}"
    return "空块" if lang == "zh" else "Empty block"


def _summary(topics: list[_Sentence], tools: list[str], lang: Lang) -> str:
    if not topics:
        lead = "本块没有用户请求" if lang == "zh" else "No user request in this block"
        if tools:
            lead += ("；工具调用：" if lang == "zh" else "; tool calls: ") + ", ".join(tools[:8])
        return lead + ("。" if lang == "zh" else ".")
    shown = topics[:MAX_TOPICS]
    budget = max(30, min(160, (SUMMARY_MAX - 200) // len(shown)))
    clauses = [_clause(t.text, budget, lang, headline=False) for t in shown]
    more = len(topics) - len(shown)
    if lang == "zh":
        body = "；".join(clauses) + (f"；另有 {more} 个话题" if more else "")
        text = f"用户提出：{body}。" if len(topics) == 1 else f"用户依次提出了 {len(topics)} 个话题：{body}。"
    else:
        body = "; ".join(clauses) + (f"; and {more} more" if more else "")
        text = f"The user raised one topic: {body}." if len(topics) == 1 else (
            f"The user raised {len(topics)} topics, in order: {body}."
        )
    return _clip(text, SUMMARY_MAX)


def _no_request(tools: list[str], messages: Sequence[SourceMessage], lang: Lang) -> str:
    if tools:
        return _clip(("工具调用：" if lang == "zh" else "Tool calls: ") + ", ".join(tools), FACT_MAX)
    for m in messages:
        if m.content.strip():
            return _clip(" ".join(m.content.split()), FACT_MAX)
    return "本块没有文字" if lang == "zh" else "No text in this block"


def _tool_names(messages: Sequence[SourceMessage]) -> list[str]:
    return list(dict.fromkeys(m.tool_name for m in messages if m.role == "tool" and m.tool_name))[:12]


def _tags(said: list[SourceMessage], lang: Lang) -> list[str]:
    """Salient terms: the user's words first (once per message, so a repeated paste or canned reply cannot dominate),
    technical-looking ones (node.js, api/user.test.ts, v2) counting double; the assistant's words fill up."""
    scores: Counter[str] = Counter()
    by_user: set[str] = set()
    spelling: dict[str, str] = {}
    per = max(200, TAG_SCAN_CHARS // max(1, len(said)))
    for m in said:
        weight = 2 if m.role == "user" else 1
        for word in dict.fromkeys(_TAG_WORD.findall(_TAG_PREFIX.sub("", m.content[:per]))):
            low = word.lower()
            if len(low) < 2 or len(low) > 40 or low.isdigit() or low in STOPWORDS_EN or low in GENERIC:
                continue
            technical = any(not c.isalpha() for c in low)
            scores[low] += weight * (2 if technical else 1)
            spelling.setdefault(low, word)
            if m.role == "user":
                by_user.add(low)
    if lang == "zh":
        for term, n in _cjk_terms(said).items():
            scores[term] += 2 * n
            spelling.setdefault(term, term)
            by_user.add(term)
    ranked = sorted(scores.items(), key=lambda kv: (kv[0] not in by_user, -kv[1], kv[0]))
    return [spelling[t] for t, _ in ranked[:MAX_TAGS]]


def _cjk_terms(said: list[SourceMessage]) -> Counter[str]:
    """Chinese terms without a segmenter: 2–4 character pieces said at least twice, longest first."""
    counts: Counter[str] = Counter()
    for run in _CJK_RUN.findall(_sample(said, CJK_SCAN_CHARS)):
        for n in (4, 3, 2):
            for i in range(len(run) - n + 1):
                piece = run[i : i + n]
                if not (_CJK_STOP & set(piece)):
                    counts[piece] += 1
    chosen: Counter[str] = Counter()
    for piece, n in sorted(counts.items(), key=lambda kv: (-len(kv[0]), -kv[1], kv[0])):
        # Pieces of one phrase overlap ("两个空格", "个空格缩"): keep the first of them only.
        if n >= 2 and not any(_overlap(piece, other) for other in chosen):
            chosen[piece] = n
        if len(chosen) >= 3:
            break
    return chosen


def _overlap(a: str, b: str) -> bool:
    return any(a[i : i + 2] in b for i in range(len(a) - 1))
