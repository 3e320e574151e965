"""Candidate full-text engines for event search, side by side with SQLite FTS5 on the same terms.

Run from the repo root:  nice -n 10 .venv/bin/python bench/bench_search_engines.py [--docs 10000 100000]

Documents are synthetic events shaped like ``events.store._fts_text`` (title ×3, summary ×2, narrative) drawn from
the English word-frequency list with its Zipf weights, tokenised by ``text.terms`` (stems, dates, CJK bigrams): every
engine indexes the same terms. Queries are LoCoMo conversation 26's questions (OR of their distinct terms, the
worst case: common terms are not split off). Each engine runs in its own child process; figures are that process's
CPU time (build, and top-40 query p50 / p99), its RSS growth, and the index size on disk.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import resource
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "sidecar"))

from stratagate.text.terms import fts_query, terms  # noqa: E402

LOCOMO = Path(os.environ.get("LOCOMO", REPO.parent.parent / "shared" / "data" / "locomo" / "26.json"))
TOP = 40  # search() asks the index for limit × 5 × PREFILTER / 4 … the pool it ranks: tens of rows


def _docs(n: int) -> list[str]:
    rows = [line.split("\t") for line in (REPO / "sidecar/stratagate/text/word_frequency.tsv").read_text().splitlines()]
    words = [w for w, _ in rows]
    weights = [10 ** float(f) for _, f in rows]
    rng = random.Random(7)
    out = []
    for i in range(n):
        title, summary, narrative = (" ".join(rng.choices(words, weights, k=k)) for k in (6, 12, 30))
        out.append(" ".join(terms("\n".join([title] * 3 + [summary] * 2 + [narrative, f"2023-05-{i % 28 + 1:02d}"]))))
    return out


def _queries() -> list[list[str]]:
    data = json.loads(LOCOMO.read_text())
    out = [list(dict.fromkeys(terms(q["question"]))) for q in data["qa"]]
    return [q for q in out if q]


def _rss_kb() -> int:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss


def _du(path: Path) -> int:
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file())


def _fts5(docs: list[str], tmp: Path) -> Any:
    db = sqlite3.connect(tmp / "fts.db")
    db.execute("CREATE VIRTUAL TABLE t USING fts5(terms, tokenize = 'unicode61 remove_diacritics 0')")
    db.executemany("INSERT INTO t(rowid, terms) VALUES (?, ?)", enumerate(docs, 1))
    db.commit()

    def query(q: list[str]) -> list[int]:
        match = fts_query(" ".join(q), stem="none", dates=False) or '""'
        sql = "SELECT rowid FROM t WHERE t MATCH ? ORDER BY bm25(t), rowid DESC LIMIT ?"
        return [r[0] for r in db.execute(sql, (match, TOP))]

    return query


def _tantivy(docs: list[str], tmp: Path) -> Any:
    import tantivy

    sb = tantivy.SchemaBuilder()
    sb.add_integer_field("id", stored=False, indexed=True, fast=True)
    sb.add_text_field("terms", tokenizer_name="whitespace", index_option="freq")
    schema = sb.build()
    index = tantivy.Index(schema, path=str(tmp), reuse=False)
    writer = index.writer(heap_size=50_000_000, num_threads=1)
    for i, d in enumerate(docs, 1):
        writer.add_document(tantivy.Document(id=i, terms=d))
    writer.commit()
    writer.wait_merging_threads()
    index.reload()
    should = tantivy.Occur.Should

    def query(q: list[str]) -> list[int]:
        searcher = index.searcher()
        bq = tantivy.Query.boolean_query([(should, tantivy.Query.term_query(schema, "terms", t, "freq")) for t in q])
        hits = searcher.search(bq, TOP, count=False).hits
        return list(searcher.fast_field_values("id", [a for _, a in hits]))

    return query


def _bm25s(docs: list[str], tmp: Path) -> Any:
    import bm25s

    retriever = bm25s.BM25(method="lucene")
    retriever.index([d.split() for d in docs], show_progress=False)
    retriever.save(str(tmp / "bm25s"))

    def query(q: list[str]) -> list[int]:
        ids, _ = retriever.retrieve([q], k=TOP, show_progress=False, n_threads=1)
        return [int(i) + 1 for i in ids[0]]

    return query


ENGINES = {"fts5": _fts5, "tantivy": _tantivy, "bm25s": _bm25s}


def child(engine: str, n: int) -> dict[str, float]:
    docs, queries = _docs(n), _queries()
    with tempfile.TemporaryDirectory() as tmp:
        rss0, cpu0 = _rss_kb(), time.process_time()
        query = ENGINES[engine](docs, Path(tmp))
        build = time.process_time() - cpu0
        times = []
        for q in queries * 3:
            start = time.process_time()
            query(q)
            times.append((time.process_time() - start) * 1000)
        times.sort()
        return {"build_s": build, "p50_ms": statistics.median(times), "p99_ms": times[int(len(times) * 0.99)],
                "rss_mb": (_rss_kb() - rss0) / 1024, "disk_mb": _du(Path(tmp)) / 1e6, "queries": len(times)}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--docs", type=int, nargs="+", default=[10_000, 100_000])
    parser.add_argument("--child", nargs=2)
    args = parser.parse_args()
    if args.child:
        print(json.dumps(child(args.child[0], int(args.child[1]))))
        return
    sizes = " ".join(map(str, args.docs))
    print(f"Command: nice -n 10 .venv/bin/python bench/bench_search_engines.py --docs {sizes}\n")
    print("| engine | docs | build CPU s | top-40 query CPU p50 / p99 ms | RSS growth MB | on disk MB |")
    print("| --- | ---: | ---: | ---: | ---: | ---: |")
    for n in args.docs:
        for engine in ENGINES:
            out = subprocess.run([sys.executable, __file__, "--child", engine, str(n)], capture_output=True, text=True)
            if out.returncode:
                print(f"| {engine} | {n} | failed: {out.stderr.strip().splitlines()[-1]} |", flush=True)
                continue
            r = json.loads(out.stdout)
            print(f"| {engine} | {n} | {r['build_s']:.1f} | {r['p50_ms']:.2f} / {r['p99_ms']:.2f} "
                  f"| {r['rss_mb']:.0f} | {r['disk_mb']:.1f} |", flush=True)


if __name__ == "__main__":
    main()
