"""Requests first: the server marks each request it answers as busy, and a maintenance pass runs its next slice
only when no other request is in flight (or after ``MAX_WAIT_S``, so a long request never starves maintenance).

A pass started by a request (``maintenance.run``) does not wait for itself: the request that runs it is exempt."""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
from collections.abc import Awaitable, Callable, Iterator

MAX_WAIT_S = 0.25

Pause = Callable[[], Awaitable[None]]
"""What a pass awaits between two slices."""

_IN_REQUEST: contextvars.ContextVar[bool] = contextvars.ContextVar("in_request", default=False)


class Gate:
    def __init__(self) -> None:
        self._busy = 0
        self._exempt = 0
        self._quiet = asyncio.Event()
        self._quiet.set()

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
        self._update()
        try:
            yield
        finally:
            _IN_REQUEST.reset(token)
            self._busy -= 1
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

    async def turn(self) -> None:
        """Between two slices: let whatever is ready run, then wait for the requests in flight."""
        await asyncio.sleep(0)
        if not self._quiet.is_set():
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._quiet.wait(), MAX_WAIT_S)


async def no_wait() -> None:
    """The pause of a pass nobody waits for: yield the loop only."""
    await asyncio.sleep(0)


def never() -> bool:
    """``Gate.waiting`` of a pass nobody waits for."""
    return False
