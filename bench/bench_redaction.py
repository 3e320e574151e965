"""Precision and recall of secret redaction: false positives per MB over real code nobody here wrote, recall per kind.

Run from the repo root:  .venv/bin/python bench/bench_redaction.py [--show 40] [--only WORD]

Precision: each file goes through ``redact_text`` whole, as a tool result would; each line it changed is a false
positive unless it holds a literal credential (the benchmark lists them all, so a reader can judge). The sources:
every module of this machine's Python standard library (not its test suites or site-packages); every JS file of
playwright-core in node_modules (minified bundles included); every JS and TypeScript file of the pinned DSH's installed
packages (when scripts/install-dsh.sh has run); other languages as the machine's packages install them (C headers,
Perl modules, the JDK's network and security sources, PostgreSQL's SQL, /etc's configuration, /usr/bin's shell
scripts, dpkg's and apt's logs); and, when present, the open-source corpus kept out of git in
~/.cache/stratagate/precision/<language>/<owner>/<repo>/<path> (docs/benchmarks.md names its repositories and
commits), its test files counted apart from its sources (tests hold literal example credentials on purpose).
Recall: each entry of tests/fixtures/secrets_corpus.json in each of its forms (in prose, bare, in a JSON tree), plus
the prose credentials and code literals of tests/test_secrets.py: caught means the secret is gone and a placeholder
of its kind is there. The test suite runs a fixed sample of the same (tests/test_redaction_precision.py); this runs
all of it.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import time
from collections import defaultdict
from collections.abc import Iterator
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tests"))
sys.path.insert(0, str(REPO / "sidecar"))

from stratagate.safety.secrets import redact_text, redact_value  # noqa: E402
from support.precision_sample import (  # noqa: E402
    STDLIB,
    cached_corpus,
    changed_lines,
    dsh_packages,
    machine_corpus,
    read,
    read_entry,
    whole_corpus,
)

_TEST_PATH = re.compile(r"(?:^|/)(?:tests?|testdata|test-support|testing)/|_test\.go$|Tests?\.java$|\.test\.[jt]s$")


def sources() -> Iterator[tuple[str, str, str | None]]:
    """(source, name, text) of every file of the corpus; text is None when unreadable or not UTF-8."""
    for path in whole_corpus():
        yield ("Python stdlib" if path.is_relative_to(STDLIB) else "playwright-core JS"), str(path), read(path)
    for path in dsh_packages():
        typed = path.suffix in (".ts", ".mts", ".cts")
        yield ("DSH packages TS" if typed else "DSH packages JS"), str(path), read(path)
    for lang, name in machine_corpus():
        yield f"{lang} (machine)", name, read_entry(name)
    for lang, path in cached_corpus():
        part = "tests" if _TEST_PATH.search(path.as_posix()) else "source"
        yield f"{lang} ({part}, cache)", str(path), read(path)


def precision(show: int, only: str) -> None:
    files = altered = lines = 0
    size = 0
    by_source: dict[str, list[int]] = defaultdict(lambda: [0, 0, 0, 0])  # files, bytes, altered files, lines
    started = time.process_time()
    examples: list[str] = []
    for source, name, text in sources():
        if text is None or only not in source:
            continue
        nbytes = len(text.encode("utf-8"))
        files, size = files + 1, size + nbytes
        by_source[source][0] += 1
        by_source[source][1] += nbytes
        out = redact_text(text)
        if out == text:
            continue
        changed = changed_lines(text, out, limit=10**6)
        altered, lines = altered + 1, lines + len(changed)
        by_source[source][2] += 1
        by_source[source][3] += len(changed)
        examples.extend(f"{source} {name.rsplit('/', 1)[-1]}: {c}" for c in changed)
    cpu = time.process_time() - started
    print(f"precision: {files} files, {size / 1e6:.2f} MB, {altered} altered files, {lines} altered lines, "
          f"{lines / (size / 1e6):.2f} altered lines per MB, {size / 1e6 / cpu:.1f} MB/s CPU")
    print("| source | files | MB | altered files | altered lines | per MB |")
    print("|---|---:|---:|---:|---:|---:|")
    for source, (n, b, a, lc) in by_source.items():
        print(f"| {source} | {n} | {b / 1e6:.2f} | {a} | {lc} | {lc / (b / 1e6):.2f} |")
    for line in examples[:show]:
        print("  ", line[:220])


def recall() -> None:
    from test_secrets import CODE_LITERALS, PROSE_CREDENTIALS

    corpus = json.loads((REPO / "tests" / "fixtures" / "secrets_corpus.json").read_text(encoding="utf-8"))
    hits: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    missed: list[str] = []

    def check(kind: str, secret: str, out: str, label: str) -> None:
        ok = secret not in out and f"[secret:{kind}#" in out
        hits[kind][0] += ok
        hits[kind][1] += 1
        if not ok:
            missed.append(f"{kind} ({label}): {out[:120]!r}")

    for e in corpus["secrets"]:
        check(e["kind"], e["secret"], redact_text(e["prose"]), "prose")
        if e.get("bare"):
            check(e["kind"], e["secret"], redact_text(e["secret"]), "bare")
        if e.get("json") is not None:
            check(e["json_kind"], e["secret"], json.dumps(redact_value(e["json"]), ensure_ascii=False), "json")
    for text, secret, kind in CODE_LITERALS:
        check(kind, secret, redact_text(text), "code")
    for text, secret, kind in PROSE_CREDENTIALS:
        check(kind, secret, redact_text(text), "prose credential")
    total = sum(h[0] for h in hits.values()), sum(h[1] for h in hits.values())
    print(f"recall: {total[0]} of {total[1]} forms caught over {len(hits)} kinds")
    print("| kind | caught | forms |")
    print("|---|---:|---:|")
    for kind in sorted(hits):
        print(f"| {kind} | {hits[kind][0]} | {hits[kind][1]} |")
    for m in missed:
        print("   missed:", m)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--show", type=int, default=40, help="how many altered lines to print")
    parser.add_argument("--only", default="", help="only the sources whose name holds this word (e.g. 'cache')")
    args = parser.parse_args()
    precision(args.show, args.only)
    recall()


if __name__ == "__main__":
    main()
