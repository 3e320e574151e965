"""Regenerate sidecar/stratagate/text/word_frequency.tsv: how common each search term is in everyday language.

Activation's relevance floor (stratagate/text/specificity.py) counts a matched term by how specific it is:
"readme", "redis", "prototype" say what a prompt is about; "keep", "run", "main" match half of any memory. The
measure is a background frequency from general text, not from the memory, so the floor does not move as memory grows.

Source: wordfreq 3.1.1 (Robyn Speer; CC-BY-SA 4.0 data: Wikipedia, subtitles, news, books, web, Twitter, Reddit),
English and Chinese lists. Each row is a term as `stratagate.text.terms` writes it (a Snowball stem; a CJK word of one
or two characters, which is what Chinese terms are) and its Zipf frequency (log10 of uses per billion words), the
highest among the words that share the term ("product" holds "production" 5.1). Only terms at least as common as
``MIN_ZIPF`` are listed: rarer ones are fully specific anyway.

    pip install --target /tmp/wf wordfreq==3.1.1
    PYTHONPATH=/tmp/wf:sidecar .venv/bin/python scripts/make_word_frequency.py
"""

from __future__ import annotations

import math
from pathlib import Path

from snowballstemmer.english_stemmer import EnglishStemmer
from wordfreq import get_frequency_dict  # type: ignore[import-not-found]

from stratagate.text.terms import terms

MIN_ZIPF = 4.0
_STEM = EnglishStemmer()
OUT = Path(__file__).resolve().parents[1] / "sidecar" / "stratagate" / "text" / "word_frequency.tsv"


def _zipf(freq: float) -> float:
    return math.log10(freq) + 9


def main() -> None:
    best: dict[str, float] = {}
    for lang in ("en", "zh"):
        for word, freq in get_frequency_dict(lang).items():
            zipf = _zipf(freq)
            if zipf < MIN_ZIPF:
                continue
            found = terms(word, dates=False)
            if not found and word.isascii() and word.isalpha():
                found = [_STEM.stemWord(word)]  # a stopword ("own") still counts for its stem ("owns" → "own")
            if len(found) != 1:  # stopwords (no term) and words that are several terms (longer CJK words)
                continue
            term = found[0]
            best[term] = max(best.get(term, 0.0), zipf)
    rows = sorted(best.items(), key=lambda kv: (-kv[1], kv[0]))
    # No header: stratagate/text/specificity.py reads the file in one whitespace split.
    OUT.write_text("".join(f"{t}\t{z:.2f}\n" for t, z in rows), encoding="utf-8")
    print(f"{len(rows)} terms → {OUT}")


if __name__ == "__main__":
    main()
