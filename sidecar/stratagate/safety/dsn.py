"""A PostgreSQL DSN (the team database's) as it may be shown or stored: never with its password.

``shown`` is what logs, errors, ``system.info`` and the Memory page print; ``has_password`` tells a DSN that carries a
credential (which the page refuses to store: memory.db never holds one; asyncpg reads a password from ``PGPASSWORD``
or ``~/.pgpass`` instead); ``masked`` keeps a credential-free DSN as it is and shows the other one.
"""

from __future__ import annotations

import re
from urllib.parse import parse_qs, urlsplit

_KEY_VALUE_PASSWORD = re.compile(r"(?i)(?:^|\s)password\s*=")


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


def has_password(dsn: str) -> bool:
    """Does the DSN carry a password (``user:secret@``, ``?password=``, or libpq's ``password=`` keyword form)?"""
    if _KEY_VALUE_PASSWORD.search(dsn):
        return True
    try:
        parts = urlsplit(dsn)
        return parts.password is not None or any(k.lower() == "password" for k in parse_qs(parts.query))
    except ValueError:
        return True  # unreadable: treated as holding one, so it is never shown or stored


def masked(dsn: str | None) -> str | None:
    """``dsn`` itself when it holds no credential (every option kept), else ``shown(dsn)``."""
    return dsn if dsn is None or not has_password(dsn) else shown(dsn)
