"""The one rendering rule (safety/inert.py): properties over any text, and the committed injection corpus."""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from stratagate.safety.inert import BAR, Named, heading, inert, inert_tree, quote
from stratagate.tokens import encode
from support.inert_checks import SPECIAL_IDS, check_inert, invisible

FIXTURES = Path(__file__).parent / "fixtures"
PAYLOADS: list[str] = json.loads((FIXTURES / "injection_corpus.json").read_text())["payloads"]

# Text rich in what the rule handles: markup, role words, special-token pieces, invisible and bidi characters.
ATOMS = st.sampled_from(
    [
        "<", ">", "&", "&amp;", "&lt;", "&#60;", "\n", "\r", "\r\n", "\t", " ", "\u2028", "\u2029", "\x85", "\x00",
        "\u200b", "\u200d", "\u202e", "\u2066", "\ufeff", "\u00ad", "\U000E0041", "\u3164", "｜", "▁", "<｜", "｜>",
        "User", "System", "ASSISTANT", "human", ":", "：", "#", "###", ">", "**", "[", "]", "INST", "im_start", "|",
        "<|im_start|>", "<｜User｜>", "<｜end▁of▁sentence｜>", "｜DSML｜", "<think>", "</stratagate-memory>", "＜",
        "password", "=", "sk-", "x", "é", "中文", "\ud800",
    ]
)
TEXT = st.one_of(st.text(), st.lists(st.one_of(ATOMS, st.text(max_size=3)), max_size=30).map("".join))


@settings(max_examples=400, deadline=None)
@given(TEXT)
def test_rule_is_idempotent_and_leaves_nothing_active(text: str):
    out = inert(text)
    assert inert(out) == out
    check_inert(out)
    sealed = inert(text, redacted=True)  # the form stored block views use: everything but the redaction pass
    assert inert(sealed, redacted=True) == sealed
    check_inert(sealed)
    line = inert(text, inline=True)
    assert inert(line, inline=True) == line
    bare = re.sub(r"\[secret:[a-z0-9-]+#[0-9a-f]{4}\]", "", line)
    assert "\n" not in line and "[" not in bare and "]" not in bare and '"' not in line
    check_inert(line, lines=False)


@settings(max_examples=200, deadline=None)
@given(TEXT)
def test_no_special_token_reaches_the_tokenizer(text: str):
    raw = encode(text)
    ids = encode(inert(text))
    assert not set(SPECIAL_IDS.values()) & set(ids), (text, [i for i in raw if i in SPECIAL_IDS.values()])


@settings(max_examples=200, deadline=None)
@given(TEXT)
def test_quote_puts_every_line_behind_the_bar(text: str):
    for line in quote(text).split("\n"):
        assert line.startswith(BAR.rstrip())


@settings(max_examples=200, deadline=None)
@given(st.lists(TEXT, min_size=1, max_size=4))
def test_a_heading_cannot_be_forged_from_its_fields(fields: list[str]):
    out = heading("evt_1", *fields[:-1], Named("n" + fields[-1]))
    assert out.startswith("[") and out.endswith("]") and "\n" not in out
    bare = re.sub(r"\[secret:[a-z0-9-]+#[0-9a-f]{4}\]", "", out)
    assert bare.count("[") == 1 and bare.count("]") == 1
    # A Named field is exactly one quoted span at the end: nothing inside can add a label outside the quotes.
    assert out.endswith('"]') and out.count('"') == 2


@settings(max_examples=100, deadline=None)
@given(st.recursive(st.one_of(st.none(), st.booleans(), st.integers(), TEXT),
                    lambda kids: st.one_of(st.lists(kids, max_size=3), st.dictionaries(TEXT, kids, max_size=3)),
                    max_leaves=12))
def test_every_string_of_a_tool_result_is_rendered(value):
    def walk(v):
        if isinstance(v, str):
            check_inert(v)
        elif isinstance(v, dict):
            for k, item in v.items():
                check_inert(k)
                walk(item)
        elif isinstance(v, list):
            for item in v:
                walk(item)

    out = inert_tree(value)
    walk(out)
    assert inert_tree(out) == out


def test_every_format_and_control_character_is_removed():
    """Across all of Unicode, not only the ranges the rule's table was built from."""
    kept = [
        cp for cp in range(sys.maxunicode + 1)
        if not 0xD800 <= cp <= 0xDFFF and invisible(chr(cp)) and chr(cp) not in "\r\x0b\x0c\x85"
        and chr(cp) in inert("a" + chr(cp) + "b")
    ]
    assert kept == []


@pytest.mark.parametrize("payload", PAYLOADS, ids=range(len(PAYLOADS)))
def test_corpus_payloads_come_out_inert(payload: str):
    for out, lines in ((inert(payload), True), (quote(payload), True), (inert(payload, inline=True), False)):
        check_inert(out, lines)
        assert "stratagate-memory>" not in out and "<stratagate" not in out
    wrapped = "<stratagate-memory>\n" + quote(payload) + "\n</stratagate-memory>"
    assert wrapped.count("<stratagate-memory>") == 1 and wrapped.count("</stratagate-memory>") == 1


def test_corpus_is_large_enough():
    assert len(PAYLOADS) >= 40


def test_ordinary_text_is_unchanged():
    for text in ("We switched from npm to pnpm on 2026-05-06.", "用 pnpm，不要用 npm。", "max_tokens: 4096",
                 "- User message number 7", "the user: said so", "a | b", "path/to/file.py:12"):
        assert inert(text) == text
