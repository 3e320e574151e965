"""Drive the real DeepSeek Harness (DSH) from tests: install it, build plugin tarballs, create a DSH_HOME,
run headless turns and the web profile, and clean up every process they started.

The pinned DSH is installed by ``scripts/install-dsh.sh`` into ``<repo>/.dsh-local`` (or
``$STRATAGATE_DSH_LOCAL``). Each test gets a fresh DSH_HOME whose ``settings.yaml`` points DSH's model at a
``ScriptedModelServer`` through the ``llm-pi-ai`` ``openai-completions`` provider.

Processes: every ``dsh`` is started in its own session (process group). Each process DSH starts inherits
``DSH_HOME``, so ``DshHome.processes()`` finds them (sidecars included) even if they left the group, and
``DshHome.kill_all()`` ends exactly those, by pid.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import sqlite3
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import psutil

REPO = Path(__file__).resolve().parents[2]
INSTALL_SCRIPT = REPO / "scripts" / "install-dsh.sh"
API_KEY_ENV = "STRATAGATE_E2E_API_KEY"
PROVIDER = "scripted"
MODEL = "scripted-model"
# Variables from the developer's shell that would change what DSH or the sidecar does.
SCRUBBED_PREFIXES = ("STRATAGATE_", "DSH_", "DEEPSEEK_", "OPENAI_", "ANTHROPIC_")
SCRUBBED = {"PYTHONPATH", "PYTHONHOME", "VIRTUAL_ENV", "NODE_OPTIONS", "NODE_PATH"}


# ----------------------------------------------------------------------------------------- install


class DshInstallError(RuntimeError):
    def __init__(self, message: str, log: str):
        super().__init__(message)
        self.log = log


@dataclass(frozen=True)
class DshInstall:
    dest: Path
    bin_dir: Path  # holds node, pnpm and a dsh wrapper pinned to the installed Node 22
    node: Path
    pnpm: Path
    dsh: Path
    seconds: float
    log: str

    @property
    def pnpm_store(self) -> Path:
        return self.dest / "pnpm-store"


def install_dsh(timeout: float = 900) -> DshInstall:
    """Run scripts/install-dsh.sh (a no-op when already installed); raise DshInstallError with its log."""
    started = time.monotonic()
    try:
        proc = subprocess.run(
            ["bash", str(INSTALL_SCRIPT)],
            cwd=REPO,
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
        )
    except subprocess.TimeoutExpired as exc:
        out = (exc.stdout or b"").decode(errors="replace") if isinstance(exc.stdout, bytes) else exc.stdout or ""
        err = (exc.stderr or b"").decode(errors="replace") if isinstance(exc.stderr, bytes) else exc.stderr or ""
        raise DshInstallError(f"install-dsh.sh did not finish within {timeout:.0f}s", out + err) from exc
    log = f"$ bash {INSTALL_SCRIPT}\n--- stdout\n{proc.stdout}--- stderr\n{proc.stderr}"
    if proc.returncode != 0:
        raise DshInstallError(f"install-dsh.sh exited with {proc.returncode}", log)
    paths = dict(line.split("=", 1) for line in proc.stdout.splitlines() if "=" in line)
    try:
        install = DshInstall(
            dest=Path(paths["dsh"]).parent.parent,
            bin_dir=Path(paths["bin"]),
            node=Path(paths["node"]),
            pnpm=Path(paths["pnpm"]),
            dsh=Path(paths["dsh"]),
            seconds=time.monotonic() - started,
            log=log,
        )
    except KeyError as exc:
        raise DshInstallError(f"install-dsh.sh did not print {exc}", log) from exc
    for path in (install.node, install.dsh):
        if not os.access(path, os.X_OK):
            raise DshInstallError(f"install-dsh.sh reported {path}, which is not executable", log)
    return install


def npm_pack(source: Path, dest: Path, install: DshInstall, timeout: float = 180) -> Path:
    """``npm pack`` ``source`` into ``dest`` (running on the installed Node 22) and return the tarball."""
    dest.mkdir(parents=True, exist_ok=True)
    env = clean_env()
    env["PATH"] = f"{install.bin_dir}{os.pathsep}{env.get('PATH', '')}"
    env["npm_config_update_notifier"] = "false"
    proc = subprocess.run(
        ["npm", "pack", "--json", "--pack-destination", str(dest)],
        cwd=source,
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )
    if proc.returncode != 0:
        raise RuntimeError(f"npm pack in {source} failed ({proc.returncode}):\n{proc.stdout}\n{proc.stderr}")
    start = proc.stdout.find("[")
    info = json.loads(proc.stdout[start:])
    tarball = dest / info[0]["filename"]
    if not tarball.is_file():
        raise RuntimeError(f"npm pack reported {tarball}, which does not exist:\n{proc.stdout}\n{proc.stderr}")
    return tarball


def tarball_files(tarball: Path) -> list[str]:
    import tarfile

    with tarfile.open(tarball) as tf:
        return sorted(m.name.removeprefix("package/") for m in tf.getmembers() if m.isfile())


def clean_env() -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if not k.startswith(SCRUBBED_PREFIXES) and k not in SCRUBBED}


def is_sidecar(argv: list[str]) -> bool:
    """``python -m stratagate serve …`` or ``…/bin/stratagate serve …``: the argument vector of a sidecar, not of any
    other process of the home whose command line merely mentions both words (a node helper of the shim, seen while
    the machine was busy)."""
    if "serve" not in argv:
        return False
    before = argv[: argv.index("serve")]
    return any(a == "stratagate" or a.endswith("/stratagate") for a in before)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def repo_python() -> Path:
    """The interpreter the plugin should use for the sidecar: the repo's .venv, else this one."""
    venv = REPO / ".venv" / "bin" / "python"
    return venv if venv.exists() else Path(sys.executable)


# ----------------------------------------------------------------------------------------- runs


@dataclass
class Run:
    """One finished ``dsh`` process."""

    argv: list[str]
    cwd: Path
    returncode: int | None
    stdout: str
    stderr: str
    seconds: float
    timed_out: bool
    request_range: tuple[int, int] = (0, 0)  # indexes into the model server's requests made during the run
    leftovers: list[str] = field(default_factory=list)  # processes of the run still alive after it exited

    def describe(self) -> str:
        return (
            f"$ {' '.join(self.argv)}  (cwd {self.cwd})\n"
            f"exit {self.returncode}{' (TIMED OUT, killed)' if self.timed_out else ''} after {self.seconds:.1f}s\n"
            f"--- stdout\n{self.stdout[-4000:]}\n--- stderr (tail)\n{self.stderr[-8000:]}\n"
            + (f"--- processes left behind: {self.leftovers}\n" if self.leftovers else "")
        )


@dataclass
class Proc:
    """A running ``dsh`` (e.g. the web profile) with its output files."""

    popen: subprocess.Popen[bytes]
    argv: list[str]
    cwd: Path
    stdout_path: Path
    stderr_path: Path
    started: float
    label: str = "dsh"

    @property
    def pid(self) -> int:
        return self.popen.pid

    def output(self) -> tuple[str, str]:
        return (
            self.stdout_path.read_text(errors="replace"),
            self.stderr_path.read_text(errors="replace"),
        )


class DshHome:
    """A fresh DSH_HOME with settings.yaml pointing at a scripted model server."""

    def __init__(
        self,
        path: Path,
        install: DshInstall,
        base_url: str,
        *,
        logs: Path | None = None,
        context_window: int = 65536,
        max_tokens: int = 4096,
    ):
        self.path = path
        self.context_window = context_window
        self.max_tokens = max_tokens
        self.settings_extra = ""  # more top-level settings.yaml sections (write_settings keeps them)
        self.install = install
        self.base_url = base_url
        self.logs = logs or path.parent / "logs"
        self.logs.mkdir(parents=True, exist_ok=True)
        self.path.mkdir(parents=True, exist_ok=True)
        self.extra_env: dict[str, str] = {}
        self.patches: list[Path] = []  # --patch overlays for every run (see log_to_stderr)
        self.runs: list[Run] = []
        self._procs: list[Proc] = []
        self._counter = 0
        self.write_settings()

    # -- configuration

    def write_settings(self, extra: str | None = None) -> None:
        """settings.yaml: the scripted provider (window ``context_window``, replies ≤ ``max_tokens``) as the default
        model; ``extra`` (kept in ``settings_extra``) is appended verbatim, e.g. an ``agent-presets:`` section."""
        if extra is not None:
            self.settings_extra = extra
        (self.path / "settings.yaml").write_text(
            "# Written by tests/support/dsh.py: DSH's model is the test's ScriptedModelServer.\n"
            "llm-pi-ai:\n"
            "  providers:\n"
            f"    {PROVIDER}:\n"
            "      displayName: StrataGate e2e scripted server\n"
            f"      apiKeyEnv: {API_KEY_ENV}\n"
            "      api: openai-completions\n"
            f"      baseURL: {self.base_url}\n"
            "      compat:\n"
            "        supportsDeveloperRole: false\n"
            "        maxTokensField: max_tokens\n"
            "      models:\n"
            f"        - id: {MODEL}\n"
            f"          contextWindow: {self.context_window}\n"
            f"          maxTokens: {self.max_tokens}\n"
            "agent-default-model:\n"
            f"  provider: {PROVIDER}\n"
            f"  model: {MODEL}\n" + self.settings_extra
        )

    def set_window(self, context_window: int, max_tokens: int | None = None) -> None:
        """A (small) model context window, e.g. to make compaction necessary within a test; rewrites settings.yaml
        (DSH hot-reloads it; set it before starting dsh to be sure)."""
        self.context_window = context_window
        if max_tokens is not None:
            self.max_tokens = max_tokens
        self.write_settings()

    def env(self, **overrides: str) -> dict[str, str]:
        env = clean_env()
        env["PATH"] = f"{self.install.bin_dir}{os.pathsep}{env.get('PATH', '')}"
        env["DSH_HOME"] = str(self.path)
        env["DSH_TELEMETRY_DISABLED"] = "1"
        env[API_KEY_ENV] = "sk-e2e-not-a-real-key"
        env["NO_COLOR"] = "1"
        env["npm_config_update_notifier"] = "false"
        env["npm_config_store_dir"] = str(self.install.pnpm_store)
        env.update(self.extra_env)
        env.update(overrides)
        return env

    def log_to_stderr(self, exporter: Path) -> None:
        """Load ``exporter`` (a Cordis plugin that copies DSH's log records to stderr) in every run."""
        patch = self.logs / "log-exporter.patch.yml"
        patch.write_text(f"- insert:\n    - id: e2e-log-exporter\n      name: {json.dumps(str(exporter))}\n")
        if patch not in self.patches:
            self.patches.append(patch)

    # -- plugins

    def plugin(self, profile: str, *args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
        """``dsh plugin --profile <profile> <args>`` (forwarded to pnpm in the profile directory)."""
        argv = [str(self.install.dsh), "plugin", "--profile", profile, *args]
        proc = subprocess.run(
            argv, cwd=self.path, env=self.env(), capture_output=True, text=True, timeout=timeout, check=False
        )
        if proc.returncode != 0:
            raise RuntimeError(f"$ {' '.join(argv)} failed ({proc.returncode}):\n{proc.stdout}\n{proc.stderr}")
        return proc

    def add_plugin(self, tarball: Path, profile: str = "headless") -> None:
        """Install a tarball. To replace one, remove it first (pnpm re-resolves the old file: spec)."""
        self.plugin(profile, "add", str(tarball))

    def remove_plugin(self, package: str, profile: str = "headless") -> None:
        self.plugin(profile, "remove", package)

    def replace_plugin(self, package: str, tarball: Path, profile: str = "headless") -> None:
        """Swap in a new tarball: remove, then add (adding over a deleted old tarball fails with ENOENT)."""
        if package in self.profile_manifest(profile).get("dependencies", {}):
            self.remove_plugin(package, profile)
        self.add_plugin(tarball, profile)

    def profile_manifest(self, profile: str = "headless") -> dict[str, Any]:
        return json.loads((self.path / "profiles" / profile / "package.json").read_text())

    # -- running dsh

    def _argv(self, profile_args: list[str], patches: list[Path], app_args: list[str]) -> list[str]:
        argv = [str(self.install.dsh), *profile_args]
        for patch in [*self.patches, *patches]:  # launcher flags must come before the app's arguments
            argv += ["--patch", str(patch)]
        return argv + app_args

    def _spawn(self, argv: list[str], cwd: Path, env: dict[str, str], label: str) -> Proc:
        self._counter += 1
        stem = f"{self._counter:02d}-{label}"
        out_path, err_path = self.logs / f"{stem}.stdout", self.logs / f"{stem}.stderr"
        with out_path.open("wb") as out, err_path.open("wb") as err:
            popen = subprocess.Popen(
                argv, cwd=cwd, env=env, stdin=subprocess.DEVNULL, stdout=out, stderr=err, start_new_session=True
            )
        proc = Proc(popen, argv, cwd, out_path, err_path, time.monotonic(), label)
        self._procs.append(proc)
        return proc

    def headless(
        self,
        task: str,
        cwd: Path,
        *,
        timeout: float = 60,
        patches: list[Path] | None = None,
        env: dict[str, str] | None = None,
        requests: Callable[[], int] | None = None,
    ) -> Run:
        """``dsh --profile headless <task>`` in ``cwd``; waits for the exit (kills the run at ``timeout``).

        ``requests`` (e.g. ``lambda: len(server.requests)``) lets the Run record which model requests it made.
        """
        cwd.mkdir(parents=True, exist_ok=True)
        argv = self._argv(["--profile", "headless"], patches or [], [task])
        first = requests() if requests else 0
        proc = self._spawn(argv, cwd, self.env(**(env or {})), "headless")
        timed_out = False
        try:
            proc.popen.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            timed_out = True
            self.kill_all()
            proc.popen.wait(timeout=10)
        leftovers = self._leftovers_of(proc)
        stdout, stderr = proc.output()
        run = Run(
            argv=argv,
            cwd=cwd,
            returncode=proc.popen.returncode,
            stdout=stdout,
            stderr=stderr,
            seconds=time.monotonic() - proc.started,
            timed_out=timed_out,
            request_range=(first, requests() if requests else 0),
            leftovers=leftovers,
        )
        self.runs.append(run)
        return run

    def start(self, app_args: list[str], cwd: Path, *, patches: list[Path] | None = None, label: str = "dsh") -> Proc:
        """Start a long-running dsh, e.g. ``["web", "--no-open", "--port", "0"]``; stop it with ``stop``."""
        cwd.mkdir(parents=True, exist_ok=True)
        if app_args and app_args[0] == "web":
            argv = self._argv(["web"], patches or [], app_args[1:])
        else:
            argv = self._argv([], patches or [], app_args)
        return self._spawn(argv, cwd, self.env(), label)

    def stop(self, proc: Proc, *, sig: int = signal.SIGTERM, timeout: float = 20) -> int | None:
        """Send ``sig`` to the dsh process and wait for it; SIGKILL everything if it does not exit in time."""
        if proc.popen.poll() is None:
            proc.popen.send_signal(sig)
            try:
                proc.popen.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                self.kill_all()
                proc.popen.wait(timeout=10)
                return None
        return proc.popen.returncode

    # -- processes

    def processes(self) -> list[psutil.Process]:
        """Every live process started for this home (dsh, sidecars, ...), found by its DSH_HOME."""
        found: list[psutil.Process] = []
        me = os.getpid()
        groups = {p.pid for p in self._procs}
        for proc in psutil.process_iter(["pid"]):
            if proc.pid == me:
                continue
            try:
                if proc.status() == psutil.STATUS_ZOMBIE:
                    continue
                if os.getpgid(proc.pid) in groups or proc.environ().get("DSH_HOME") == str(self.path):
                    found.append(proc)
            except (psutil.Error, ProcessLookupError, PermissionError, OSError):
                continue
        return found

    def sidecars(self, root: Proc | None = None) -> list[psutil.Process]:
        """Live ``stratagate serve`` processes of this home (of ``root`` only, if given)."""
        if root is not None:
            try:
                candidates = psutil.Process(root.pid).children(recursive=True)
            except psutil.Error:
                candidates = []
        else:
            candidates = self.processes()
        result = []
        for proc in candidates:
            with contextlib.suppress(psutil.Error):
                if is_sidecar(proc.cmdline()) and proc.status() != psutil.STATUS_ZOMBIE:
                    result.append(proc)
        return result

    def _leftovers_of(self, proc: Proc, grace: float = 15) -> list[str]:
        """Processes of ``proc``'s group still alive after it exited (given ``grace`` seconds to finish)."""
        alive = []
        for p in psutil.process_iter(["pid"]):
            with contextlib.suppress(psutil.Error, ProcessLookupError, OSError):
                if p.pid != os.getpid() and os.getpgid(p.pid) == proc.pid and p.status() != psutil.STATUS_ZOMBIE:
                    alive.append(p)
        if not alive:
            return []
        _, still = psutil.wait_procs(alive, timeout=grace)
        described = []
        for p in still:
            with contextlib.suppress(psutil.Error):
                described.append(f"{p.pid}: {' '.join(p.cmdline())[:200]}")
        return described

    def kill_all(self) -> list[str]:
        """SIGKILL every process of this home (by pid); returns what was still running."""
        killed = []
        for proc in self.processes():
            with contextlib.suppress(psutil.Error):
                killed.append(f"{proc.pid}: {' '.join(proc.cmdline())[:200]}")
                proc.kill()
        for p in self._procs:
            if p.popen.poll() is None:
                with contextlib.suppress(ProcessLookupError):
                    p.popen.kill()
            with contextlib.suppress(subprocess.TimeoutExpired):
                p.popen.wait(timeout=10)
        return killed

    # -- DSH's own records

    def session_ids(self) -> list[str]:
        """DSH session ids, oldest first ($DSH_HOME/sessions/<cwd-slug>/<session-id>/)."""
        root = self.path / "sessions"
        if not root.is_dir():
            return []
        dirs = [d for slug in root.iterdir() if slug.is_dir() for d in slug.iterdir() if d.is_dir()]
        return [d.name for d in sorted(dirs, key=lambda d: d.stat().st_mtime)]

    # -- the StrataGate database

    @property
    def db_path(self) -> Path:
        return self.path / "stratagate" / "memory.db"

    def query(self, sql: str, params: tuple[Any, ...] = ()) -> list[sqlite3.Row]:
        """Read the sidecar database (call while no sidecar is writing, e.g. after a headless run)."""
        if not self.db_path.exists():
            raise AssertionError(f"no StrataGate database at {self.db_path}; files: {self.tree('stratagate')}")
        conn = sqlite3.connect(f"file:{self.db_path}?mode=ro", uri=True, timeout=10)
        conn.row_factory = sqlite3.Row
        try:
            return conn.execute(sql, params).fetchall()
        finally:
            conn.close()

    def sidecar_info(self) -> dict[str, Any]:
        """``python -m stratagate info --db <db>`` with the repo's interpreter."""
        proc = subprocess.run(
            [str(repo_python()), "-m", "stratagate", "info", "--db", str(self.db_path)],
            env={**clean_env(), "PYTHONPATH": str(REPO / "sidecar")},
            capture_output=True,
            text=True,
            timeout=60,
            check=True,
        )
        return json.loads(proc.stdout)

    def tree(self, sub: str = "") -> list[str]:
        root = self.path / sub
        if not root.exists():
            return []
        return sorted(str(p.relative_to(self.path)) for p in root.rglob("*") if "node_modules" not in p.parts)

    def diagnostics(self) -> str:
        """Everything useful for a failure message: runs, processes, StrataGate files and logs."""
        parts = [run.describe() for run in self.runs]
        for proc in self._procs:
            if proc.label != "headless":
                out, err = proc.output()
                state = proc.popen.poll()
                parts.append(
                    f"$ {' '.join(proc.argv)}  ({'running' if state is None else f'exit {state}'})\n"
                    f"--- stdout\n{out[-3000:]}\n--- stderr (tail)\n{err[-8000:]}"
                )
        parts.append(f"stratagate files: {self.tree('stratagate')}")
        logs = sorted(self.logs.glob("*.log"))
        if (self.path / "stratagate").is_dir():
            logs += sorted((self.path / "stratagate").rglob("*.log"))
        for log in logs:
            parts.append(f"--- {log} (tail)\n{log.read_text(errors='replace')[-6000:]}")
        return "\n".join(parts)


def wait_http_json(
    url: str,
    deadline: float,
    proc: Proc | None = None,
    until: Callable[[int, Any], bool] | None = None,
) -> tuple[int, Any]:
    """Poll ``url`` until it answers JSON (and ``until(status, body)`` holds, if given) or ``deadline``
    (a ``time.monotonic()`` value) passes. A 404 or a non-JSON page (the web UI's fallback) counts as "not yet"."""
    last: object = None
    while time.monotonic() < deadline:
        if proc is not None and proc.popen.poll() is not None:
            raise AssertionError(f"dsh exited with {proc.popen.returncode} before {url} answered (last: {last})")
        status, raw = 0, b""
        try:
            with urllib.request.urlopen(url, timeout=5) as resp:
                status, raw = resp.status, resp.read()
        except urllib.error.HTTPError as exc:
            status, raw = exc.code, exc.read()
        except (urllib.error.URLError, ConnectionError, TimeoutError) as exc:
            last = exc
        if status:
            try:
                body = json.loads(raw)
            except ValueError:
                last = f"HTTP {status}, not JSON: {raw[:200]!r}"
            else:
                last = f"HTTP {status}: {body}"
                if status != 404 and (until is None or until(status, body)):
                    return status, body
        time.sleep(0.2)  # polling an HTTP endpoint until it is ready
    raise AssertionError(f"{url} was not ready before the deadline (last: {last})")


def originals_by_call(log: list[dict[str, Any]]) -> dict[str, str]:
    """callId → the text of the ORIGINAL tool/result (the appended one, not a replacement) from the session log."""
    out: dict[str, str] = {}
    for e in log:
        if e.get("type") != "tool/result" or isinstance(e.get("surfaceOp"), dict):
            continue
        for part in (e.get("data") or {}).get("message", {}).get("content") or []:
            if part.get("type") == "tool-result":
                out[str(part.get("toolCallId"))] = "".join(
                    c.get("text", "") for c in part.get("content") or [] if c.get("type") == "text"
                )
    return out
