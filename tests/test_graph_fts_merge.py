"""Migration 16: graph_fts, which recall ranks twice a step, merges at FTS5's automerge 2 and is merged once when a
database upgrades. Its rows and every ranking are unchanged: only how the index is laid out differs. Real SQLite
files, migrated by ``Database.open`` as every start does."""

from __future__ import annotations

import random
import sqlite3
from pathlib import Path

from stratagate.storage.db import Database
from stratagate.storage.schema import MIGRATIONS

WORDS = [f"w{i}" for i in range(60)]
QUERIES = ['"w1" OR "w2"', '"w7"', '"w3" OR "w40" OR "w59"', '"w11" OR "nothing"']


def _ranked(path: Path) -> list[list[tuple[int, float]]]:
    with sqlite3.connect(path) as conn:
        return [
            [(int(r[0]), round(float(r[1]), 9)) for r in conn.execute(
                "SELECT rowid, bm25(graph_fts) AS rank FROM graph_fts WHERE graph_fts MATCH ? ORDER BY rank, rowid",
                (q,),
            )]
            for q in QUERIES
        ]


def _segments(path: Path) -> int:
    with sqlite3.connect(path) as conn:
        return int(conn.execute("SELECT count(DISTINCT segid) FROM graph_fts_idx").fetchone()[0])


async def test_an_upgraded_database_ranks_its_nodes_as_before_from_one_segment(tmp_path: Path):
    path = tmp_path / "memory.db"
    conn = sqlite3.connect(path)
    for script in MIGRATIONS[:15]:
        conn.executescript(script)
    conn.execute("PRAGMA user_version = 15")
    rng = random.Random(7)
    for _ in range(600):  # nodes rewritten on every fact change, one transaction each: many small segments
        node = rng.randrange(1, 120)
        conn.execute("DELETE FROM graph_fts WHERE rowid = ?", (node,))
        conn.execute("INSERT INTO graph_fts(rowid, terms) VALUES (?, ?)",
                     (node, " ".join(rng.choices(WORDS, k=rng.randrange(3, 30)))))
        conn.commit()
    conn.close()
    before, segments = _ranked(path), _segments(path)
    assert segments > 3 and any(before)
    db = Database(path)
    await db.open()
    await db.close()
    assert _ranked(path) == before and _segments(path) == 1
    with sqlite3.connect(path) as conn:
        assert dict(conn.execute("SELECT k, v FROM graph_fts_config")).get("automerge") == 2
