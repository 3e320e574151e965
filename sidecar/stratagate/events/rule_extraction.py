"""The rule proposer: a block's durable events found by the cue table (text/cues.py), with no model call.

It proposes exactly what the model would, an ``ExtractionOutput`` of ``EventDraft``s, and those drafts go through
the same checks and the same admission as the model's (events/extraction.py ``_check`` and ``_store``). Rules:

- Only the user's messages are read. The user is who decides, prefers and plans; an assistant's sentence is
  mostly an echo or a proposal ("I'll switch it to pnpm?"), and tool results are machine output. Both stay in the
  block (L5) as evidence, they just do not become events by rule. An assistant reply that opens by agreeing
  ("Sure, …", "好的") supports the user's statements before it: it is cited as a second source and the confidence
  rises, but it never makes an event alone.
- Which sentences are events, and of which kind, is judged by meaning (events/sentence_kind.py: guards against
  questions, requests, hypotheticals and reported speech, then a small linear model over the sentence's words,
  with the cue table's verdict as one of its features). One such sentence is one draft: its quote is the sentence
  exactly as written, its message the one it is in, its type the kind (a rule is stored as a decision tagged
  ``rule``), its scope the project's unless it is a first-person preference (then the user's), its time wording
  the one ``events/temporal.py`` finds in the sentence, verbatim (code resolves it; a plan is ``planned``), its
  claims ``events/claims.read_claims`` of the sentence (not for negated statements: "we don't use Jest" ends
  nothing by itself, it disputes).
- Relations, only to the related events the handler looked up or to an earlier draft of this block:
  a change ("switch to pnpm", "改用 pnpm", "replace npm with pnpm", "no longer use npm") supersedes the older event
  that holds the same claim slot (a FUNCTIONAL lexicon category such as the package manager) with another value,
  or the same subject and predicate with another object of the same lexicon category, or the value it says ended.
  A statement that is not phrased as a change but contradicts an older one (the same slot with another value, or
  the same tool used and not used) conflicts with it instead: both become disputed. A change whose claims name no
  such slot ("the demo moved from Tuesday to Thursday", "actually make that pnpm") supersedes the older statement
  it shares the most topic words with (search terms and tool categories, at least ``TOPIC_OVERLAP`` of them), if
  one does.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from datetime import UTC, datetime

from stratagate.blocks.source import SourceMessage
from stratagate.events import lexicon
from stratagate.events.claims import Claim, read_claims
from stratagate.events.extraction_model import MAX_EVENTS, MAX_RELATED, EventDraft, ExtractionOutput
from stratagate.events.models import EventRow
from stratagate.events.sentence_kind import Kind, event_sentences
from stratagate.events.temporal import resolve
from stratagate.text import cues
from stratagate.text.terms import terms
from stratagate.timeutil import parse_time

TITLE_CHARS = 80
SUMMARY_CHARS = 1000
CONFIDENCE = 0.6
"""A judgement by a small model over the sentence's words: lower than the model's default 0.8."""
CONFIRMED_CONFIDENCE = 0.7
"""When the assistant's reply agrees with the statement."""

_TRAILING = ".。!！;；,，:： "
TOPIC_OVERLAP = 2
"""Shared topic words (or one shared tool category) a change needs with an older statement to supersede it when
their claims do not say so."""
CHANGE_SUPPORT = 0.25
"""A decision, plan or fact the sentence model also finds this likely to be a change ("let's change the ORM to
Prisma") replaces what it names, as a change does."""


@dataclass(frozen=True)
class Stance:
    """What a statement says, for comparing it with another: its claims, the tools it names, its polarity."""

    claims: tuple[Claim, ...]
    tools: frozenset[str]
    change: bool
    negative: bool
    topic: frozenset[str] = frozenset()


@dataclass
class RuleProposal:
    """The drafts, plus the relations between drafts of this block (index → earlier indexes): the handler admits a
    draft after the ones it names and passes their admitted ids as ``supersedes`` / ``conflicts_with``."""

    output: ExtractionOutput
    supersedes_drafts: dict[int, list[int]] = field(default_factory=dict)
    conflicts_drafts: dict[int, list[int]] = field(default_factory=dict)


# Latin words only ("改用pnpm管理" names pnpm): "pnpm." is pnpm, "node.js" stays whole.
_WORDS = re.compile(r"[A-Za-z0-9][A-Za-z0-9_+#-]*(?:\.[A-Za-z0-9_+#-]+)*")


def _tools(text: str) -> frozenset[str]:
    words = _WORDS.findall(text)
    return frozenset(known.name for _, _, known in lexicon.find_all(words) if known.kind == "tool")


def stance_of(text: str, claims: list[Claim] | None = None, cue: cues.Cue | None = None) -> Stance:
    cue = cue if cue is not None else cues.classify(text.strip())
    negative = cue is not None and cue.polarity == "negative"
    change = cue is not None and cue.type == "change"
    if claims is None:
        claims = [] if negative and not change else read_claims(text)
    return Stance(tuple(claims), _tools(text), change, negative, topic_of(text))


# Both statements name a day or a time ("the kickoff is on the 2nd" → "pushed to the 9th"): one shared topic word.
_DATED = re.compile(
    r"\b(?:on|to|by|until|the)\s+\d{1,2}(?:st|nd|rd|th)\b|\d{1,2}\s*[号日]|(?:周|星期|礼拜)[一二三四五六日天]"
)
_NOON = datetime(2026, 1, 1, 12, tzinfo=UTC)


def topic_of(text: str) -> frozenset[str]:
    """What a statement is about, for matching a change to the statement it replaces: its search terms and the
    categories of the tools it names (prefixed, so 'package manager' counts once however it is worded)."""
    cats = {f"cat:{known.category}" for _, _, known in lexicon.find_all(_WORDS.findall(text))}
    when = {"time:"} if _DATED.search(text) or resolve(text, _NOON).resolved else set()
    return frozenset(terms(text)) | frozenset(cats) | frozenset(when)


def overlap(new: Stance, old: Stance) -> int:
    """How strongly a change is about an older statement: shared topic words, a shared tool category counting as
    many as needed."""
    shared = new.topic & old.topic
    if any(t.startswith("cat:") for t in shared):
        return TOPIC_OVERLAP + len(shared)
    return len(shared)


def _event_stance(ev: EventRow) -> Stance:
    claims = []
    for raw in ev.claims:
        try:
            claims.append(Claim.model_validate(raw))
        except ValueError:
            continue
    return stance_of(ev.summary, claims or None)


def _category(name: str | None) -> str | None:
    known = lexicon.lookup(name) if name else None
    return known.category if known else None


def _replaces(new: Claim, old: Claim) -> bool:
    """``new`` holds the place ``old`` held with another value: the same slot, or the same subject and predicate
    with another object of the same known category."""
    if new.subject != old.subject or old.ended or new.ended:
        return False
    if new.slot and old.slot and new.slot == old.slot:
        return (new.object or new.value) != (old.object or old.value)
    if new.predicate != old.predicate or new.object is None or old.object is None or new.object == old.object:
        return False
    cat = _category(new.object)
    return cat is not None and cat == _category(old.object)


def _ends(new: Claim, old: Claim) -> bool:
    """``new`` says that ``old`` stopped being true."""
    return (new.ended and not old.ended and new.subject == old.subject and new.predicate == old.predicate
            and new.object is not None and new.object == old.object)


def relation(new: Stance, old: Stance) -> str | None:
    """'supersedes', 'conflicts_with' or None: how a newer statement relates to an older one."""
    if new.change:
        for n in new.claims:
            for o in old.claims:
                if _ends(n, o) or _replaces(n, o):
                    return "supersedes"
        return None
    for n in new.claims:
        for o in old.claims:
            if _replaces(n, o):
                return "conflicts_with"
    # Used and not used: "we use Jest" against "we don't use Jest", in either order.
    if new.negative != old.negative and not old.change and new.tools & old.tools:
        if (old.claims or old.negative) and (new.claims or new.negative):
            return "conflicts_with"
    return None


def _clip(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"


def _title(sentence: str) -> str:
    """The sentence itself when short (so recall shows it once, not as title and summary), else its head."""
    return sentence if len(sentence) <= TITLE_CHARS else _clip(sentence.rstrip(_TRAILING) or sentence, TITLE_CHARS)


def _time_wording(sentence: str, said: datetime) -> str | None:
    found = resolve(sentence, said)
    return found.original if found.resolved else None


def _stance_of_kind(text: str, kind: Kind) -> Stance:
    cue = cues.classify(text)
    change = kind.label == "change" or kind.change_probability >= CHANGE_SUPPORT
    negative = kind.negative or (cue is not None and cue.polarity == "negative")
    claims = [] if negative and not change else read_claims(text)
    return Stance(tuple(claims), _tools(text), change, negative, topic_of(text))


def draft_of(message: SourceMessage, sentence: cues.Sentence, kind: Kind) -> tuple[EventDraft, Stance]:
    """One event sentence of a user message as a draft, and its stance for the relations."""
    said = parse_time(message.created_at)
    stance = _stance_of_kind(sentence.text, kind)
    time_original = _time_wording(sentence.text, said)
    event_type = "decision" if kind.label == "rule" else kind.label
    draft = EventDraft(
        title=_title(sentence.text),
        summary=_clip(sentence.text, SUMMARY_CHARS),
        quotes=[sentence.text],
        source_message_ids=[message.ref],
        type=event_type,
        scope=kind.scope,
        criticality="preference" if kind.label == "preference" else "routine",
        confidence=CONFIDENCE,
        time_original=time_original,
        time_status="planned" if kind.label == "plan" else "unknown",
        claims=[c.model_dump(exclude_none=True) for c in stance.claims],
        tags=[kind.label],
    )
    return draft, stance


def _by_topic(
    stance: Stance, older: list[tuple[EventRow, Stance]], replaced_events: set[int], earlier: list[Stance],
    replaced_drafts: set[int],
) -> EventRow | int | None:
    """The older statement (a related event, or the index of an earlier draft) a change is most about, when its
    claims named none: the most shared topic words, at least TOPIC_OVERLAP, the newest on a tie."""
    best: tuple[int, int] = (TOPIC_OVERLAP - 1, -1)
    found: EventRow | int | None = None
    candidates: list[tuple[EventRow | int, Stance]] = [(ev, old) for ev, old in older if ev.id not in replaced_events]
    candidates += [(j, old) for j, old in enumerate(earlier) if j not in replaced_drafts]
    for order, (what, old) in enumerate(candidates):
        score = (overlap(stance, old), order)
        if score > best:
            best, found = score, what
    return found


# The assistant's reply agreeing with what the user just said: "Sure, …", "Done.", "Got it", "好的", "明白", "收到".
_AGREES = re.compile(
    r"^\W*(?:sure|ok(?:ay)?|done|got it|noted|will do|understood|agreed|sounds good|of course|absolutely|yes|"
    r"great|perfect|alright|all right|right)\b|^\W*(?:好的|好|行|明白|收到|了解|知道了|没问题|可以|已)",
    re.I,
)


def _confirmation(after: list[SourceMessage]) -> SourceMessage | None:
    """The assistant's message answering a user message, when it opens by agreeing. It supports the user's
    statements (a second source, a higher confidence) but never makes an event by itself."""
    for m in after:
        if m.role == "user":
            return None
        if m.role == "assistant":
            return m if _AGREES.match(m.content) else None
    return None


def propose(messages: list[SourceMessage], related: list[EventRow]) -> RuleProposal:
    """The rule drafts of a block's messages (at most MAX_EVENTS, in message order), with their relations."""
    drafts: list[EventDraft] = []
    stances: list[Stance] = []
    seen: set[str] = set()
    for i, m in enumerate(messages):
        if m.role != "user":
            continue
        confirmed = _confirmation(messages[i + 1 :])
        for sentence, kind in event_sentences(m.content):
            key = " ".join(sentence.text.casefold().split()).rstrip(_TRAILING)
            if key in seen:
                continue  # said twice in one block: one event (admission would merge it anyway)
            seen.add(key)
            draft, stance = draft_of(m, sentence, kind)
            if confirmed is not None:
                draft = draft.model_copy(update={"source_message_ids": [m.ref, confirmed.ref],
                                                 "confidence": CONFIRMED_CONFIDENCE})
            drafts.append(draft)
            stances.append(stance)
    drafts, stances = drafts[-MAX_EVENTS:], stances[-MAX_EVENTS:]  # the newest statements matter most
    proposal = RuleProposal(ExtractionOutput(events=[]))
    older = [(ev, _event_stance(ev)) for ev in sorted(related, key=lambda ev: ev.id)]
    out: list[EventDraft] = []
    replaced_events: set[int] = set()  # related events an earlier draft of this block already supersedes
    replaced_drafts: set[int] = set()
    for i, (draft, stance) in enumerate(zip(drafts, stances, strict=True)):
        sup: list[str] = []
        con: list[str] = []
        for ev, old in older:
            rel = None if ev.id in replaced_events else relation(stance, old)
            if rel == "supersedes":
                sup.append(ev.public_id)
                replaced_events.add(ev.id)
            elif rel == "conflicts_with":
                con.append(ev.public_id)
        for j in range(i):
            rel = None if j in replaced_drafts else relation(stance, stances[j])
            if rel == "supersedes":
                proposal.supersedes_drafts.setdefault(i, []).append(j)
                replaced_drafts.add(j)
            elif rel == "conflicts_with":
                proposal.conflicts_drafts.setdefault(i, []).append(j)
        if stance.change and not sup and i not in proposal.supersedes_drafts:
            target = _by_topic(stance, older, replaced_events, stances[:i], replaced_drafts)
            if isinstance(target, EventRow):
                sup.append(target.public_id)
                replaced_events.add(target.id)
            elif target is not None:
                proposal.supersedes_drafts[i] = [target]
                replaced_drafts.add(target)
        out.append(draft.model_copy(update={"supersedes": sup[:MAX_RELATED], "conflicts_with": con[:MAX_RELATED]}))
    proposal.output = ExtractionOutput(events=out)
    return proposal
