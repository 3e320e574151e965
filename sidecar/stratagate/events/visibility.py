"""Which events a viewer (namespace N, session S) may see: the one rule, as SQL and as Python.

Memory has three tiers:

- **session**: a ``session``-scoped event, only in its own session;
- **project**: every other event, in its own namespace (one per project, or the session/global space);
- **user**: a ``user``-scoped event is also seen in every other namespace of the same database (the same DSH home),
  when both namespaces share the user tier (``namespaces.user_tier`` = 1, the default; 0 opts a namespace out of
  sharing its user-scope events and of seeing the others').

So an event is visible when it is in the viewer's namespace (a session-scoped one only in its session), or it is
user-scoped, in another namespace, and both namespaces have ``user_tier`` = 1. A viewer namespace that has no row
yet (nothing was stored in it) has the default tier. ``where`` and :meth:`Viewer.sees` must agree
(tests/test_user_tier.py checks them against each other over random data); every event reader uses one of them.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

from stratagate.storage import lookup
from stratagate.storage.sqlite import Connection

Tier = Literal["user", "project", "session", "team"]


def tier_of(scope: str) -> Tier:
    return "user" if scope == "user" else "session" if scope == "session" else "project"


@dataclass(frozen=True)
class Viewer:
    """Who is looking: a namespace (None when it has no row yet), a session (None: none or not known), and whether
    the namespace shares the user tier."""

    namespace_id: int | None
    session_id: int | None
    user_tier: bool = True

    def sees(
        self, *, namespace_id: int, scope: str, session_id: int | None, owner_user_tier: bool | None
    ) -> bool:
        if namespace_id == self.namespace_id:
            return scope != "session" or (self.session_id is not None and session_id == self.session_id)
        return scope == "user" and self.user_tier and bool(owner_user_tier)

    def foreign(self, namespace_id: int) -> bool:
        """Is an item of ``namespace_id`` seen here only through the user tier?"""
        return namespace_id != self.namespace_id


async def viewer(conn: Connection, namespace_id: int | None, session_id: int | None) -> Viewer:
    """The viewer with its namespace's user-tier setting (the default when the namespace has no row yet)."""
    tier = await lookup.namespace_user_tier(conn, namespace_id) if namespace_id is not None else None
    return Viewer(namespace_id, session_id, True if tier is None else tier)


def where(namespace_id: int | None, session_id: int | None, alias: str = "e") -> tuple[str, list[Any]]:
    """The rule as an SQL condition on events ``alias`` and its parameters. The viewer's tier is read in the same
    statement (a namespace without a row has the default, 1)."""
    a = alias
    sql = (
        f"(({a}.namespace_id IS ? AND ({a}.scope <> 'session' OR {a}.session_id IS ?))"
        f" OR ({a}.scope = 'user' AND {a}.namespace_id IS NOT ?"
        f" AND COALESCE((SELECT vt.user_tier FROM namespaces vt WHERE vt.id IS ?), 1) = 1"
        f" AND EXISTS (SELECT 1 FROM namespaces ot WHERE ot.id = {a}.namespace_id AND ot.user_tier = 1)))"
    )
    return sql, [namespace_id, session_id, namespace_id, namespace_id]


def scope_condition(scope: str, alias: str = "e") -> tuple[str, list[Any]]:
    """Events of one scope as a filter shows it: ``team`` is a team memory (stored as a project memory with its
    member, events/team.py), and ``project`` the project memories that are not team memories."""
    if scope == "team":
        return f"{alias}.team_member IS NOT NULL", []
    return f"{alias}.scope = ? AND {alias}.team_member IS NULL", [scope]


def where_any_session(namespace_id: int | None, alias: str = "e") -> tuple[str, list[Any]]:
    """As :func:`where`, but every session of the viewer's own namespace counts (forgotten words stay hidden from
    every session of the namespace, only their ids are not shown: events/forgotten.py)."""
    a = alias
    sql = (
        f"({a}.namespace_id IS ?"
        f" OR ({a}.scope = 'user' AND {a}.namespace_id IS NOT ?"
        f" AND COALESCE((SELECT vt.user_tier FROM namespaces vt WHERE vt.id IS ?), 1) = 1"
        f" AND EXISTS (SELECT 1 FROM namespaces ot WHERE ot.id = {a}.namespace_id AND ot.user_tier = 1)))"
    )
    return sql, [namespace_id, namespace_id, namespace_id]
