"""The redaction pre-filter (one search for any trigger word) answers exactly as checking every word would: it
only decides whether the rules look at a window, so a miss would let a secret through."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from stratagate.safety import secrets as S

WORDS = sorted({*S._ALL_TRIGGERS, *S._KEYWORD_LITERALS, *S._ZH_LITERALS, "pass", "pw"})
PIECES = st.sampled_from(WORDS) | st.sampled_from([w[:-1] for w in WORDS if len(w) > 1]) | st.text(max_size=8)


def test_every_trigger_word_is_found_alone_and_inside_text():
    for word in WORDS:
        assert S._ANY_TRIGGER.search(word) is not None, word
        assert S._ANY_TRIGGER.search(f"xx {word}zz") is not None, word


@settings(max_examples=2000, deadline=None)
@given(st.lists(PIECES, max_size=6).map("".join))
def test_the_prefix_tree_finds_a_word_exactly_when_one_is_in_the_text(text: str):
    assert (S._ANY_TRIGGER.search(text) is not None) == any(w in text for w in WORDS)


def test_a_word_that_extends_another_is_found_through_the_shorter():
    pattern = S.re.compile(S._any_of({"clou", "cloudant", "pass", "passwd", "ab"}))
    assert pattern.pattern == "(?:ab|clou|pass)"
    assert [pattern.search(t) is not None for t in ("cloudant", "passw", "a b", "xab")] == [True, True, False, True]


RUN_PIECES = st.text(alphabet="aZ9+/_-", min_size=1, max_size=25) | st.text(max_size=4)


@settings(max_examples=2000, deadline=None)
@given(st.lists(RUN_PIECES, max_size=6).map("".join), st.integers(0, 40), st.integers(0, 120))
def test_the_long_run_check_answers_as_the_pattern(text: str, lo: int, hi: int):
    """Runs of 19, 20 and more run characters, broken by anything (non-ASCII too), in any window of the text."""
    assert S._has_long_run(text, lo, hi) == (S._LONG_RUN.search(text, lo, hi) is not None)
