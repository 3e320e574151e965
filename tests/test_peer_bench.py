"""The peer bench's table (bench/bench_peer.py): StrataGate's and our CPU side by side, the ratio, this run's floor."""

from __future__ import annotations

import sys

from support.sidecar import REPO

sys.path.insert(0, str(REPO / "bench"))
import bench_peer


def _fig(p50: float, p99: float) -> dict[str, float]:
    return {"cpu_p50": p50, "cpu_p99": p99, "p50": 2 * p50, "p99": 2 * p99, "n": 30}


RAW = {
    "date": "2026-12-05 08:00 UTC", "machine": "x86_64, 2 cores", "load_start": "1.00", "load_end": "2.00",
    "wall_s": 600.0, "command": "nice -n 10 .venv/bin/python bench/bench_peer.py", "peer_node": "v22.23.5",
    "python": "3.11.7",
    "peer_build": {"plugin_version": "0.2.16", "commit": "3862391aa206d57c8e739f120391c6138a40e8c7"},
    "floors": {"commit": {"cpu_p50": 0.13}, "pipe": {"cpu": 0.05},
               "fts": {"1000": {"three_terms_cpu": 0.03, "count_cpu": 0.01}}},
    "peer": {"render_1000": _fig(80.0, 120.0), "capture_1000": _fig(60.0, 90.0), "event_search_1000": _fig(1.0, 2.0),
             "remember_1000": _fig(5.0, 9.0), "rss_after_first_recall_1000": 90.0},
    "ours": {"render_1000": _fig(5.0, 10.0), "capture_1000": _fig(2.0, 4.0), "remember_1000": _fig(5.0, 9.0),
             "rss_after_first_recall_1000": 135.0},
}


def test_rows_pair_each_operation_and_size_with_their_ratio_and_floor() -> None:
    rows = {(op.split(":")[0], size): rest for op, size, *rest in bench_peer.table_rows(RAW)}
    assert rows[("recall", "1,000 events")] == [
        "80.00 / 120.00 ms", "5.00 / 10.00 ms", "16× / 12×",
        "FTS5 bm25 top 10 0.03 ms, unranked count 0.01 ms"]
    assert rows[("capture", "1,000 turns of history")][2:] == ["30× / 22×", "commit 0.13 ms + pipe 0.05 ms"]
    assert rows[("store an event", "1,000 events")][2] == "1× / 1×"
    assert rows[("RSS after the first recall (whole process)", "1,000 events")][2] == "0.67×"
    assert ("event search", "1,000 events") not in rows  # ours has no figure for it: no half row


def test_markdown_says_how_each_side_was_measured() -> None:
    table = bench_peer.markdown(RAW)
    assert "StrataGate 0.2.16 (commit 3862391) on Node v22.23.5; ours on Python 3.11.7" in table
    assert "stdio JSON-RPC" in table and "process.cpuUsage()" in table
    assert table.count("\n| ") == 1 + len(bench_peer.table_rows(RAW))  # the header and one line per row
