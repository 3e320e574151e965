"""Recall's searches (events, graph nodes) remembered per connection until the database changes.

A step's queries repeat step after step: the human message for the whole turn, the recent turns' words until the next
capture. While nothing is committed their answers cannot change (a search reads stored state only, no clock), so they
are kept under the version of the database the connection reads (storage/read_version.py: only the reader, outside a
transaction, can tell). An answer computed while a commit lands is kept under the version read before it, which no
later search reads again. A render reads the version once (``Memo.of``) for all its searches.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, TypeVar

from stratagate.events import store as events
from stratagate.events.models import EventRow
from stratagate.graph import read as graph_read
from stratagate.graph.store import NodeRow
from stratagate.storage.read_version import read_version
from stratagate.storage.sqlite import Connection, caches

MAX_ANSWERS = 64
"""Answers kept per database version, the least recently used going first (a turn's steps ask the recent turns'
queries again at every step, and a new query per tool round)."""
_CACHE = __name__
"""This module's entry in the connection's ``caches``: (data_version, {key: answer})."""

T = TypeVar("T")


@dataclass(frozen=True)
class Memo:
    """The searches of one render on ``conn``: ``answers`` are those kept for the database version read when the
    render began (None: none may be kept)."""

    conn: Connection
    answers: dict[tuple[Any, ...], Any] | None

    @classmethod
    async def of(cls, conn: Connection) -> Memo:
        return cls(conn, await _answers(conn))

    async def event_search(
        self, ns: int | None, sess: int | None, match: str, statuses: list[str], limit: int
    ) -> list[tuple[EventRow, float | None]]:
        """``events.search(conn, ns, sess, match, statuses, None, limit)``, remembered."""
        key = ("events", ns, sess, match, tuple(statuses), limit)
        conn = self.conn
        return list(await self._remembered(key, lambda: events.search(conn, ns, sess, match, statuses, None, limit)))

    async def node_search(
        self, ns: int, sess: int | None, match: str, limit: int
    ) -> list[tuple[NodeRow, float | None]]:
        """``graph.read.search(conn, ns, sess, match, None, limit)``, remembered."""
        key = ("nodes", ns, sess, match, limit)
        conn = self.conn
        return list(await self._remembered(key, lambda: graph_read.search(conn, ns, sess, match, None, limit)))

    async def _remembered(self, key: tuple[Any, ...], compute: Callable[[], Awaitable[T]]) -> T:
        answers = self.answers
        if answers is None:
            return await compute()
        if key in answers:
            found: T = answers.pop(key)
            answers[key] = found  # the most recently used last
            return found
        answer = await compute()
        # The least recently used answer goes when full: the recent turns' searches, asked at every step of a turn,
        # stay while each step's new tool round adds two (emptying the whole memo made one step in ~30 search them
        # again, ~2.5 ms at 10k events).
        while len(answers) >= MAX_ANSWERS:
            del answers[next(iter(answers))]
        answers[key] = answer
        return answer


async def event_search(
    conn: Connection, ns: int | None, sess: int | None, match: str, statuses: list[str], limit: int
) -> list[tuple[EventRow, float | None]]:
    """One remembered event search (reads the database version: a render uses one ``Memo`` instead)."""
    return await (await Memo.of(conn)).event_search(ns, sess, match, statuses, limit)


async def node_search(
    conn: Connection, ns: int, sess: int | None, match: str, limit: int
) -> list[tuple[NodeRow, float | None]]:
    """One remembered node search (reads the database version: a render uses one ``Memo`` instead)."""
    return await (await Memo.of(conn)).node_search(ns, sess, match, limit)


async def _answers(conn: Connection) -> dict[tuple[Any, ...], Any] | None:
    """The answers kept for the database as this connection sees it now, or None when none may be kept."""
    version = await read_version(conn)
    if version is None:
        return None
    kept = caches(conn)
    held: tuple[int, dict[tuple[Any, ...], Any]] | None = kept.get(_CACHE)
    if held is None or held[0] != version:
        held = kept[_CACHE] = (version, {})  # a new dict: a search still running keeps writing to the old one
    return held[1]
