"""Per-step timings of a pass: each stretch of work between two pauses (a slice, a merge step, the report) is
one segment, with the step that ran it, its wall start (``time.monotonic``, comparable across processes on one
machine), its wall length and the process CPU it spanned.

With ``SINK`` set to a file path, every segment of a pass is appended there as a JSON line when the pass ends;
bench/bench_maintenance.py ``--trace`` sets it in the sidecar it starts and tells from the segments which step ran
while a slow request was answered. Without it nothing is recorded.
"""

from __future__ import annotations

import json
import time

from stratagate.maintenance.gate import Hold, Pause
from stratagate.storage.db import WriteLock

SINK: str | None = None
"""Where a pass appends its segments (None: nowhere); a profiler sets it."""


class Trace:
    def __init__(self, pause: Pause) -> None:
        self._pause = pause
        self.step = "start"
        self.segments: list[tuple[str, float, float, float, str]] = []
        self._t0, self._cpu0 = time.monotonic(), time.process_time()

    def mark(self, end: str = "step") -> None:
        """End the current segment: at a pause (after a commit), a hold (no commit) or the end of a step."""
        if not SINK:  # nobody reads them: a pass keeps no list that grows with the database
            return
        t, cpu = time.monotonic(), time.process_time()
        self.segments.append((self.step, self._t0, t - self._t0, cpu - self._cpu0, end))

    def resume(self) -> None:
        self._t0, self._cpu0 = time.monotonic(), time.process_time()

    def enter(self, step: str) -> None:
        """Start ``step``: what ran since the last pause counts for the step before."""
        self.mark()
        self.step = step
        self.resume()

    async def pause(self) -> None:
        self.mark("pause")
        await self._pause()
        self.resume()

    def holding(self, hold: Hold | None) -> Hold | None:
        """``hold`` with its waits ending segments too, as ``pause``'s do."""
        if hold is None:
            return None
        inner = hold

        async def traced(lock: WriteLock) -> None:
            self.mark("hold")
            await inner(lock)
            self.resume()

        return traced

    def write(self) -> None:
        if not SINK:
            return
        with open(SINK, "a", encoding="utf-8") as fh:
            for step, t0, wall, cpu, end in self.segments:
                fh.write(json.dumps({"step": step, "t0": t0, "wall_ms": wall * 1000, "cpu_ms": cpu * 1000,
                                     "end": end}) + "\n")
