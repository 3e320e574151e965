"""Zero-model extraction judged by meaning (events/sentence_kind.py through events/rule_extraction.propose), on the
held-out TEST split of the labelled corpus (tests/fixtures/extraction/, split by tests/support/extraction_corpus.py):
the share of test sentences that become an event of the right type, changes that supersede the right earlier
statement, and the forms that must never become events (questions, requests, hypotheticals, reported speech,
small talk, the assistant's words) whatever sentence they wrap.

Two sets are scored. The test split is sentence-level and adversarial (plain statements without cue words, one-off
edit commands and other teams' setups as non-events): its bars are the figures the shipped model reaches there
(docs/benchmarks.md, bench/bench_extraction.py) rounded down, so a change that makes extraction worse fails here.
``holdout-2.tsv`` is fourteen project conversations written by someone who saw neither the corpus nor the model,
never trained on: the issue's acceptance bars (precision 0.90, recall 0.80, supersession 0.85) hold there.
"""

from __future__ import annotations

import json
import re

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from stratagate.blocks.source import SourceMessage
from stratagate.events import lexicon, sentence_kind
from stratagate.events.models import EventRow
from stratagate.events.rule_extraction import propose
from stratagate.text import cues
from support.extraction_corpus import Item, holdout, split

BARS = {
    "test": {None: (0.81, 0.73), "en": (0.81, 0.70), "zh": (0.80, 0.75)},
    "holdout-2": {None: (0.90, 0.80), "en": (0.90, 0.80), "zh": (0.90, 0.80)},
}
"""(precision, recall) of 'becomes an event of the right type', per set, all items and per language."""
SUPERSESSION_BAR = {"test": 0.76, "holdout-2": 0.85}
SAID = "2026-05-06T10:00:00+08:00"

TEST = split("test")
SETS = {"test": TEST, "holdout-2": holdout("holdout-2")}
TRAIN = split("train")
EVENTS = [item for item in TEST if item.label != "none"]


def _message(i: int, text: str, role: str = "user") -> SourceMessage:
    return SourceMessage(id=i, turn_seq=i, role=role, content=text, created_at=SAID)  # type: ignore[arg-type]


def _kind(text: str) -> str:
    drafts = propose([_message(1, text)], []).output.events
    return drafts[0].tags[0] if drafts else "none"


def _row(event_id: int, text: str) -> EventRow:
    drafts = propose([_message(100 + event_id, text)], []).output.events
    draft = drafts[0] if drafts else None
    return EventRow(
        id=event_id, namespace_id=1, session_id=1, origin="extraction", title=text, summary=text, narrative=text,
        quotes=[text], type=draft.type if draft else "fact", scope="project", mentioned_at=SAID,
        fingerprint=str(event_id), status="active", created_at=SAID, updated_at=SAID,
        claims=[c.model_dump(exclude_none=True) for c in draft.claims] if draft else [],
    )


def test_no_corpus_sentence_is_one_the_readme_shows():
    """The README's examples are how a user checks the extractor: the model is never trained or scored on them."""
    from pathlib import Path

    readme = re.sub(r"\s+", " ", (Path(__file__).resolve().parents[1] / "README.md").read_text("utf-8")).casefold()
    shown = [i.text for i in [*TEST, *TRAIN] if len(i.text) > 12 and i.text.rstrip(".。!！").casefold() in readme]
    assert shown == []


def test_the_split_is_fixed_and_the_model_never_saw_a_test_sentence():
    assert len(TEST) >= 130 and len(TRAIN) >= 400
    assert not {i.text for i in TEST} & {i.text for i in TRAIN}
    shipped = json.loads(sentence_kind.WEIGHTS.read_text(encoding="utf-8"))
    assert shipped["trained_on"] == len(TRAIN), "the weights are stale: run scripts/train_sentence_kinds.py"
    for lang in ("en", "zh"):
        labels = {i.label for i in TEST if i.lang == lang}
        assert labels == set(sentence_kind.LABELS)
        events = sum(1 for i in TEST if i.lang == lang and i.label != "none")
        nones = sum(1 for i in TEST if i.lang == lang and i.label == "none")
        assert 0.6 <= nones / events <= 1.6, "about as many non-events as events"


@pytest.mark.parametrize("which", ["test", "holdout-2"])
@pytest.mark.parametrize("lang", ["en", "zh", None])
def test_held_out_sentences_become_events_of_the_right_type(which: str, lang: str | None):
    items = [i for i in SETS[which] if lang is None or i.lang == lang]
    got = {i.text: _kind(i.text) for i in items}
    became = [i for i in items if got[i.text] != "none"]
    right = [i for i in became if got[i.text] == i.label]
    gold = [i for i in items if i.label != "none"]
    precision_bar, recall_bar = BARS[which][lang]
    assert len(right) / len(became) >= precision_bar
    assert len(right) / len(gold) >= recall_bar


@pytest.mark.parametrize("which", ["test", "holdout-2"])
def test_no_held_out_question_or_request_becomes_an_event(which: str):
    asks = [i.text for i in SETS[which] if i.label == "none" and sentence_kind.guard(i.text) in ("question", "request")]
    assert len(asks) >= 20
    assert [t for t in asks if _kind(t) != "none"] == []


def _changes(which: str) -> list[Item]:
    return [i for i in SETS[which] if i.label == "change" and i.old]


def _same_slot(a: str | None, b: str | None) -> bool:
    cats = [{known.category for _, _, known in lexicon.find_all(re.findall(r"[\w.+#-]+", t or ""))} for t in (a, b)]
    return bool(cats[0] & cats[1])


@pytest.mark.parametrize("which", ["test", "holdout-2"])
def test_held_out_changes_supersede_the_statement_they_replace(which: str):
    changes = _changes(which)
    right = 0
    for n, item in enumerate(changes):
        same = [c for c in changes if c.lang == item.lang and c is not item and not _same_slot(c.old, item.old)]
        distractors = [same[(n + k) % len(same)].old or "" for k in range(3)]
        related = [_row(k, text) for k, text in enumerate([item.old or "", *distractors], start=1)]
        drafts = propose([_message(1, item.text)], related).output.events
        right += bool(drafts) and drafts[0].supersedes == ["evt_1"]
    assert right / len(changes) >= SUPERSESSION_BAR[which]


# One-sentence statements only: "Drop Flask; the service moves to FastAPI" is two, and only the first is wrapped.
_SINGLE = [i for i in EVENTS if len(cues.sentences(i.text)) == 1]
_STATEMENTS = st.sampled_from([i.text for i in _SINGLE])
_EN_STATEMENTS = st.sampled_from([i.text.rstrip(".!") for i in _SINGLE if i.lang == "en"])
_ZH_STATEMENTS = st.sampled_from([i.text.rstrip("。！") for i in _SINGLE if i.lang == "zh"])


def _lower_first(text: str) -> str:
    return text[:1].lower() + text[1:] if not text[:2].isupper() else text


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.one_of(
    _STATEMENTS.map(lambda s: s.rstrip(".!。！") + "?"),
    _STATEMENTS.map(lambda s: s.rstrip(".!。！") + "？"),
    _EN_STATEMENTS.map(lambda s: "Is it true that " + _lower_first(s) + "?"),
    _EN_STATEMENTS.map(lambda s: "Remind me whether " + _lower_first(s)),
    _EN_STATEMENTS.map(lambda s: "Can you tell me if " + _lower_first(s)),
    _EN_STATEMENTS.map(lambda s: "Could you check that " + _lower_first(s)),
    _ZH_STATEMENTS.map(lambda s: s + "吗？"),
    _ZH_STATEMENTS.map(lambda s: "提醒我一下，" + s + "吗"),
    _ZH_STATEMENTS.map(lambda s: "告诉我" + s + "是什么"),
))
def test_any_question_or_request_form_of_an_event_is_no_event(text: str):
    assert _kind(text) == "none", text


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.one_of(
    _EN_STATEMENTS.map(lambda s: "What if " + _lower_first(s)),
    _EN_STATEMENTS.map(lambda s: "Maybe " + _lower_first(s)),
    _EN_STATEMENTS.map(lambda s: "My colleague said " + _lower_first(s)),
    _EN_STATEMENTS.map(lambda s: "Apparently " + _lower_first(s)),
    _ZH_STATEMENTS.map(lambda s: "如果" + s),
    _ZH_STATEMENTS.map(lambda s: "听说" + s),
    _ZH_STATEMENTS.map(lambda s: "同事说" + s),
))
def test_hypotheticals_and_reported_speech_are_no_events(text: str):
    assert _kind(text) == "none", text


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(_STATEMENTS, min_size=1, max_size=4))
def test_the_assistant_alone_never_creates_an_event(said: list[str]):
    messages = [_message(i + 1, text, "assistant") for i, text in enumerate(said)]
    assert propose(messages, []).output.events == []


def test_a_kind_the_model_hesitates_about_is_not_stored():
    """'none' is below the threshold, but decision and change split the rest almost evenly: only a model without
    the kind gate makes it an event."""
    rows = {"w:ditch": (0.0, 1.0, 0.9, 0.0, 0.0, 0.0, 0.0)}
    bias = (0.5, 0.0, 0.0, -9.0, -9.0, -9.0, -9.0)
    gated = sentence_kind.Model(sentence_kind.LABELS, bias, rows, threshold=0.6, min_kind=0.55)
    ungated = sentence_kind.Model(sentence_kind.LABELS, bias, rows, threshold=0.6)
    assert sentence_kind.judge("ditch", gated).label == "none"
    assert sentence_kind.judge("ditch", ungated).label == "decision"


@pytest.mark.parametrize("text", ["Their mobile team builds everything with Flutter.",
                                  "Our competitor's checkout runs on Magento.",
                                  "他们的后台用的是 Rails。", "友商的推送走极光。"])
def test_other_companies_systems_are_no_events(text: str):
    assert sentence_kind.guard(text) == "reported"
    assert _kind(text) == "none"


def test_a_rule_is_a_decision_tagged_rule_and_a_first_person_preference_is_the_users():
    rule = propose([_message(1, "Pushing straight to main is not allowed.")], []).output.events
    assert [(d.type, d.tags) for d in rule] == [("decision", ["rule"])]
    pref = propose([_message(1, "I like my diffs small and focused.")], []).output.events
    assert [(d.type, d.scope) for d in pref] == [("preference", "user")]


def test_an_agreeing_assistant_reply_supports_the_users_statement_but_a_question_stays_nothing():
    messages = [_message(1, "Payments go through Adyen now."),
                _message(2, "Sure, I'll update the config.", "assistant"),
                _message(3, "Remind me which region we deploy to."), _message(4, "Got it: eu-west-1.", "assistant"),
                _message(5, "We ship the invoices feature next Friday."), _message(6, "Why Friday?", "assistant")]
    drafts = propose(messages, []).output.events
    assert [(d.quotes[0], d.source_message_ids, d.confidence) for d in drafts] == [
        ("Payments go through Adyen now.", ["msg_1", "msg_2"], 0.7),
        ("We ship the invoices feature next Friday.", ["msg_5"], 0.6),
    ]


@pytest.mark.parametrize(("sentence", "kind"), [
    ("The shop database is PostgreSQL 16.", "fact"),
    ("Never push directly to main.", "rule"),
    ("Keep the README short.", "preference"),
    ("Rename this variable to userId.", "none"),
    ("We'll keep going!", "none"),
    ("Actually make that pnpm.", "change"),
    ("The demo moved from Tuesday to Thursday.", "change"),
    ("隔壁组用的是 Kafka", "none"),
    ("如果改用 pnpm", "none"),
    ("it would be nice to have dark mode", "none"),
    ("remind me what the deadline is", "none"),
])
def test_the_readme_examples_are_judged_as_the_readme_says(sentence: str, kind: str):
    """README "Without a model" names these (never trained on: see the corpus test above)."""
    assert sentence_kind.judge(sentence).label == kind
