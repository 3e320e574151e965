"""Requests first: the server marks each request it answers as busy, and a maintenance pass runs its next slice
only when no other request is in flight (or after ``MAX_WAIT_S``, so a long request never starves maintenance).

A pass started by a request (``maintenance.run``) does not wait for itself: the request that runs it is exempt.

A step that cannot be cut into short slices (an FTS merge step, the WAL checkpoint) waits for a quiet spell instead
(``idle``): no request for ``QUIET_S``. Requests come in bursts (a turn's render, then its capture, seconds apart), so
such a step then runs between bursts, not beside one; under a steady stream of requests it is left to a later pass."""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import time
from collections.abc import Awaitable, Callable, Iterator

from stratagate.storage.db import WriteLock

MAX_WAIT_S = 0.25
QUIET_S = 0.05  # how long no request must have been in flight before an unsliced step runs
PATIENCE_S = 1.0  # how long such a step waits for a quiet spell before it is left to a later pass

Pause = Callable[[], Awaitable[None]]
"""What a pass awaits between two slices."""

Hold = Callable[[WriteLock], Awaitable[None]]
"""What a pass awaits between two slices that share a transaction (it still holds ``WriteLock``)."""

Idle = Callable[[], Awaitable[bool]]
"""What a pass awaits before an unsliced step: True when it may run now, False when it is left for later."""

_IN_REQUEST: contextvars.ContextVar[bool] = contextvars.ContextVar("in_request", default=False)


class Gate:
    def __init__(self) -> None:
        self._busy = 0
        self._exempt = 0
        self._quiet = asyncio.Event()
        self._quiet.set()
        self._last_end = float("-inf")  # time.monotonic() when the last request was answered
        self._since_answer = 0  # slices a pass ran since then
        self._arrived = asyncio.Event()  # set when a request starts

    def _update(self) -> None:
        if self._busy <= self._exempt:
            self._quiet.set()
        else:
            self._quiet.clear()

    @contextlib.contextmanager
    def busy(self) -> Iterator[None]:
        """Around a request: maintenance waits until it is answered."""
        self._busy += 1
        token = _IN_REQUEST.set(True)
        self._arrived.set()
        self._update()
        try:
            yield
        finally:
            _IN_REQUEST.reset(token)
            self._busy -= 1
            self._last_end, self._since_answer = time.monotonic(), 0
            self._update()

    @contextlib.contextmanager
    def running(self) -> Iterator[None]:
        """Around a pass: when a request runs it, that request is not one to wait for."""
        exempt = _IN_REQUEST.get()
        self._exempt += exempt
        self._update()
        try:
            yield
        finally:
            self._exempt -= exempt
            self._update()

    def waiting(self) -> bool:
        """Whether a request is in flight now: a slice that sees one stops at its next step, not at its time limit."""
        return not self._quiet.is_set()

    async def _paced(self, lock: WriteLock | None = None) -> None:
        """After a request was answered the pass runs one slice, then waits for the next request until ``QUIET_S``
        after the answer: the client of a burst gets a core to read its answer and send its next request, instead of
        waiting for one while slices run (what it waits would count as its request's CPU), and a steady stream of
        requests still gets one slice between two requests, as without this."""
        self._since_answer += 1
        left = QUIET_S - (time.monotonic() - self._last_end)
        if self._since_answer > 1 and left > 0 and self._quiet.is_set() and not (lock and lock.wanted()):
            self._arrived.clear()
            await _first(left, self._arrived, lock.asked if lock else None)

    async def turn(self) -> None:
        """Between two slices: let whatever is ready run, then wait for the requests in flight."""
        await asyncio.sleep(0)
        await self._paced()
        if not self._quiet.is_set():
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._quiet.wait(), MAX_WAIT_S)

    async def hold(self, lock: WriteLock) -> None:
        """Between two slices that share a transaction: as ``turn``, but a write that asks for ``lock`` (a capture
        in flight) ends the wait at once, so the pass commits and lets it go first."""
        await asyncio.sleep(0)
        lock.asked.clear()
        await self._paced(lock)
        if self._quiet.is_set() or lock.wanted():
            return
        await _first(MAX_WAIT_S, self._quiet, lock.asked)

    async def idle(self, quiet: float = QUIET_S, patience: float = PATIENCE_S) -> bool:
        """Wait until no request has been in flight for ``quiet`` seconds: True then, False after ``patience``."""
        deadline = time.monotonic() + patience
        while True:
            now = time.monotonic()
            if self._quiet.is_set() and now - self._last_end >= quiet:
                return True
            if now >= deadline:
                return False
            if not self._quiet.is_set():
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(self._quiet.wait(), deadline - now)
            else:
                await asyncio.sleep(min(quiet - (now - self._last_end), deadline - now))


async def _first(limit_s: float, *events: asyncio.Event | None) -> None:
    """Wait until one of ``events`` is set, ``limit_s`` seconds at most."""
    waits = {asyncio.ensure_future(e.wait()) for e in events if e is not None}
    try:
        await asyncio.wait(waits, timeout=limit_s, return_when=asyncio.FIRST_COMPLETED)
    finally:
        for w in waits:
            w.cancel()


async def no_wait() -> None:
    """The pause of a pass nobody waits for: yield the loop only."""
    await asyncio.sleep(0)


async def always_idle() -> bool:
    """``Gate.idle`` of a pass nobody waits for: run now."""
    return True


def never() -> bool:
    """``Gate.waiting`` of a pass nobody waits for."""
    return False
