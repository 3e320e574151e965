"""The cue table (text/cues.py), row by row: every row matches its own examples (and classify picks that row:
the table order is right) and none of its counterexamples; the sentence splitter keeps offsets verbatim."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from stratagate.text import cues

ROWS = {row.id: row for row in cues.CUES}


def test_the_table_covers_both_languages_and_every_type():
    for lang in ("en", "zh"):
        assert {r.type for r in cues.CUES if r.lang == lang} == {"decision", "preference", "plan", "change", "fact"}
    assert len(ROWS) == len(cues.CUES), "row ids are unique"
    assert {r.polarity for r in cues.CUES} == {"positive", "negative"}
    assert all(r.scope == "user" for r in cues.CUES if r.id.endswith(("preference_user", "preference_negative")))


@pytest.mark.parametrize(
    ("row_id", "example"), [(r.id, e) for r in cues.CUES for e in r.examples], ids=lambda v: str(v)[:40]
)
def test_every_example_is_classified_by_its_own_row(row_id: str, example: str):
    cue = cues.classify(example)
    assert cue is not None and cue.row == row_id
    row = ROWS[row_id]
    assert (cue.type, cue.scope, cue.polarity, cue.lang) == (row.type, row.scope, row.polarity, row.lang)


@pytest.mark.parametrize(
    ("row_id", "counter"), [(r.id, e) for r in cues.CUES for e in r.counterexamples], ids=lambda v: str(v)[:40]
)
def test_no_counterexample_is_taken_by_its_row(row_id: str, counter: str):
    cue = cues.classify(counter)
    assert cue is None or cue.row != row_id


@pytest.mark.parametrize(
    "question", ["Should we switch to pnpm?", "Do we use npm?", "要不要改用 pnpm？", "我们是否用 npm", "我们用 npm 吗"]
)
def test_questions_are_never_cues(question: str):
    assert cues.classify(question) is None


def test_a_request_phrased_as_a_question_is_a_cue():
    assert cues.key_kind("Could you switch the project to pnpm?") == "change"
    assert cues.is_key_sentence("请改用 pnpm 吗？") and not cues.is_key_sentence("Shall we switch to pnpm?")


def test_sentences_split_english_and_chinese_with_verbatim_offsets():
    text = "We use npm. Let's switch to pnpm!\n- We need to finish v1.2 next week.\n我们用 npm。改用 pnpm！下周完成原型"
    found = cues.sentences(text)
    assert [s.text for s in found] == [
        "We use npm.", "Let's switch to pnpm!", "We need to finish v1.2 next week.", "我们用 npm。", "改用 pnpm！",
        "下周完成原型",
    ]
    assert all(text[s.start:s.end] == s.text for s in found)
    assert [c.type for _, c in cues.cue_sentences(text)] == ["fact", "change", "plan", "fact", "change", "plan"]


def test_language():
    assert cues.language("我们用 npm 管理依赖") == "zh" and cues.language("We use npm, 好") == "en"


def test_code_fences_are_not_sentences():
    text = "We use npm.\n```\nnpm install; we use yarn.\n```\nLet's switch to pnpm."
    assert cues.sentences(text) == ["We use npm.", "Let's switch to pnpm."]


@given(st.text(max_size=400))
def test_arbitrary_text_splits_into_verbatim_sentences(text: str):
    for s in cues.sentences(text):
        assert text[s.start:s.end] == s.text and s.text.strip() == s.text and s.text
        cues.classify(s.text)
