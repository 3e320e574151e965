"""plugin/bootstrap_venv.py: the venv installer the shim runs with the system Python (standard library only)."""

from __future__ import annotations

import ast
import json
import os
import subprocess
import sys
from pathlib import Path

from stratagate import __version__
from support.sidecar import REPO

SCRIPT = REPO / "plugin" / "bootstrap_venv.py"


def run(venv: Path, source: Path = REPO, version: str = __version__) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(REPO / "sidecar")}
    return subprocess.run([sys.executable, str(SCRIPT), "--venv", str(venv), "--source", str(source),
                           "--version", version], capture_output=True, text=True, env=env, timeout=300)


def status(venv: Path) -> dict:
    return json.loads(venv.with_name(venv.name + ".status.json").read_text())


def fake_installed_venv(venv: Path, version: str = __version__) -> None:
    (venv / "bin").mkdir(parents=True)
    (venv / "bin" / "python").symlink_to(sys.executable)
    (venv / ".stratagate-installed").write_text(json.dumps({"version": version}))


def test_imports_only_the_standard_library():
    tree = ast.parse(SCRIPT.read_text())
    names = {a.name.split(".")[0] for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names}
    names |= {n.module.split(".")[0] for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) and n.module}
    assert names - {"__future__"} <= set(sys.stdlib_module_names), names - set(sys.stdlib_module_names)


def test_an_installed_venv_is_reported_ready_without_installing(tmp_path: Path):
    venv = tmp_path / "venv-x"
    fake_installed_venv(venv)
    r = run(venv)
    assert r.returncode == 0, r.stderr
    s = status(venv)
    assert (s["state"], s["python"], s["version"]) == ("ready", str(venv / "bin" / "python"), __version__)
    assert not venv.with_name("venv-x.lock").exists()


def test_a_live_installer_holding_the_lock_is_left_to_finish(tmp_path: Path):
    venv = tmp_path / "venv-x"
    lock = tmp_path / "venv-x.lock"
    lock.mkdir()
    (lock / "pid").write_text(str(os.getpid()))  # this test process: alive
    r = run(venv)
    assert r.returncode == 0, r.stderr
    assert (status(venv)["state"], status(venv)["pid"]) == ("installing", os.getpid())
    assert lock.exists() and not venv.exists()
    assert "another installer" in (tmp_path / "install.log").read_text()


def test_a_failed_install_is_reported_with_what_to_do_and_releases_the_lock(tmp_path: Path):
    venv = tmp_path / "venv-x"
    stale = tmp_path / "venv-x.lock"
    stale.mkdir()
    (stale / "pid").write_text("999999999")  # no such process: a stale lock is taken over
    empty_source = tmp_path / "not-a-project"
    empty_source.mkdir()
    r = run(venv, source=empty_source)
    assert r.returncode == 1
    s = status(venv)
    assert s["state"] == "failed" and "pip install failed" in s["error"]
    assert "package index" in s["hint"]
    assert not stale.exists()
    assert "FAILED: pip install failed" in (tmp_path / "install.log").read_text()


def test_a_stamp_of_another_version_is_not_installed(tmp_path: Path):
    venv = tmp_path / "venv-x"
    fake_installed_venv(venv, version="0.0.1")
    lock = tmp_path / "venv-x.lock"
    lock.mkdir()
    (lock / "pid").write_text(str(os.getpid()))
    run(venv)
    assert status(venv)["state"] == "installing"  # it would reinstall (here: another installer holds the lock)
