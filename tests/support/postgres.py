"""A throw-away real PostgreSQL server for tests (team memory, stratagate/team/): never a mock.

    server = PostgresServer()
    server.start()                       # initdb in a temp folder, then postgres on 127.0.0.1:<free port>
    server.create_database("t1")
    dsn = server.dsn("t1")               # postgresql://stratagate@127.0.0.1:<port>/t1
    server.restart()                     # same port, same data
    server.cleanup()                     # stops it and removes the folder

The server comes from Debian's `postgresql` package (scripts/bootstrap.sh installs it): the newest
/usr/lib/postgresql/<version>/bin. Without it start() raises RuntimeError, so the tests that need it fail, never skip.

It is tuned for speed, not durability (fsync, synchronous_commit and full_page_writes off) and trusts every local
connection. initdb and postgres refuse to run as root: as root they run as Debian's `postgres` system user through
`runuser`, in a folder chown'ed to that user. runuser stays as a watching parent (it does not exec) that ignores
SIGINT and turns SIGTERM into SIGTERM-then-SIGKILL, so stop() signals the postmaster itself (postmaster.pid).

Standard library only: psql and pg_isready come from the same bin folder as the server.
"""

from __future__ import annotations

import contextlib
import glob
import os
import pwd
import shutil
import signal
import socket
import subprocess
import tempfile
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

POSTGRES_GLOB = "/usr/lib/postgresql/*/bin/postgres"
SYSTEM_USER = "postgres"  # created by Debian's package; the server runs as it when the tests run as root


def postgres_bin() -> Path:
    """The newest installed server's bin folder (/usr/lib/postgresql/<major>/bin)."""
    found = [Path(p).parent for p in glob.glob(POSTGRES_GLOB)]
    if not found:
        raise RuntimeError(
            f"no PostgreSQL server found ({POSTGRES_GLOB}): install Debian's `postgresql` package "
            "(apt-get install --no-install-recommends postgresql; scripts/bootstrap.sh does)"
        )
    return max(found, key=lambda b: int(b.parent.name) if b.parent.name.isdigit() else -1)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def quote_ident(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


@dataclass
class PostgresServer:
    user: str = "stratagate"  # the superuser initdb creates; every DSN connects as it
    deadline_s: float = 60.0  # for start-up, shutdown and each psql call
    port: int = 0  # chosen on the first start, kept by restart()
    root: Path | None = field(default=None, init=False)  # the temp folder: data/, the unix socket, postgres.log
    _bin: Path | None = field(default=None, init=False)
    _process: subprocess.Popen[bytes] | None = field(default=None, init=False)

    # ------------------------------------------------------------------ paths and commands
    @property
    def data(self) -> Path:
        assert self.root is not None
        return self.root / "data"

    @property
    def log(self) -> Path:
        assert self.root is not None
        return self.root / "postgres.log"

    @property
    def running(self) -> bool:
        return self._process is not None and self._process.poll() is None

    def dsn(self, dbname: str = "postgres") -> str:
        return f"postgresql://{self.user}@127.0.0.1:{self.port}/{dbname}"

    def _tool(self, name: str) -> str:
        assert self._bin is not None
        return str(self._bin / name)

    @staticmethod
    def _as_server_user(argv: list[str]) -> list[str]:
        # initdb and postgres exit with "cannot be run as root"; Debian's package made the `postgres` user.
        return ["runuser", "-u", SYSTEM_USER, "--", *argv] if os.geteuid() == 0 else argv

    @staticmethod
    def _client_env() -> dict[str, str]:
        # No PG* variable of the caller's (PGHOST, PGSSLMODE, ...) may redirect the clients.
        env = {k: v for k, v in os.environ.items() if not k.startswith("PG")}
        env["PGCONNECT_TIMEOUT"] = "5"
        return env

    # ------------------------------------------------------------------ lifecycle
    def start(self) -> None:
        """initdb on the first call, then run postgres and return once it accepts connections."""
        if self.running:
            return
        if self.root is None:
            self._bin = postgres_bin()
            self.root = Path(tempfile.mkdtemp(prefix="stratagate-pg-"))
            if os.geteuid() == 0:
                account = pwd.getpwnam(SYSTEM_USER)
                os.chown(self.root, account.pw_uid, account.pw_gid)
            try:
                self._initdb()
            except BaseException:
                self.cleanup()  # no half-made data folder for the next start() to reuse
                raise
        if self.port:
            self._launch()  # a restart: the same port
            return
        # A fresh port can be taken by someone else between free_port() and postgres's bind: try another.
        for attempt in range(3):
            self.port = free_port()
            try:
                self._launch()
                return
            except RuntimeError:
                if attempt == 2 or "could not bind" not in self._log_tail():
                    raise

    def _initdb(self) -> None:
        argv = [self._tool("initdb"), "-D", str(self.data), "-U", self.user, "--auth=trust", "--encoding=UTF8",
                "--locale=C", "--no-sync", "--no-instructions"]
        result = subprocess.run(self._as_server_user(argv), cwd=self.root, capture_output=True, text=True,
                                timeout=self.deadline_s, check=False)
        if result.returncode != 0:
            raise RuntimeError(f"initdb failed ({result.returncode}):\n{result.stdout}{result.stderr}")

    def _launch(self) -> None:
        argv = [
            self._tool("postgres"), "-D", str(self.data), "-p", str(self.port),
            "-c", "listen_addresses=127.0.0.1",
            "-c", f"unix_socket_directories={self.root}",  # not /var/run/postgresql: throw-away, per server
            "-c", "fsync=off", "-c", "synchronous_commit=off", "-c", "full_page_writes=off",
            "-c", "max_connections=100",
        ]
        with open(self.log, "ab") as log:  # postgres logs to stderr; the child keeps its own copy of the fd
            self._process = subprocess.Popen(self._as_server_user(argv), cwd=self.root, stdin=subprocess.DEVNULL,
                                             stdout=log, stderr=subprocess.STDOUT)
        deadline = time.monotonic() + self.deadline_s
        while True:
            if self._process.poll() is not None:
                self._process = None
                raise RuntimeError(f"postgres exited while starting:\n{self._log_tail()}")
            # pg_isready makes a real connection attempt: 0 once the server accepts connections.
            ready = subprocess.run(
                [self._tool("pg_isready"), "-q", "-h", "127.0.0.1", "-p", str(self.port), "-U", self.user,
                 "-d", "postgres", "-t", "5"],
                env=self._client_env(), timeout=self.deadline_s, check=False,
            )
            if ready.returncode == 0:
                return
            if time.monotonic() > deadline:
                self.stop()
                raise RuntimeError(f"postgres did not accept connections within {self.deadline_s} s:\n"
                                   f"{self._log_tail()}")
            time.sleep(0.05)  # the poll interval, not a synchronisation

    def _postmaster_pid(self) -> int | None:
        # The postmaster's pid: the first line of its lock file (written before it accepts connections).
        try:
            return int((self.data / "postmaster.pid").read_text().split("\n", 1)[0])
        except (OSError, ValueError):
            return None

    def stop(self) -> None:
        """Fast shutdown (SIGINT: ends open sessions, checkpoints) and wait until the process exited."""
        process, self._process = self._process, None
        if process is None or process.poll() is not None:
            return
        # As root, process is runuser: it ignores SIGINT, and on SIGTERM sends postgres SIGTERM (smart shutdown, which
        # waits for every session) and SIGKILL 2 s later. So the postmaster is signalled itself.
        pid = process.pid if os.geteuid() != 0 else self._postmaster_pid()
        steps = [(pid, signal.SIGINT, self.deadline_s), (pid, signal.SIGQUIT, 10.0)] if pid else []  # fast, immediate
        steps.append((process.pid, signal.SIGTERM, 10.0))  # no postmaster.pid yet (as root): through runuser
        for target, sig, wait_s in steps:
            with contextlib.suppress(ProcessLookupError):
                os.kill(target, sig)
            with contextlib.suppress(subprocess.TimeoutExpired):
                process.wait(timeout=wait_s)
                return
        for target in {pid or process.pid, process.pid}:
            with contextlib.suppress(ProcessLookupError):
                os.kill(target, signal.SIGKILL)
        process.wait()

    def restart(self) -> None:
        """Stop, then start again on the same port with the same data."""
        self.stop()
        self.start()

    def cleanup(self) -> None:
        """Stop the server and remove its folder (data, socket, log)."""
        self.stop()
        if self.root is not None:
            shutil.rmtree(self.root, ignore_errors=True)
            self.root = None

    def __enter__(self) -> PostgresServer:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.cleanup()

    def _log_tail(self, lines: int = 30) -> str:
        try:
            return "\n".join(self.log.read_text(errors="replace").splitlines()[-lines:])
        except OSError:
            return "(no log)"

    # ------------------------------------------------------------------ databases
    def psql(self, sql: str, dbname: str = "postgres") -> str:
        """Run SQL through psql as the superuser; its output (unaligned, tuples only)."""
        result = subprocess.run(
            [self._tool("psql"), "-X", "-q", "-A", "-t", "-v", "ON_ERROR_STOP=1", "-h", "127.0.0.1",
             "-p", str(self.port), "-U", self.user, "-d", dbname, "-c", sql],
            env=self._client_env(), capture_output=True, text=True, timeout=self.deadline_s, check=False,
        )
        if result.returncode != 0:
            raise RuntimeError(f"psql failed ({result.returncode}) for {sql!r}:\n{result.stderr}")
        return result.stdout

    def create_database(self, name: str) -> None:
        self.psql(f"CREATE DATABASE {quote_ident(name)}")

    def drop_database(self, name: str) -> None:
        # WITH (FORCE): a connection a test left open does not keep the database alive.
        self.psql(f"DROP DATABASE IF EXISTS {quote_ident(name)} WITH (FORCE)")

    @contextlib.contextmanager
    def database(self, prefix: str = "team") -> Iterator[str]:
        """A fresh database with a unique name; yields its DSN, drops it afterwards (conftest's team_dsn)."""
        name = f"{prefix}_{uuid.uuid4().hex[:16]}"
        self.create_database(name)
        try:
            yield self.dsn(name)
        finally:
            if not self.running:  # a test that stopped the server leaves it running for the next
                self.start()
            self.drop_database(name)
