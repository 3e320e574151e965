"""Smoke test of the Memory page inside the real DeepSeek Harness: ``dsh web`` with the plugin, one turn captured,
then headless chromium (tests/browser/dsh-smoke.mjs, playwright-core) opens Settings → Memory (the section headed
"StrataGate Memory") and sees the page mounted (loaded by the plugin's client bundle from the sidecar's assets) with
the namespace's counts, fetched through DSH's route to the shim and the sidecar; then every tab at 360, 390, 768 and
1280 px inside the settings dialog, with the layout checks. The full page is tested against the standalone viewer
(tests/browser/memory-page.test.mjs)."""

from __future__ import annotations

import json
import subprocess
import time
from pathlib import Path

from support.dsh import REPO, DshHome, wait_http_json
from support.dsh_web import browser_run, running_web
from support.model_server import ScriptedModelServer

DRIVER = REPO / "tests" / "browser" / "dsh-smoke.mjs"
MESSAGE = "We use npm for packages."
WIDTHS = (360, 390, 768, 1280)


def test_settings_shows_the_memory_page_with_the_namespace_counts(
    web_stratagate: DshHome, model_server: ScriptedModelServer, tmp_path: Path
) -> None:
    run = browser_run(web_stratagate, tmp_path, "dsh-settings-memory.png")
    node, work, shot = run.node, run.work, run.shot
    shots = shot.parent
    with running_web(web_stratagate, work) as web:
        session = web.create_session(work)
        turn = session.send(MESSAGE, requests=lambda: len(model_server.requests))
        assert turn.end_reason == "completed", turn.events[-5:]
        # The turn is stored once the sidecar counts it (the shim spools it at turn end).
        status_url = f"http://127.0.0.1:{web.port}/api/stratagate/status"
        wait_http_json(
            status_url, time.monotonic() + 60, web.proc,
            until=lambda code, body: ((body or {}).get("counts") or {}).get("turns", 0) >= 1,
        )
        driven = subprocess.run(
            [node, str(DRIVER), "--url", f"http://127.0.0.1:{web.port}/", "--screenshot", str(shot),
             "--widths", ",".join(map(str, WIDTHS)), "--shots", str(shots)],
            cwd=REPO, capture_output=True, text=True, timeout=180, check=False,
        )
        # A Chinese browser at a phone's width: the same checks, and no English UI word in the section.
        driven_zh = subprocess.run(
            [node, str(DRIVER), "--url", f"http://127.0.0.1:{web.port}/", "--locale", "zh-CN", "--widths", "390",
             "--shots", str(shots)],
            cwd=REPO, capture_output=True, text=True, timeout=180, check=False,
        )
    assert driven.returncode == 0, f"driver exit {driven.returncode}\n{driven.stdout}\n{driven.stderr}"
    report = json.loads(driven.stdout.strip().splitlines()[-1])
    assert "failure" not in report, f"{report.get('failure')}\nsteps: {report['steps']}\nscreenshot: {shot}"
    assert report["errors"] == [], report["errors"]

    # Settings → Memory: the nav label whole (DSH ellipsises what does not fit), the section headed "StrataGate Memory"
    # and the page mounted in it.
    assert report["nav_label"] in ("Memory", "StrataGate Memory") and not report["nav_label_cut"], report
    assert report["heading"] == "StrataGate Memory", report
    assert report["mounted"], report

    (namespace,) = [row["name"] for row in web_stratagate.query("SELECT name FROM namespaces")]
    assert namespace in report["namespaces"], report["namespaces"]
    assert report["overview"]["status"] == 200, report["overview"]
    shown = {n["name"]: n for n in report["overview"]["body"]["namespaces"]}
    counts = shown[namespace]
    assert counts["turns"] == 1 and counts["messages"] >= 2, counts
    assert report["selected_namespace"] == namespace, report
    row = report["namespace_row"].split()
    assert namespace in row and str(counts["turns"]) in row and str(counts["messages"]) in row, report["namespace_row"]

    # At every width, inside DSH's settings dialog: the page gets the room it needs (DSH's nav rail once left it
    # ~100 px at 390 px and broke words letter by letter) and no tab has a cut label, a broken word, text squeezed
    # into a box narrower than a few characters, or an overflowing box (tests/browser/layout.mjs).
    for width in WIDTHS:
        shown = report["widths"][str(width)]
        assert shown["page_width"] >= min(width - 80, 450), (width, shown["page_width"])
        assert shown["problems"] == [], (width, shown["problems"])

    assert driven_zh.returncode == 0, f"driver exit {driven_zh.returncode}\n{driven_zh.stdout}\n{driven_zh.stderr}"
    zh = json.loads(driven_zh.stdout.strip().splitlines()[-1])
    assert "failure" not in zh and zh["errors"] == [], zh
    assert zh["nav_label"] == "记忆" and zh["heading"] == "StrataGate 记忆", zh
    assert zh["widths"]["390"]["problems"] == [], zh["widths"]["390"]["problems"]
