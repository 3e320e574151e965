"""App start/stop: a stop right after start never waits for the in-memory warm-ups (tokenizer, secret patterns).

DSH gives a stopping sidecar a short grace period before SIGKILL; a tokenizer build on a loaded machine can take
longer than that, and it writes nothing, so there is nothing to wait for.
"""

from __future__ import annotations

import threading
from pathlib import Path

import pytest

import stratagate.app as app_module
from stratagate.app import App
from stratagate.config import load_settings


@pytest.mark.asyncio
async def test_stop_does_not_wait_for_a_warm_up_still_running(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    release = threading.Event()
    started = threading.Event()

    def slow_tokenizer(text: str) -> int:
        started.set()
        release.wait()  # held until the test lets go: the warm-up is still running when stop() is called
        return len(text)

    monkeypatch.setattr(app_module, "count_tokens", slow_tokenizer)
    app = App(load_settings({"db": tmp_path / "memory.db"}, environ={}))
    await app.start()
    try:
        assert started.wait(30)
        await app.stop()  # returns although the warm-up thread is blocked
        assert app.tokens_ready is not None and not app.tokens_ready.done()
        assert (tmp_path / "memory.db").exists()
    finally:
        release.set()


@pytest.mark.asyncio
async def test_a_finished_warm_up_resolves_its_future(tmp_path: Path):
    app = App(load_settings({"db": tmp_path / "memory.db"}, environ={}))
    await app.start()
    try:
        assert app.tokens_ready is not None and app.secrets_ready is not None
        assert await app.tokens_ready > 0
        await app.secrets_ready
    finally:
        await app.stop()
