"""Claims: what an event states about the world as (subject, predicate, object-or-value), the unit the graph
projects. The extraction model and memory_remember may give claims explicitly; otherwise a small rule-based reader
finds the common ones in the event's own words ("The project uses npm", "Switch to pnpm", "Alice works on Atlas").

The reader is deliberately conservative: a missed claim only leaves the graph thinner (the event itself is kept
and searchable), while a wrong one would state something false as current.
"""

from __future__ import annotations

import re
from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, StringConstraints, model_validator

from stratagate.events import lexicon
from stratagate.text.cues import TOPIC, ZH_TOPIC

NodeKind = Literal["person", "project", "organization", "tool", "place", "concept"]
NODE_KINDS: tuple[str, ...] = ("person", "project", "organization", "tool", "place", "concept")

Name = Annotated[str, StringConstraints(strip_whitespace=True, min_length=1, max_length=120)]
Predicate = Annotated[str, StringConstraints(strip_whitespace=True, to_lower=True, pattern=r"^[a-z][a-z0-9_]{1,39}$")]

PROJECT = "this project"
"""The subject name that means the namespace's own project ('the project', 'we', or no subject at all)."""
USER = "user"
"""The subject name that means the person the agent works for ('I', 'the user')."""

# The kind an edge's object usually has, when nothing better is known.
OBJECT_KIND: dict[str, str] = {
    "uses": "tool",
    "depends_on": "tool",
    "works_on": "project",
    "member_of": "organization",
    "works_at": "organization",
    "located_in": "place",
    "lives_in": "place",
    "prefers": "concept",
}


class Claim(BaseModel):
    """One statement about a node: an edge to another node (``object``) or an attribute value (``value``)."""

    model_config = ConfigDict(extra="forbid")

    subject: Name = Field(
        description=f"Who or what it is about. '{PROJECT}' for the current project, '{USER}' for the user."
    )
    subject_kind: NodeKind | None = Field(None, description="person, project, organization, tool, place or concept.")
    predicate: Predicate = Field(
        description="snake_case relation or attribute: uses, depends_on, works_on, member_of, works_at, located_in, "
        "lives_in, prefers, or an attribute such as deadline, status, version."
    )
    object: Name | None = Field(None, description="The other node's name, for a relation.")
    object_kind: NodeKind | None = Field(None, description="The other node's kind, for a relation.")
    value: Annotated[str, StringConstraints(strip_whitespace=True, min_length=1, max_length=300)] | None = Field(
        None, description="The attribute's value, for an attribute (instead of object)."
    )
    slot: Annotated[str, StringConstraints(strip_whitespace=True, to_lower=True, max_length=60)] | None = Field(
        None,
        description="Set when the subject has only one value here at a time (e.g. 'package manager'): a new claim "
        "in the same slot replaces the old one.",
    )
    ended: Literal[False, True] = Field(False, description="True when the statement says this stopped being true.")

    @model_validator(mode="after")
    def _object_or_value(self) -> Claim:
        if (self.object is None) == (self.value is None):
            raise ValueError("a claim has exactly one of object (a relation) or value (an attribute)")
        return self


def with_lexicon(claim: Claim) -> Claim:
    """Fill kinds and the slot from the lexicon: 'uses npm' is the subject's package manager."""
    updates: dict[str, object] = {}
    if claim.object is not None:
        known = lexicon.lookup(claim.object)
        if known is not None:
            if claim.object_kind is None:
                updates["object_kind"] = known.kind
            if claim.slot is None and known.category in lexicon.FUNCTIONAL and claim.predicate in ("uses", "prefers"):
                updates["slot"] = known.category
        elif claim.object_kind is None:
            kind = OBJECT_KIND.get(claim.predicate, "concept")
            if kind == "tool" and not _CODEISH.search(claim.object):
                kind = "concept"  # "uses tabs": a practice, not a tool
            updates["object_kind"] = kind
    if claim.slot is None and claim.value is not None:
        updates["slot"] = claim.predicate.replace("_", " ")  # an attribute holds one value at a time
    return claim.model_copy(update=updates) if updates else claim


# --- the rule-based reader ----------------------------------------------------------------------------------------

_SENTENCES = re.compile(r"(?<=[.!?;])\s+|(?<=[。！？；])\s*|\n+")  # CJK punctuation needs no space after it
_PROJECT_SUBJECTS = re.compile(
    r"^(?:we|us|our team|the team|the project|this project|our project|the repo|this repo|our repo|"
    r"the codebase|this codebase|our codebase|it|let's|let’s|lets|let us|we've|we're|we'll|we'd)$",
    re.I,
)
# A part of the project ("Our CI runs on Jenkins", "Tests are written with Jest") is the project's choice of tool.
_TOPIC_SUBJECT = re.compile(rf"^(?:(?:our|the|this|my)\s+)?(?:{TOPIC})$", re.I)
_TOPIC_OBJ = rf"(?:(?:the|our|this|my)\s+)?(?:{TOPIC})\s+"
_USER_SUBJECTS = re.compile(r"^(?:i|me|the user|user|my|i'm|i've|i'll|i'd)$", re.I)
# Words between the subject and the verb: "we (have) decided to use X", "we're going to use X".
_VERB_PREFIX = (
    r"(?:(?:now|currently|also|still|will|should|must|shall|to|we'll|we will|let's|lets|please|decided|agreed|"
    r"chose|want|plan|need|going|are|'re|have|'ve|finally|definitely|be)\s+)*"
)
_END = r"(?:\s+(?:for|instead|because|since|as|from now|going forward|from|in order|so that|which|that)\b.*)?$"
_OBJ = r"(?P<obj>[\w.+#@/-]+(?:\s+[\w.+#@/-]+){0,3}?)"

_PATTERNS: list[tuple[str, re.Pattern[str]]] = [
    (
        "switch",
        re.compile(
            rf"^(?:(?P<subj>.+?)\s+)?{_VERB_PREFIX}(?:switch(?:es|ed|ing)?|mov(?:e|es|ed|ing)|migrat(?:e|es|ed|ing)|"
            rf"chang(?:e|es|ed|ing)|went|go(?:es|ing)?|port(?:s|ed|ing)?)\s+(?:{_TOPIC_OBJ})?(?:over\s+)?(?:(?:from|off)\s+(?P<old>[\w.+#@/-]+(?:\s+[\w.+#@/-]+)?)\s+)?"
            rf"to\s+(?:using\s+)?{_OBJ}{_END}",
            re.I,
        ),
    ),
    (
        "replace",
        re.compile(
            rf"^(?:(?P<subj>.+?)\s+)?{_VERB_PREFIX}(?:replac(?:e|es|ed|ing)|swap(?:s|ped|ping)?(?:\s+out)?)\s+(?P<old>[\w.+#@/-]+(?:\s+[\w.+#@/-]+)?)"
            rf"\s+(?:with|by|for)\s+{_OBJ}{_END}",
            re.I,
        ),
    ),
    (
        "stop",
        re.compile(
            rf"^(?:(?P<subj>.+?)\s+)?{_VERB_PREFIX}(?:stop(?:s|ped)?\s+using|no longer use(?:s)?|"
            rf"dropp(?:ed)?|drop(?:s)?|remov(?:e|es|ed)|(?:mov|migrat|switch)(?:e|es|ed|ing)?\s+(?:away\s+from|off(?:\s+of)?))"
            rf"\s+{_OBJ}{_END}",
            re.I,
        ),
    ),
    (
        "instead",
        re.compile(
            rf"^(?:(?P<subj>.+?)\s+)?{_VERB_PREFIX}(?:use|uses|using|go with|going with|went with|stick with|pick|"
            rf"picked|choose|chose|adopt|adopted)\s+{_OBJ},?\s+(?:instead of|rather than|not)\s+"
            rf"(?P<old>[\w.+#@/-]+(?:\s+[\w.+#@/-]+)?)"
            rf"(?:\s+.*)?$",
            re.I,
        ),
    ),
    (
        # "We're dropping Jest in favour of Vitest": what ended, then what replaces it.
        "replace",
        re.compile(
            rf"^(?:(?P<subj>.+?)\s+)?{_VERB_PREFIX}(?:dropp(?:ed|ing)|drop(?:s)?|ditch(?:ed|ing|es)?|leav(?:e|es|ing)|"
            rf"abandon(?:ed|ing|s)?|deprecat(?:e|ed|ing)|mov(?:e|ed|ing) off|switch(?:ed|ing)? from)?\s*"
            rf"(?P<old>[\w.+#@/-]+(?:\s+[\w.+#@/-]+)?)\s+in fav(?:ou)?r of\s+{_OBJ}{_END}",
            re.I,
        ),
    ),
    (
        "uses",
        re.compile(
            rf"^(?P<subj>.+?)?\s*{_VERB_PREFIX}(?:uses|use|is using|are using|using|rel(?:y|ies) on|adopt(?:s|ed)?|"
            rf"go(?:ing)? with|went with|stick(?:ing)? with|settled on|standardi[sz]e on|"
            rf"(?:is|are) built (?:with|on)|runs on|run on|(?:is|are) (?:running|run|hosted|deployed) on|"
            rf"(?:is|are) (?:written|built|done|handled|managed|tested|bundled|stored|run) (?:with|in|using|on)|"
            rf"go(?:es)? through)\s+(?:all\s+)?{_OBJ}{_END}",
            re.I,
        ),
    ),
    (
        # "The database is PostgreSQL", "Our test runner: Vitest", "We're on Node 20": a known tool only.
        "copula",
        re.compile(
            rf"^(?:(?P<subj>(?:(?:our|the|this)\s+)?(?:{TOPIC}))(?:\s+of choice)?\s*(?:is|are|:)|"
            rf"(?P<subj2>we're|we are|we've been)\s+(?:currently\s+|still\s+|now\s+)?on)\s+{_OBJ}{_END}",
            re.I,
        ),
    ),
    (
        "depends_on",
        re.compile(rf"^(?P<subj>.+?)\s+{_VERB_PREFIX}(?:depends|depend|depended) on\s+{_OBJ}{_END}", re.I),
    ),
    (
        "works_on",
        re.compile(
            rf"^(?P<subj>.+?)\s+{_VERB_PREFIX}(?:works|work|worked|is working|are working) on\s+{_OBJ}{_END}", re.I
        ),
    ),
    (
        "works_at",
        re.compile(rf"^(?P<subj>.+?)\s+{_VERB_PREFIX}(?:works|work|worked|is working) (?:at|for)\s+{_OBJ}{_END}", re.I),
    ),
    (
        "member_of",
        re.compile(
            rf"^(?P<subj>.+?)\s+{_VERB_PREFIX}(?:is a member of|are members of|joined|belongs to|is part of)"
            rf"\s+{_OBJ}{_END}",
            re.I,
        ),
    ),
    (
        "lives_in",
        re.compile(rf"^(?P<subj>.+?)\s+{_VERB_PREFIX}(?:lives|live|lived|moved) (?:in|to)\s+{_OBJ}{_END}", re.I),
    ),
    (
        "located_in",
        re.compile(rf"^(?P<subj>.+?)\s+(?:is|are) (?:located|based|hosted) in\s+{_OBJ}{_END}", re.I),
    ),
    (
        "prefers",
        re.compile(rf"^(?P<subj>.+?)\s+{_VERB_PREFIX}(?:prefers|prefer|preferred|likes|like)\s+{_OBJ}{_END}", re.I),
    ),
]

_ARTICLES = re.compile(r"^(?:the|a|an|our|my|their|its|his|her)\s+", re.I)
# Tried only where a run of such characters starts (the lookbehind), so a long run is not rescanned at each offset.
_TRAILING = re.compile(r"(?<![\s.,;:!?'\"`)\]])[\s.,;:!?'\"`)\]]+$")


_NEGATION = re.compile(
    r"\b(?:not|never|no longer|don[’']?t|doesn[’']?t|didn[’']?t|won[’']?t|shouldn[’']?t|can[’']?t)\b", re.I
)


def _subject(raw: str | None, *, topics: bool = False) -> tuple[str, str | None] | None:
    """Name and kind of a sentence subject; None when it is not something a node can be made of. With ``topics``
    (a choice of tool), a part of the project ("our CI", "tests") is the project itself."""
    text = _TRAILING.sub("", (raw or "").strip())
    if _NEGATION.search(text):
        return None  # "Don't switch to pnpm" states no claim (and "Don't" is nobody)
    if not text or _PROJECT_SUBJECTS.match(text) or (topics and _TOPIC_SUBJECT.match(text)):
        return PROJECT, "project"
    if _USER_SUBJECTS.match(text):
        return USER, "person"
    text = _ARTICLES.sub("", text)
    words = text.split()
    if not words or len(words) > 4 or not all(w[:1].isupper() or w[:1].isdigit() for w in words):
        return None  # a lower-case clause ("the build sometimes", "let us") is not a name
    return text, None


_CODEISH = re.compile(r"[A-Z0-9.+#@/-]")


def _object(raw: str, *, known_only: bool, max_words: int = 2, loose: bool = False) -> str | None:
    """The object's name: a known entity wherever it appears, else a short name-like phrase (unless known_only)."""
    text = _ARTICLES.sub("", _TRAILING.sub("", raw.strip()))
    if not text:
        return None
    words = text.split()
    known = lexicon.find_all(words)
    if known:
        return known[0][2].name
    if known_only or len(words) > max_words:
        return None
    if len(words) > 1 and not loose and not _CODEISH.search(text):
        return None  # "too much memory" is not a thing that is used; "GitHub Pages" is
    return text


# Chinese shapes. Tool names in Chinese text are Latin tokens ("改用 pnpm", "改用pnpm管理依赖"): the object is the
# Latin run only, so the Chinese words around it never become part of a name.
_ZH_TOK = r"[A-Za-z0-9][A-Za-z0-9.+#@/_-]*(?:\s[A-Z][A-Za-z0-9.+#@/_-]*)?"
_ZH_SUBJ = r"(?P<subj>我们|咱们|团队|项目|这个项目|本项目|我们项目|我(?!们))"
_ZH_PATTERNS: list[tuple[str, re.Pattern[str]]] = [
    # "不用 Jest 了，用 Vitest": what ended, then what replaces it.
    (
        "replace",
        re.compile(
            rf"不(?:再)?(?:用|使用)\s*(?P<old>{_ZH_TOK})\s*了?\s*[，,、]\s*(?:改|换|就|都)?(?:用|使用)\s*(?P<obj>{_ZH_TOK})"
        ),
    ),
    (
        "stop",
        re.compile(rf"(?:不再|别再|停止)(?:用|使用|依赖)\s*(?P<obj>{_ZH_TOK})|(?:停用|弃用)\s*(?P<obj2>{_ZH_TOK})"),
    ),
    ("replace", re.compile(rf"用\s*(?P<obj>{_ZH_TOK})\s*(?:替换|代替|取代)(?:掉)?\s*(?P<old>{_ZH_TOK})")),
    (
        "switch",
        re.compile(
            rf"^(?:{_ZH_SUBJ})?.*?(?:(?:把|从)\s*(?P<old>{_ZH_TOK})\s*)?"
            rf"(?:改用|换成|换用|改成|切换到|切换成|切到|迁移到|迁到|转用|替换为|替换成)\s*(?P<obj>{_ZH_TOK})"
        ),
    ),
    (
        "uses",
        re.compile(
            rf"^{_ZH_SUBJ}?[^不没别他她你，,]{{0,12}}?(?:现在|目前|一直|都|还|也|决定|就|统一|确定|以后|还是)*(?:在)?"
            rf"(?<![不没别])(?:用|使用|采用|依赖|跑在|部署在|基于)\s*(?P<obj>{_ZH_TOK})"
        ),
    ),
    # "数据库是 PostgreSQL", "测试框架选的是 Vitest": a known tool only.
    ("copula", re.compile(rf"^(?:{_ZH_SUBJ}的?)?{ZH_TOPIC}{{1,2}}\s*(?:是|为|用的是|选的是)\s*(?P<obj>{_ZH_TOK})")),
    (
        "prefers",
        re.compile(
            rf"^(?P<subj>我(?!们))(?:更|比较|很|最|非常|一直|通常)?(?:喜欢|偏好|偏爱|倾向于?)(?:用|使用)?\s*(?P<obj>{_ZH_TOK})"
        ),
    ),
]
_ZH_USER = "我"


def _read_zh(sentence: str) -> list[Claim]:
    """The Chinese shapes of one sentence: a subject of 我们/项目 (or none) is the project, 我 the user."""
    for kind, pattern in _ZH_PATTERNS:
        m = pattern.search(sentence)
        if m is None:
            continue
        groups = m.groupdict()
        raw = groups.get("obj") or groups.get("obj2") or ""
        obj = _object(raw, known_only=kind in ("switch", "replace", "stop", "copula"), max_words=2,
                      loose=kind == "prefers")
        kind = "uses" if kind == "copula" else kind
        if obj is None:
            return []
        name, subject_kind = (USER, "person") if groups.get("subj") == _ZH_USER else (PROJECT, "project")
        out: list[Claim] = []
        if kind in ("switch", "replace"):
            old = groups.get("old")
            if old and (old_name := _object(old, known_only=True)) and old_name != obj:
                out.append(
                    Claim(subject=name, subject_kind=subject_kind, predicate="uses", object=old_name, ended=True)
                )
            out.append(Claim(subject=name, subject_kind=subject_kind, predicate="uses", object=obj))
        elif kind == "stop":
            out.append(Claim(subject=name, subject_kind=subject_kind, predicate="uses", object=obj, ended=True))
        else:
            out.append(Claim(subject=name, subject_kind=subject_kind, predicate=kind, object=obj))
        return out
    return []


_TOOL_KINDS = frozenset({"switch", "replace", "stop", "instead", "uses", "copula"})
_OPENER = re.compile(
    r"^(?:(?:actually|ok(?:ay)?|so|well|then|also|alright|right|yes|yeah|hmm+|oh|and|but|going forward|from now on|"
    r"from today|starting today)\b[,!]?\s+)+",
    re.I,
)
_HAS_CJK = re.compile(r"[\u4e00-\u9fff]")


_CLAUSES = re.compile(r",\s+")


def _read_en(sentence: str) -> list[Claim]:
    """The claims of one English sentence (or clause): the first shape that matches decides."""
    claims: list[Claim] = []
    # One space between words: the shapes read a subject of any length, then blanks, optional words and blanks, so
    # a run of blanks could be split between them in cubically many ways (10 s for 10 KB of such lines).
    sentence = " ".join(sentence.split())
    sentence = _OPENER.sub("", sentence)  # "Actually, replace npm with pnpm": the opener is no subject
    for kind, pattern in _PATTERNS:
        m = pattern.match(sentence)
        if m is None:
            continue
        # Only a choice of tool makes a topic the project: "The API depends on Redis" stays about the API.
        subject = _subject(m.groupdict().get("subj") or m.groupdict().get("subj2"), topics=kind in _TOOL_KINDS)
        # Moving, going and switching "to" something is only about tools when the tool is a known one
        # ("we moved to Berlin" is not a tool change); other relations take any short name.
        obj = _object(
            m.group("obj"),
            known_only=kind in ("switch", "replace", "stop", "instead", "copula"),
            max_words=3 if kind == "prefers" else 2,
            loose=kind == "prefers",
        )
        if subject is None or obj is None:
            break
        name, subject_kind = subject
        kind = "uses" if kind == "copula" else kind
        if kind in ("switch", "replace", "instead"):
            old = m.groupdict().get("old")
            if old and (old_name := _object(old, known_only=True)):
                claims.append(
                    Claim(subject=name, subject_kind=subject_kind, predicate="uses", object=old_name, ended=True)
                )
            claims.append(Claim(subject=name, subject_kind=subject_kind, predicate="uses", object=obj))
        elif kind == "stop":
            claims.append(Claim(subject=name, subject_kind=subject_kind, predicate="uses", object=obj, ended=True))
        else:
            claims.append(Claim(subject=name, subject_kind=subject_kind, predicate=kind, object=obj))
        break
    return claims


def read_claims(text: str) -> list[Claim]:
    """Claims the common sentence shapes of ``text`` state; [] when none is clear."""
    claims: list[Claim] = []
    for sentence in _SENTENCES.split(text):
        sentence = _TRAILING.sub("", sentence.strip()).rstrip("。！；")
        if not sentence or sentence.endswith(("?", "？")) or len(sentence) > 300:
            continue
        if _HAS_CJK.search(sentence):
            claims.extend(_read_zh(sentence))
            continue
        found = _read_en(sentence)
        if not found and ", " in sentence:
            # "Let's switch to pnpm, npm is too slow": the whole sentence has no shape, its clauses may. Only
            # when the whole has none, so "use X, not Y" keeps its meaning.
            for clause in _CLAUSES.split(sentence):
                found.extend(_read_en(_TRAILING.sub("", clause.strip())))
        claims.extend(found)
    out: list[Claim] = []
    for claim in claims:
        claim = with_lexicon(claim)
        if claim not in out:
            out.append(claim)
    return out
