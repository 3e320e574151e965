"""Event-loop stall monitor: how late a periodic timer fires says how long the loop was blocked.

Anything that holds the loop (CPU work on it, a blocking call, a C extension keeping the GIL in another thread)
delays every callback, so the lateness of one repeating ``call_at`` is a cheap, always-on measure of it (the idea
of Node's ``monitorEventLoopDelay``). A stall of S ms shows as a lateness of at least S - INTERVAL_MS.

Lateness also grows when the machine is overloaded (the process is not scheduled) or another thread holds the
GIL. So each tick also records the CPU time the loop's own thread spent since the previous one ("busy"): the
length of our own work on the loop, which a loaded machine barely inflates.
Reported by ``system.info`` as ``loop`` (docs/protocol.md).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from datetime import UTC, datetime

from stratagate.timeutil import to_iso

INTERVAL_S = 0.01
STALL_MS = 20.0
"""A lateness over this counts as a stall (issue 14's limit for any single step on the loop)."""


class StallMonitor:
    def __init__(self, interval_s: float = INTERVAL_S, observer: Callable[[float], None] | None = None):
        self.interval_s = interval_s
        self.observer = observer  # called with each tick's lateness in ms (tests wait on it)
        self.max_stall_ms = 0.0
        self.stalls = 0
        self.max_busy_ms = 0.0
        self.busy_stalls = 0
        self._cpu = 0.0
        self.ticks = 0
        self.since: str | None = None
        self._handle: asyncio.TimerHandle | None = None
        self._due = 0.0

    def start(self) -> None:
        loop = asyncio.get_running_loop()
        self.since = to_iso(datetime.now(UTC))
        self._due = loop.time() + self.interval_s
        self._cpu = time.thread_time()
        self._handle = loop.call_at(self._due, self._tick, loop)

    def _tick(self, loop: asyncio.AbstractEventLoop) -> None:
        now = loop.time()
        late_ms = (now - self._due) * 1000
        self.ticks += 1
        if late_ms > self.max_stall_ms:
            self.max_stall_ms = late_ms
        if late_ms > STALL_MS:
            self.stalls += 1
        cpu = time.thread_time()
        busy_ms = (cpu - self._cpu) * 1000
        self._cpu = cpu
        if busy_ms > self.max_busy_ms:
            self.max_busy_ms = busy_ms
        if busy_ms > STALL_MS:
            self.busy_stalls += 1
        self._due = now + self.interval_s  # measured from now: one long stall counts once, not once per interval
        self._handle = loop.call_at(self._due, self._tick, loop)
        if self.observer is not None:
            self.observer(late_ms)

    def stop(self) -> None:
        if self._handle is not None:
            self._handle.cancel()
            self._handle = None

    def info(self) -> dict[str, object]:
        return {
            "interval_ms": round(self.interval_s * 1000, 3),
            "max_stall_ms": round(self.max_stall_ms, 1),
            "stalls_over_20ms": self.stalls,
            "max_busy_ms": round(self.max_busy_ms, 1),
            "busy_over_20ms": self.busy_stalls,
            "ticks": self.ticks,
            "since": self.since,
        }
