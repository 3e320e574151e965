"""detect-secrets is imported through one loader under one lock (safety/ds_import): two threads that need parts of
its circular package at once — the sidecar's start-up warm-up and the first text on the event loop — both get them.
Before, one of them could fail with "cannot import name … from partially initialized module" or ``_DeadlockError``,
and the redaction it served failed its request (a CI run lost a capture to it)."""

from __future__ import annotations

import ast
import os
import subprocess
import sys
from pathlib import Path

import pytest

from stratagate.safety import ds_import

REPO = Path(__file__).resolve().parents[1]

# Each round forgets every detect-secrets module (as a fresh process has none) and races the warm-up against a
# heuristic filter and a redaction; the switch interval is tiny so the threads interleave inside the imports.
RACE = r"""
import sys, threading
sys.setswitchinterval(1e-6)
from stratagate.safety import codevalue, ds_import, secrets
failed = []
for _ in range(ROUNDS):
    for name in [m for m in sys.modules if m.startswith("detect_secrets")]:
        del sys.modules[name]
    ds_import._modules.clear()
    secrets._entropy_fn = None
    jobs = [secrets.warm, lambda: codevalue.is_placeholder_value("abc{0}"),
            lambda: secrets.redact_text("token = Zq8vN2xL4rT7wP1kS9dF3gH6jM0bC5yE")]
    def run(job):
        try:
            job()
        except Exception as exc:
            failed.append(repr(exc))
    threads = [threading.Thread(target=run, args=(job,)) for job in jobs]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
print(len(failed), failed[:3])
"""


def test_threads_importing_detect_secrets_at_once_all_succeed(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("STRATAGATE_")}
    env |= {"PYTHONPATH": str(REPO / "sidecar"), "STRATAGATE_TOKENS_CACHE": str(tmp_path)}
    # 40 rounds: the old imports failed in about one round in three on this race.
    out = subprocess.run([sys.executable, "-c", RACE.replace("ROUNDS", "40")], env=env, capture_output=True,
                         text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    assert out.stdout.startswith("0 []"), out.stdout


def test_no_module_imports_detect_secrets_but_the_loader() -> None:
    """A plain ``import``/``from detect_secrets…`` anywhere else would import outside the lock again."""
    found = []
    for path in sorted((REPO / "sidecar" / "stratagate").rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            names = ([a.name for a in node.names] if isinstance(node, ast.Import)
                     else [node.module or ""] if isinstance(node, ast.ImportFrom) else [])
            if any(n.split(".")[0] == "detect_secrets" for n in names):
                found.append(f"{path.relative_to(REPO)}:{node.lineno}")
    assert found == []


def test_the_loader_gives_the_module_once_and_only_detect_secrets() -> None:
    heuristic = ds_import.module("detect_secrets.filters.heuristic")
    assert heuristic is sys.modules["detect_secrets.filters.heuristic"]
    assert ds_import.module("detect_secrets.filters.heuristic") is heuristic
    with pytest.raises(ValueError, match="not a detect-secrets module"):
        ds_import.module("os")
