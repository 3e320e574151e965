"""The tokenizer's C stemmer (PyStemmer) and its ASCII fast path produce exactly the terms the pure-Python Snowball
stemmer and the word-by-word tokenizer produced: every index (message_fts, event_fts, graph_fts) and every search
test depends on the terms, and rows written before the change keep theirs."""

from __future__ import annotations

import re
from functools import cache
from pathlib import Path

import Stemmer
from hypothesis import given, settings
from hypothesis import strategies as st
from snowballstemmer.english_stemmer import EnglishStemmer

from stratagate.text import terms as T

REPO = Path(__file__).resolve().parents[1]
PURE = EnglishStemmer()


@cache
def corpus_texts() -> list[str]:
    """Paragraphs of the project's own prose, fixtures and code: tens of thousands of distinct words, mixed
    scripts (the Chinese fixtures), apostrophes, dates and identifiers."""
    paths = [REPO / "README.md", *sorted((REPO / "docs").rglob("*.md"))]
    paths += sorted((REPO / "tests").rglob("*")) + sorted((REPO / "sidecar").rglob("*.py"))
    texts: list[str] = []
    for path in paths:
        if path.is_file() and path.suffix in {".md", ".tsv", ".txt", ".json", ".jsonl", ".py"}:
            texts.extend(path.read_text(encoding="utf-8", errors="replace").split("\n\n"))
    return texts


def vocabulary() -> list[str]:
    frequent = (REPO / "sidecar/stratagate/text/word_frequency.tsv").read_text(encoding="utf-8")
    words = {line.split("\t")[0] for line in frequent.split("\n")}
    for text in corpus_texts():
        words.update(re.findall(r"[a-z]+", text.lower()))
    return sorted(w for w in words if w)


def test_the_c_stemmer_gives_the_pure_python_stems_on_a_large_vocabulary():
    words = vocabulary()
    assert len(words) > 15_000
    c = Stemmer.Stemmer("english")
    assert [w for w in words if c.stemWord(w) != PURE.stemWord(w)] == []


@settings(max_examples=1500, deadline=None)
@given(st.text(alphabet="abcdefghijklmnopqrstuvwxyz'", min_size=1, max_size=24))
def test_the_c_stemmer_agrees_on_any_ascii_word(word: str):
    assert T._snowball().stemWord(word) == PURE.stemWord(word)


@cache
def reference_latin(word: str, stem: T.Stemming) -> str | None:
    """The term of one word as the tokenizer made it before (pure-Python stems)."""
    if "'" in word or "’" in word:
        word = word.replace("’", "'")
        if word.endswith("'s"):
            word = word[:-2]
        word = word.replace("'", "")
    if not word or word in T.STOPWORDS_EN or len(word) > T.MAX_WORD:
        return None
    if stem != "none" and word.isascii() and word.isalpha():
        return PURE.stemWord(word) if stem == "snowball" else T._stem_plural(word)
    return word


def reference_words(text: str, stem: T.Stemming) -> list[str]:
    """The word-by-word tokenizer before the ASCII fast path."""
    out: list[str] = []
    for match in T._WORD.finditer(text.lower()):
        word = match.group(0)
        if word.isascii() or T._CJK.search(word) is None:
            if (term := reference_latin(word, stem)) is not None:
                out.append(term)
            continue
        pos = 0
        for cjk in T._CJK.finditer(word):
            if (latin := reference_latin(word[pos : cjk.start()], stem)) is not None:
                out.append(latin)
            out.extend(T._cjk_terms(cjk.group(0)))
            pos = cjk.end()
        if (tail := reference_latin(word[pos:], stem)) is not None:
            out.append(tail)
    return out


def test_terms_are_unchanged_on_the_projects_texts():
    texts = corpus_texts()
    assert len(texts) > 1_000 and any(not t.isascii() for t in texts)
    for stem in ("snowball", "plural", "none"):
        changed = [t[:80] for t in texts if _words(t, stem) != reference_words(t, stem)]
        assert changed == [], stem


def _words(text: str, stem: T.Stemming) -> list[str]:
    out: list[str] = []
    T._words(text, stem, out)
    return out


@settings(max_examples=800, deadline=None)
@given(
    st.lists(
        # the Kelvin sign lower-cases to ASCII "k"; the others are non-ASCII letters, CJK runs and punctuation
        st.sampled_from([*"abcXYZ019 _'’-.\n\tK", "\u212a", "é", "ß", "İ", "中文", "插件", "の", "한", "—"]),
        max_size=60,
    ).map("".join)
)
def test_terms_are_unchanged_on_any_text(text: str):
    for stem in ("snowball", "plural", "none"):
        assert _words(text, stem) == reference_words(text, stem)


def test_a_full_word_cache_is_emptied_and_still_answers(monkeypatch):
    monkeypatch.setattr(T, "_ASCII_TERMS_MAX", 3)
    monkeypatch.setitem(T._ASCII_TERMS, "snowball", {})
    texts = ["painting painted paints deploys", "retries retried cached caches", "the painting retried"]
    for text in texts * 2:
        assert _words(text, "snowball") == reference_words(text, "snowball")
        assert len(T._ASCII_TERMS["snowball"]) <= 3 + len(text.split())  # emptied once over the limit


@settings(max_examples=1500, deadline=None)
@given(st.text(alphabet=st.characters(max_codepoint=127), max_size=80) | st.text("ab1' _-.\n\x1c", max_size=40))
def test_the_ascii_split_finds_the_words_the_pattern_finds(text: str):
    lowered = text.lower()
    assert T._ascii_split(lowered) == T._ASCII_WORD.findall(lowered) == T._WORD.findall(lowered)
