"""A team DSN as it may be shown: host, port and database, never the user's password or the query's secrets."""

from __future__ import annotations

from urllib.parse import urlsplit


def shown(dsn: str) -> str:
    """``postgresql://host:5432/db`` from any DSN form asyncpg takes; ``(unreadable DSN)`` when it cannot be read.
    The user name is kept (it names the team's role, no secret); the password and every query option are dropped."""
    try:
        parts = urlsplit(dsn)
        host = parts.hostname or "localhost"
        port = f":{parts.port}" if parts.port else ""
        user = f"{parts.username}@" if parts.username else ""
    except ValueError:
        return "(unreadable DSN)"
    if parts.scheme not in ("postgres", "postgresql"):
        return "(unreadable DSN)"
    return f"{parts.scheme}://{user}{host}{port}{parts.path}"
