"""App start/stop: a stop right after start never waits for the in-memory warm-ups (tokenizer, secret patterns).

DSH gives a stopping sidecar a short grace period before SIGKILL; a tokenizer build on a loaded machine can take
longer than that, and it writes nothing, so there is nothing to wait for.
"""

from __future__ import annotations

import asyncio
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


@pytest.mark.asyncio
async def test_warm_later_leaves_the_secret_detector_to_the_first_answer(tmp_path: Path):
    """`stratagate serve` starts with ``warm_later``: the detector's warm-up starts with ``warm_up`` (after its first
    answer) or with the first write that needs it, once either way."""
    app = App(load_settings({"db": tmp_path / "memory.db"}, environ={}))
    await app.start(warm_later=True)
    try:
        assert app.tokens_ready is not None and app.secrets_ready is None
        detector = app.secret_detector()
        assert app.secret_detector() is detector
        app.warm_up()
        assert app.secrets_ready is detector
        await detector
    finally:
        await app.stop()


@pytest.mark.asyncio
async def test_the_server_starts_the_other_warm_ups_after_its_first_answer():
    """A recall is answered without the secret detector; the first answer starts the rest; a method that may write
    waits for the detector (here one that does not exist: it waits, then is not found)."""
    from stratagate.rpc.server import _Dispatcher

    loop = asyncio.get_running_loop()
    warmed = loop.create_future()
    detector_asked: list[str] = []

    class Stub:
        shutdown_requested = asyncio.Event()

        def secret_detector(self) -> asyncio.Future[None]:
            detector_asked.append("asked")
            built = loop.create_future()
            built.set_result(None)
            return built

        def warm_up(self) -> None:
            warmed.set_result(True)

    dispatch = _Dispatcher(Stub())  # type: ignore[arg-type]
    reply = await dispatch({"jsonrpc": "2.0", "id": 1, "method": "system.ping"})
    assert reply["result"]["pong"] is True
    assert not warmed.done() and detector_asked == []
    assert await asyncio.wait_for(warmed, 5)
    reply = await dispatch({"jsonrpc": "2.0", "id": 2, "method": "no.such.method"})
    assert reply["error"]["code"] == -32601
    assert detector_asked == ["asked"]
