"""Recall's searches (events, graph nodes) remembered per connection until the database changes.

A step's queries repeat step after step: the human message for the whole turn, the recent turns' words until the next
capture. While nothing is committed their answers cannot change (a search reads stored state only, no clock), so they
are kept under the version of the database the connection reads (storage/read_version.py: only the reader, outside a
transaction, can tell). An answer computed while a commit lands is kept under the version read before it, which no
later search reads again.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

from stratagate.events import store as events
from stratagate.events.models import EventRow
from stratagate.graph import read as graph_read
from stratagate.graph.store import NodeRow
from stratagate.storage.read_version import read_version
from stratagate.storage.sqlite import Connection, caches

MAX_ANSWERS = 64
"""Answers kept per database version (a turn's steps ask a handful of distinct queries)."""
_CACHE = __name__
"""This module's entry in the connection's ``caches``: (data_version, {key: answer})."""

T = TypeVar("T")


async def event_search(
    conn: Connection, ns: int | None, sess: int | None, match: str, statuses: list[str], limit: int
) -> list[tuple[EventRow, float | None]]:
    """``events.search(conn, ns, sess, match, statuses, None, limit)``, remembered."""
    key = ("events", ns, sess, match, tuple(statuses), limit)
    return list(await _remembered(conn, key, lambda: events.search(conn, ns, sess, match, statuses, None, limit)))


async def node_search(
    conn: Connection, ns: int, sess: int | None, match: str, limit: int
) -> list[tuple[NodeRow, float | None]]:
    """``graph.read.search(conn, ns, sess, match, None, limit)``, remembered."""
    key = ("nodes", ns, sess, match, limit)
    return list(await _remembered(conn, key, lambda: graph_read.search(conn, ns, sess, match, None, limit)))


async def _remembered(conn: Connection, key: tuple[Any, ...], compute: Callable[[], Awaitable[T]]) -> T:
    answers = await _answers(conn)
    if answers is None:
        return await compute()
    if key in answers:
        found: T = answers[key]
        return found
    answer = await compute()
    if len(answers) >= MAX_ANSWERS:
        answers.clear()
    answers[key] = answer
    return answer


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
