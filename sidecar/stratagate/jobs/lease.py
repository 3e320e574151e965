"""Who runs a job: the owner identity a claimed row carries, and whether that owner is still alive.

An owner is this process: host name, pid, and the process's start identity (the boot id and the process start time
from /proc on Linux, else a random token), so a reused pid is never mistaken for the owner. A ``running`` row is
taken back only when its owner is gone: on this host its pid is dead, a zombie, or now a different process; on any
host its heartbeat is older than the lease timeout.
"""

from __future__ import annotations

import functools
import os
import secrets
import socket
from dataclasses import dataclass
from pathlib import Path


def _boot_id() -> str | None:
    try:
        return Path("/proc/sys/kernel/random/boot_id").read_text().strip() or None
    except OSError:
        return None


def _proc_stat(pid: int) -> tuple[str, str] | None:
    """(state, start time in clock ticks since boot) of a process, or None when /proc has no such process."""
    try:
        raw = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    # "pid (comm) state ppid ..." — comm may hold spaces and parentheses: split after the last ')'.
    fields = raw[raw.rfind(")") + 2 :].split()
    return (fields[0], fields[19]) if len(fields) > 19 else None


@dataclass(frozen=True)
class Owner:
    host: str
    pid: int
    start: str  # "boot_id/start_ticks" on Linux, else "token/<random>"

    @property
    def token(self) -> str:
        return f"{self.host}:{self.pid}:{self.start}"


@functools.cache
def this_process() -> Owner:
    """This process's owner identity (computed once)."""
    pid = os.getpid()
    boot, stat = _boot_id(), _proc_stat(pid)
    start = f"{boot}/{stat[1]}" if boot and stat else f"token/{secrets.token_hex(8)}"
    return Owner(socket.gethostname(), pid, start)


def alive_here(token: str) -> bool | None:
    """Whether the owner named by ``token`` still runs; None when this host cannot tell (another host)."""
    host, _, rest = token.partition(":")
    pid_text, _, start = rest.partition(":")
    if host != socket.gethostname() or not pid_text.isdigit():
        return None
    pid = int(pid_text)
    if start.startswith("token/"):
        # No /proc identity: the pid alone (a reused pid looks alive; the heartbeat bound still applies).
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return False
        except PermissionError:
            return True
        return True
    boot, _, ticks = start.partition("/")
    if boot != _boot_id():
        return False  # the host rebooted since
    stat = _proc_stat(pid)
    return stat is not None and stat[0] not in ("Z", "X") and stat[1] == ticks
