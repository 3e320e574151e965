"""Captures commit in the order they arrived.

The writer lock (storage/db.py) is FIFO, but a capture can reach it late: before the lock it may await the tokenizer
warm-up, and when that future completes, a capture whose first step was already scheduled runs before the earlier
ones that were woken by the completion (seen right after restarts: turns of one session committed out of order).
So the order is fixed at arrival instead: the RPC server gives each capture a place in line as it reads the request
(``take``), and a capture enters the writer lock only after the one before it has (``wait_turn``/``release``).
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Iterator
from contextvars import ContextVar


class Place:
    """One capture's place in line."""

    def __init__(self, before: asyncio.Future[None] | None, mine: asyncio.Future[None]):
        self._before = before
        self._mine = mine

    async def wait_turn(self) -> None:
        """Until the capture that arrived before this one has the writer lock (or has finished without it)."""
        if self._before is not None and not self._before.done():
            # asyncio.wait, not await: a cancelled waiter must not cancel the other capture's future.
            await asyncio.wait([self._before])

    def release(self) -> None:
        """This capture has the writer lock, or will never take it: the next one may go. Idempotent."""
        if not self._mine.done():
            self._mine.set_result(None)


class ArrivalOrder:
    """The line of captures of one sidecar (one writer): places are handed out in arrival order."""

    def __init__(self) -> None:
        self._last: asyncio.Future[None] | None = None

    def take(self) -> Place:
        mine: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        place = Place(self._last, mine)
        self._last = mine
        return place


current_place: ContextVar[Place | None] = ContextVar("stratagate_capture_place", default=None)
"""The place of the capture being handled in this task (set by the RPC server; None when called directly)."""


@contextlib.contextmanager
def holding(place: Place | None) -> Iterator[None]:
    """Run a request with ``place`` as its capture's place; the place is released whatever happens."""
    token = current_place.set(place)
    try:
        yield
    finally:
        current_place.reset(token)
        if place is not None:
            place.release()
