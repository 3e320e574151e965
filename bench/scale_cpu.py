"""CPU time of the sidecar child per request: what the scale bench reports beside wall time.

Wall time on a shared machine is mostly other people's work; the sidecar's own CPU is what our code costs. Linux
exposes every process's CPU clock to its owner (``clock_gettime`` on the clock id ``MAKE_PROCESS_CPUCLOCK(pid,
CPUCLOCK_SCHED)`` = ``(~pid << 3) | 2``): all of the child's threads, in nanoseconds, read without a syscall into
the child. /proc/<pid>/stat's utime + stime counts in ticks of 10 ms, too coarse for one request; it is the
fallback (then the per-request figures are a batch mean)."""

from __future__ import annotations

import os
import time
from collections.abc import Awaitable, Callable
from typing import Any

_TICK = os.sysconf("SC_CLK_TCK")


class ProcessCPU:
    """Seconds of CPU the process ``pid`` has used so far (all threads)."""

    def __init__(self, pid: int):
        self.pid = pid
        self._clock = ((~pid) << 3) | 2
        try:
            time.clock_gettime(self._clock)
            self.precise = True
        except OSError:  # not Linux, or not ours: the tick-counted fallback
            self.precise = False

    def now(self) -> float:
        if self.precise:
            return time.clock_gettime(self._clock)
        with open(f"/proc/{self.pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / _TICK  # utime, stime (fields 14 and 15 of the line)


class Sampler:
    """Wall and sidecar-CPU milliseconds of each awaited request, in two parallel lists."""

    def __init__(self, pid: int):
        self.cpu = ProcessCPU(pid)
        self.wall_ms: list[float] = []
        self.cpu_ms: list[float] = []

    async def __call__(self, request: Callable[[], Awaitable[Any]]) -> Any:
        c, s = self.cpu.now(), time.perf_counter()
        out = await request()
        self.wall_ms.append((time.perf_counter() - s) * 1000)
        self.cpu_ms.append((self.cpu.now() - c) * 1000)
        return out

    def __len__(self) -> int:
        return len(self.wall_ms)


def thread_cpu_ms(fn: Callable[[], Any]) -> tuple[float, float]:
    """(wall ms, this thread's CPU ms) of one call: the floors run in the bench's own process."""
    c, s = time.thread_time(), time.perf_counter()
    fn()
    return (time.perf_counter() - s) * 1000, (time.thread_time() - c) * 1000
