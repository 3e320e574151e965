"""The scale bench's chart: recall and capture CPU against memory size, log-log, with the floors and goals.

Run from the repo root:  .venv/bin/python bench/scale_chart.py bench-scale.json docs/img/scale.svg
(bench_scale.py also writes it beside its JSON). A hand-written SVG: no plotting library to install.

Solid lines are the sidecar's CPU per request (recall p50 and p99 per events size, capture p50 per turns of
history); dashed lines the floors measured in the same run (one FTS5 bm25 top-10 query and the unranked count of
its matches over the same texts and row count; a bare commit plus a pipe round trip); dotted lines the goals.
"""

from __future__ import annotations

import json
import math
import sys
from html import escape
from pathlib import Path
from typing import Any

W, H = 760, 460
LEFT, RIGHT, TOP, BOTTOM = 70, 250, 40, 50
FONT = "font-family='sans-serif' font-size='12'"

Series = tuple[str, str, str, list[tuple[float, float]]]  # label, colour, dash, points (size, ms)


def _cpu(d: dict[str, Any], q: str) -> float:
    return float(d.get(f"cpu_{q}", d[q]))


def series(r: dict[str, Any]) -> list[Series]:
    """What the chart draws, from a bench_scale.py JSON (sizes 0 are left out: a log axis has no 0)."""
    events = [n for n in r["sizes"]["events"] if n and f"render_{n}" in r]
    turns = [n for n in r["sizes"]["turns"] if n and f"capture_{n}" in r]
    lo, hi = min(events + turns, default=1), max(events + turns, default=1)  # what a horizontal line spans
    out: list[Series] = [
        ("recall CPU p99", "#c0392b", "", [(n, _cpu(r[f"render_{n}"], "p99")) for n in events]),
        ("recall CPU p50", "#e67e22", "", [(n, _cpu(r[f"render_{n}"], "p50")) for n in events]),
        ("capture CPU p50", "#2471a3", "", [(n, _cpu(r[f"capture_{n}"], "p50")) for n in turns]),
    ]
    fts = r.get("floor_fts", {})
    floor_events = [n for n in events if str(n) in fts]
    if floor_events:
        def fts_ms(n: int, key: str) -> float:
            return float(fts[str(n)].get(f"{key}_cpu", fts[str(n)][key]))

        ranked = [(n, fts_ms(n, "three_terms")) for n in floor_events]
        out.append(("floor: FTS5 bm25 top 10", "#e67e22", "6,4", ranked))
        if all("count_cpu" in fts[str(n)] for n in floor_events):
            counted = [(n, fts_ms(n, "count")) for n in floor_events]
            out.append(("floor: FTS5 unranked count", "#7f8c8d", "6,4", counted))
    commit, pipe = r.get("floor_commit"), r.get("floor_pipe_ms")
    if turns and isinstance(commit, dict) and isinstance(pipe, dict):
        ms = commit["cpu_p50"] + pipe["cpu"]
        out.append(("floor: commit + pipe", "#2471a3", "6,4", [(lo, ms), (hi, ms)]))
    goals = [(n, t) for n, t in ((10000, 10.0), (100000, 30.0)) if n in events]
    if goals:
        out.append(("goal: recall p99", "#c0392b", "2,3", goals if len(goals) > 1 else goals * 2))
    if turns:
        out.append(("goal: capture p50", "#2471a3", "2,3", [(lo, 1.2), (hi, 1.2)]))
    return [s for s in out if s[3]]


def _decades(lo: float, hi: float) -> list[int]:
    return list(range(math.floor(math.log10(lo)), math.ceil(math.log10(hi)) + 1))


def svg(r: dict[str, Any]) -> str:
    drawn = series(r)
    xs = [x for s in drawn for x, _ in s[3]]
    ys = [y for s in drawn for _, y in s[3] if y > 0]
    xd, yd = _decades(min(xs), max(xs)), _decades(min(ys), max(ys))
    if len(xd) < 2:
        xd.append(xd[0] + 1)
    if len(yd) < 2:
        yd.append(yd[0] + 1)
    pw, ph = W - LEFT - RIGHT, H - TOP - BOTTOM

    def px(x: float) -> float:
        return LEFT + (math.log10(x) - xd[0]) / (xd[-1] - xd[0]) * pw

    def py(y: float) -> float:
        return TOP + ph - (math.log10(max(y, 10.0 ** yd[0])) - yd[0]) / (yd[-1] - yd[0]) * ph

    out = [f"<svg xmlns='http://www.w3.org/2000/svg' width='{W}' height='{H}' viewBox='0 0 {W} {H}'>",
           f"<rect width='{W}' height='{H}' fill='white'/>",
           f"<text x='{LEFT}' y='22' font-family='sans-serif' font-size='14' font-weight='bold'>Sidecar CPU per "
           f"request against memory size ({escape(str(r.get('date', '')))})</text>"]
    for d in xd:
        x = px(10.0**d)
        out.append(f"<line x1='{x:.1f}' y1='{TOP}' x2='{x:.1f}' y2='{TOP + ph}' stroke='#ddd'/>")
        out.append(f"<text x='{x:.1f}' y='{TOP + ph + 18}' {FONT} text-anchor='middle'>{10**d:,}</text>")
    for d in yd:
        y = py(10.0**d)
        label = f"{10.0**d:g}"
        out.append(f"<line x1='{LEFT}' y1='{y:.1f}' x2='{LEFT + pw}' y2='{y:.1f}' stroke='#ddd'/>")
        out.append(f"<text x='{LEFT - 6}' y='{y + 4:.1f}' {FONT} text-anchor='end'>{label}</text>")
    out.append(f"<text x='{LEFT + pw / 2}' y='{H - 12}' {FONT} text-anchor='middle'>memory size (events for recall, "
               "turns of history for capture), log scale</text>")
    out.append(f"<text transform='translate(18 {TOP + ph / 2}) rotate(-90)' {FONT} text-anchor='middle'>"
               "CPU ms per request, log scale</text>")
    out.append(f"<rect x='{LEFT}' y='{TOP}' width='{pw}' height='{ph}' fill='none' stroke='#444'/>")
    for k, (label, colour, dash, points) in enumerate(drawn):
        path = " ".join(f"{px(x):.1f},{py(y):.1f}" for x, y in sorted(points))
        style = f"stroke='{colour}' stroke-width='2' fill='none'" + (f" stroke-dasharray='{dash}'" if dash else "")
        out.append(f"<polyline points='{path}' {style}/>")
        if not dash:
            out += [f"<circle cx='{px(x):.1f}' cy='{py(y):.1f}' r='3.5' fill='{colour}'/>" for x, y in points]
        ly = TOP + 10 + k * 22
        out.append(f"<line x1='{W - RIGHT + 16}' y1='{ly}' x2='{W - RIGHT + 46}' y2='{ly}' {style}/>")
        out.append(f"<text x='{W - RIGHT + 52}' y='{ly + 4}' {FONT}>{escape(label)}</text>")
    out.append("</svg>")
    return "\n".join(out) + "\n"


def main() -> None:
    raw = json.loads(Path(sys.argv[1]).read_text())
    Path(sys.argv[2]).parent.mkdir(parents=True, exist_ok=True)
    Path(sys.argv[2]).write_text(svg(raw))


if __name__ == "__main__":
    main()
