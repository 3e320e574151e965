"""App start/stop: a start builds nothing ahead (the token encoding is built by the first request that counts or
after the first answer, the secret detector after the first answer), and a stop never waits for a build still
running.

DSH gives a stopping sidecar a short grace period before SIGKILL; a tokenizer build on a loaded machine can take
longer than that, and it writes nothing, so there is nothing to wait for.
"""

from __future__ import annotations

import asyncio
import threading
from pathlib import Path

import pytest

import stratagate.app as app_module
from stratagate.app import App, OnDemand
from stratagate.config import load_settings


@pytest.mark.asyncio
async def test_stop_does_not_wait_for_a_build_still_running(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    release = threading.Event()
    started = threading.Event()

    def slow_tokenizer(text: str) -> int:
        started.set()
        release.wait()  # held until the test lets go: the build is still running when stop() is called
        return len(text)

    monkeypatch.setattr(app_module, "count_tokens", slow_tokenizer)
    app = App(load_settings({"db": tmp_path / "memory.db"}, environ={}))
    await app.start()
    try:
        assert app.tokens_ready is not None and not app.tokens_ready.started()  # nothing built at start
        waiting = asyncio.ensure_future(_wait(app.tokens_ready))
        assert await asyncio.to_thread(started.wait, 30)
        await app.stop()  # returns although the build thread is blocked
        assert not app.tokens_ready.done()
        waiting.cancel()
        assert (tmp_path / "memory.db").exists()
    finally:
        release.set()


async def _wait(ready: OnDemand[int]) -> int:
    return await ready


@pytest.mark.asyncio
async def test_the_first_await_builds_once_for_every_waiter():
    calls: list[str] = []
    gate = threading.Event()

    def build(text: str) -> int:
        calls.append(text)
        gate.wait(30)
        return 7

    ready = OnDemand(build, "x")
    first = asyncio.ensure_future(_wait(ready))
    second = asyncio.ensure_future(_wait(ready))
    await asyncio.sleep(0)
    first.cancel()  # a cancelled waiter does not cancel the build the other one waits for
    gate.set()
    assert await second == 7 and await ready == 7
    assert calls == ["x"] and ready.done()


@pytest.mark.asyncio
async def test_the_first_answer_starts_the_builds_later_requests_need(tmp_path: Path):
    app = App(load_settings({"db": tmp_path / "memory.db"}, environ={}))
    await app.start()
    try:
        assert app.secrets_ready is None and app.tokens_ready is not None and not app.tokens_ready.started()
        app.answered()
        assert app.secrets_ready is not None and app.tokens_ready.started()
        await app.secrets_ready
        assert await app.tokens_ready > 0
    finally:
        await app.stop()


@pytest.mark.asyncio
async def test_an_app_nobody_asks_warms_up_after_a_quiet_start(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    """An App that answers through something else than `serve` (the page, the MCP server, the Python API) still gets
    its warm-ups: once the start has been quiet for a while."""
    monkeypatch.setattr(app_module, "QUIET_START_S", 0.01)
    app = App(load_settings({"db": tmp_path / "memory.db"}, environ={}))
    await app.start()
    try:
        await asyncio.wait_for(app._answered.wait(), 30)
        assert app.tokens_ready is not None and app.tokens_ready.started() and app.secrets_ready is not None
        assert await app.tokens_ready > 0
    finally:
        await app.stop()
