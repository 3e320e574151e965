"""Wiring is explicit: importing a package registers nothing; the App (and every entry point without one) registers
the stores' hooks by calling ``stratagate.wiring.register_hooks``. Run in a fresh interpreter: the hook list is
process-wide and other test modules register it."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]

PROBE = r"""
import importlib, json, pkgutil, sys
from pathlib import Path

import stratagate
from stratagate.events import store

imported = []
for info in pkgutil.walk_packages(stratagate.__path__, "stratagate."):
    if info.name in ("stratagate.__main__",):
        continue
    try:
        importlib.import_module(info.name)
    except ImportError:  # an optional extra that is not installed (the dense channel's numpy)
        continue
    imported.append(info.name)
after_imports = [hook.__qualname__ for hook in store._status_hooks]

from stratagate.app import App
from stratagate.config import Settings

App(Settings(db=Path(sys.argv[1])))
after_app = [f"{hook.__module__}.{hook.__qualname__}" for hook in store._status_hooks]
print(json.dumps({"imported": imported, "after_imports": after_imports, "after_app": after_app}))
"""


def test_importing_every_module_registers_no_hook_and_the_app_registers_the_graphs(tmp_path: Path):
    done = subprocess.run(
        [sys.executable, "-c", PROBE, str(tmp_path / "memory.db")],
        capture_output=True,
        text=True,
        env={"PYTHONPATH": str(REPO / "sidecar"), "PATH": "/usr/bin:/bin"},
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    seen = json.loads(done.stdout.strip().splitlines()[-1])
    assert "stratagate.graph" in seen["imported"] and "stratagate.graph.store" in seen["imported"]
    assert seen["after_imports"] == []
    assert seen["after_app"] == ["stratagate.graph.store.follow_event_status", "stratagate.events.team.on_status"]
