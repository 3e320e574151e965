"""The event-loop stall monitor (stalls.py) and its `loop` section in system.info.

No timing is asserted beyond what blocking the loop guarantees: a loop blocked for 60 ms makes a timer due within
10 ms at least 50 ms late, however loaded the machine is."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

from stratagate.stalls import STALL_MS, StallMonitor
from support.sidecar import SidecarClient


async def test_a_blocked_loop_is_counted_as_one_stall() -> None:
    seen: asyncio.Queue[float] = asyncio.Queue()
    monitor = StallMonitor(observer=seen.put_nowait)
    monitor.start()
    try:
        await seen.get()  # running
        time.sleep(0.06)  # noqa: ASYNC251  (the stimulus: hold the loop; not a synchronisation)
        lateness = await seen.get()
        assert lateness >= 60 - monitor.interval_s * 1000 > STALL_MS
        info = monitor.info()
        assert info["stalls_over_20ms"] >= 1
        assert info["max_stall_ms"] >= lateness - 0.1
        assert info["ticks"] >= 2 and info["since"]
        assert info["busy_over_20ms"] == 0  # sleeping holds the loop without using its CPU
    finally:
        monitor.stop()


async def test_cpu_work_on_the_loop_is_counted_as_busy() -> None:
    seen: asyncio.Queue[float] = asyncio.Queue()
    monitor = StallMonitor(observer=seen.put_nowait)
    monitor.start()
    try:
        await seen.get()
        spent = time.thread_time()
        while time.thread_time() - spent < 0.06:  # 60 ms of this thread's CPU, however long that takes
            pass
        await seen.get()
        assert monitor.max_busy_ms >= 60 and monitor.busy_stalls >= 1
    finally:
        monitor.stop()


async def test_stop_cancels_the_timer() -> None:
    monitor = StallMonitor()
    monitor.start()
    monitor.stop()
    ticks = monitor.ticks
    await asyncio.sleep(0)  # yield once: a cancelled handle never runs
    assert monitor.ticks == ticks and monitor._handle is None


async def test_system_info_reports_the_loop_and_the_tokenizer(tmp_path: Path) -> None:
    client = await SidecarClient.start(tmp_path / "memory.db", env={"STRATAGATE_DENSE": "off"})
    try:
        await client.call("turn.capture", {  # a capture waits for the tokenizer: it is ready afterwards
            "namespace": "proj", "session": "s1", "receipt": "dsh:s1:turn:1", "user": "hello", "assistant": "hi",
            "started_at": "2026-05-01T10:00:00Z", "ended_at": "2026-05-01T10:00:30Z", "end_reason": "stop",
        })  # fmt: skip
        info = await client.call("system.info")
        loop = info["loop"]
        assert set(loop) == {
            "interval_ms", "max_stall_ms", "stalls_over_20ms", "max_busy_ms", "busy_over_20ms", "ticks", "since"
        }  # fmt: skip
        assert loop["interval_ms"] == 10 and loop["max_stall_ms"] >= 0 and loop["stalls_over_20ms"] >= 0
        assert isinstance(loop["since"], str)
        assert info["tokens"]["ready"] is True
        assert info["tokens"]["source"] in ("cache", "built", "converted")
        assert info["tokens"]["build_ms"] > 0
    finally:
        await client.close()
