"""The scale bench's own instruments: the sidecar-CPU clock and the chart (bench/scale_cpu.py, scale_chart.py)."""

from __future__ import annotations

import os
import sys
import time
import xml.dom.minidom

from support.sidecar import REPO

sys.path.insert(0, str(REPO / "bench"))
import scale_chart
from scale_cpu import ProcessCPU


def test_process_cpu_reads_a_process_clock_that_counts_its_work() -> None:
    clock = ProcessCPU(os.getpid())  # this process: its clock must agree with process_time
    a, p = clock.now(), time.process_time()
    total = 0
    while time.process_time() - p < 0.05:
        total += sum(range(1000))
    spent, own = clock.now() - a, time.process_time() - p
    assert clock.precise
    assert own >= 0.05
    assert abs(spent - own) < 0.01 + 0.05 * own


RAW = {
    "date": "2026-12-05 06:00 UTC", "sizes": {"events": [1000, 10000, 100000], "turns": [0, 1000, 10000, 100000]},
    **{f"render_{n}": {"cpu_p50": p50, "cpu_p99": p99, "p50": 2 * p50, "p99": 2 * p99}
       for n, p50, p99 in ((1000, 5.0, 9.0), (10000, 20.0, 40.0), (100000, 80.0, 300.0))},
    **{f"capture_{n}": {"cpu_p50": 4.0, "cpu_p99": 9.0, "p50": 8.0, "p99": 20.0} for n in (0, 1000, 10000, 100000)},
    "floor_fts": {str(n): {"three_terms": 9.0, "three_terms_cpu": 0.1 * n / 1000, "count": 1.0, "count_cpu": 0.01}
                  for n in (1000, 10000, 100000)},
    "floor_commit": {"p50": 0.3, "p99": 1.0, "cpu_p50": 0.1}, "floor_pipe_ms": {"p50": 0.03, "cpu": 0.02},
}


def _polylines(svg: str) -> list[list[tuple[float, float]]]:
    doc = xml.dom.minidom.parseString(svg)  # well-formed: a browser shows nothing for a malformed SVG
    return [[tuple(map(float, p.split(","))) for p in line.getAttribute("points").split()]  # type: ignore[misc]
            for line in doc.getElementsByTagName("polyline")]


def test_chart_draws_cpu_series_floors_and_goals_on_log_axes() -> None:
    labels = [s[0] for s in scale_chart.series(RAW)]
    assert labels == ["recall CPU p99", "recall CPU p50", "capture CPU p50", "floor: FTS5 bm25 top 10",
                      "floor: FTS5 unranked count", "floor: commit + pipe", "goal: recall p99", "goal: capture p50"]
    recall_p50 = dict(next(s[3] for s in scale_chart.series(RAW) if s[0] == "recall CPU p50"))
    assert recall_p50 == {1000: 5.0, 10000: 20.0, 100000: 80.0}  # CPU, not wall
    lines = _polylines(scale_chart.svg(RAW))
    assert len(lines) == len(labels)
    (x1, y1), (x2, y2), (x3, y3) = lines[1]
    assert abs((x2 - x1) - (x3 - x2)) < 0.2  # log x: 1k → 10k as wide as 10k → 100k
    assert abs((y1 - y2) - (y2 - y3)) < 0.2  # log y: 5 → 20 → 80 ms, equal ratios, equal steps
    assert y3 < y1  # more CPU is higher up
    assert 0 not in [x for x, _ in scale_chart.series(RAW)[2][3]]  # a log axis has no 0 turns of history
