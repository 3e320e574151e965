"""Resolving namespace and session names; every read below starts from a namespace id."""

from __future__ import annotations

from stratagate.errors import not_found
from stratagate.storage.db import Database


async def namespace_id(db: Database, name: str) -> int:
    key = await db.scalar("SELECT id FROM namespaces WHERE name = ?", (name,))
    if key is None:
        raise not_found(f"unknown namespace {name!r}: no turn has been captured in it yet")
    return int(key)


async def session_id(db: Database, ns_id: int, key: str) -> int | None:
    value = await db.scalar("SELECT id FROM sessions WHERE namespace_id = ? AND key = ?", (ns_id, key))
    return None if value is None else int(value)
