#!/usr/bin/env python3
"""Record real DSH turns in which earlier history was replaced into tests/fixtures/dsh-landings/.

    PYTHONPATH=sidecar .venv/bin/python scripts/record-landing-fixtures.py   # re-run whenever the DSH pin changes

It runs the real-host test tests/e2e/test_e2e_recapture.py (the pinned DSH's web profile, StrataGate installed, a
20-turn scripted session on a small window) with ``STRATAGATE_RECORD_LANDINGS``, which makes the test write the
session's whole log. From that log it keeps one turn for each way a replacement reaches a turn's events, as the shim
forwards them (the six event types of plugin/turn-events.json from ``turn/start`` to ``turn/end``), as
``turn-<n>.json`` with the ``cases`` it shows:

* ``card-earlier-call``: a card the engine landed for a call of an earlier turn (a ``tool/result`` under that call's
  id, ``surfaceOp: {op: 'replace'}``);
* ``card-same-turn``: a mid-turn card for a call of the same turn;
* ``checkpoint-engine``: a fold or block view of the engine (a checkpoint ``user/message``; its summary's provider
  is ``stratagate-py``);
* ``checkpoint-dsh``: DSH's own compaction summary (the stock engine, the last resort under step pressure).

The turns are normalised as scripts/record-dsh-fixtures.py normalises its own (its ``Normaliser``: ids, times,
scratch folders), plus the standard library's folder (``/fixture/stdlib``), the web API's rpc ids and ISO timestamps
inside texts (block views name their turns' times). ``canonical`` is empty: the session log does not hold the
``tools/result`` values, so the fold reads each result's text, which is where a card's text would show if it were
taken for a result.
tests/test_dsh_fold_replacements.py reads them. Never edit the JSON by hand: re-run this script.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import re
import subprocess
import sys
import sysconfig
import tempfile
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
OUT = REPO / "tests" / "fixtures" / "dsh-landings"
TEST = "tests/e2e/test_e2e_recapture.py"
PIN = REPO / "scripts" / "dsh-install" / "package.json"
FORWARDED = json.loads((REPO / "plugin" / "turn-events.json").read_text())["event_types"]
HEX_ID = re.compile(r"\b[0-9a-f]{32}\b")  # the web API's rpc ids in a prompt's source
ISO = re.compile(r"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(?:\.\d{1,6})?Z")
CASES = ("card-earlier-call", "card-same-turn", "checkpoint-engine", "checkpoint-dsh")


def _recorder() -> Any:
    """scripts/record-dsh-fixtures.py as a module (its file name is not an identifier)."""
    spec = importlib.util.spec_from_file_location("record_dsh_fixtures", REPO / "scripts" / "record-dsh-fixtures.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclasses look their module up
    spec.loader.exec_module(module)
    return module


def run_session(scratch: Path) -> dict[str, Any]:
    env = {**os.environ, "STRATAGATE_RECORD_LANDINGS": str(scratch), "PYTHONPATH": str(REPO / "sidecar")}
    command = [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-m", "e2e", TEST, "-q", "-x"]
    done = subprocess.run(command, cwd=REPO, env=env, check=False)
    if done.returncode != 0:
        raise SystemExit(f"{TEST} failed (exit {done.returncode}): no fixtures written")
    return dict(json.loads((scratch / "session.json").read_text()))


def turns_of(log: list[dict[str, Any]]) -> list[list[dict[str, Any]]]:
    """Each turn's forwarded events, as the shim's eventsOfTurn gives them."""
    out: list[list[dict[str, Any]]] = []
    current: list[dict[str, Any]] | None = None
    for event in log:
        if event["type"] == "turn/start":
            current = []
        if current is not None and event["type"] in FORWARDED:
            current.append(event)
        if event["type"] == "turn/end" and current is not None:
            out.append(current)
            current = None
    return out


def cases_of(turn: list[dict[str, Any]], by_seq: dict[int, dict[str, Any]]) -> set[str]:
    calls = {str(e["data"].get("callId")) for e in turn if e["type"] == "tool/call"}
    found: set[str] = set()
    for event in turn:
        if not isinstance(event.get("surfaceOp"), dict):
            continue
        if event["type"] == "tool/result":
            call = str(event["data"]["message"]["content"][0]["toolCallId"])
            found.add("card-same-turn" if call in calls else "card-earlier-call")
        elif event["type"] == "user/message":
            summaries = [by_seq[s] for s in event.get("sourceEventSeqs") or [] if s in by_seq]
            provider = next((s["data"].get("provider") for s in summaries if s["type"] == "compaction/summary"), None)
            found.add("checkpoint-engine" if provider == "stratagate-py" else "checkpoint-dsh")
    return found


def build(recorded: dict[str, Any], version: str) -> dict[str, Any]:
    log = recorded["log"]
    by_seq = {int(e["seq"]): e for e in log}
    picked: dict[str, int] = {}
    turns = turns_of(log)
    for index, turn in enumerate(turns):
        for case in sorted(cases_of(turn, by_seq)):
            picked.setdefault(case, index)
    missing = [c for c in CASES if c not in picked]
    if missing:
        raise SystemExit(f"the recorded session has no turn for {missing}: nothing written")
    normaliser = _recorder().Normaliser(Path(recorded["work"]), Path(recorded["home"]), Path("/nonexistent-dsh-tmp"))
    normaliser.paths.insert(0, (sysconfig.get_paths()["stdlib"], "/fixture/stdlib"))
    files: dict[str, Any] = {}
    for index in sorted(set(picked.values())):
        turn = turns[index]
        doc = normaliser.value({
            "dsh_version": version,
            "cases": [case for case in CASES if picked[case] == index],
            "session": recorded["session"],
            "origin": None,
            "turn": turn[0]["data"]["turn"],
            "events": turn,
            "canonical": {},
        })
        text = ISO.sub("2026-01-01T00:00:00.000Z", json.dumps(doc, ensure_ascii=False))
        text = HEX_ID.sub(lambda m: normaliser._id(m.group(0), lambda n: f"{n:032x}"), text)
        files[f"turn-{doc['turn']:02d}.json"] = json.loads(text)
    return files


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=OUT)
    parser.add_argument("--session", type=Path, help="a session.json the test already wrote (no new run)")
    args = parser.parse_args(argv)
    version = json.loads(PIN.read_text())["dependencies"]["@deepseek-ai/dsh"]
    if args.session:
        files = build(json.loads(args.session.read_text()), version)
    else:
        with tempfile.TemporaryDirectory(prefix="dsh-landings-") as scratch:
            files = build(run_session(Path(scratch)), version)
    args.out.mkdir(parents=True, exist_ok=True)
    for old in args.out.glob("*.json"):
        old.unlink()
    for name, value in files.items():
        (args.out / name).write_text(json.dumps(value, indent=2, ensure_ascii=False) + "\n")
    print(f"wrote {len(files)} turns to {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
