"""What an agent tool runs with: the database, the settings and the caller (namespace, session, tool call id)."""

from __future__ import annotations

from dataclasses import dataclass

from stratagate.config import Settings
from stratagate.storage.db import Database


@dataclass
class ToolContext:
    db: Database
    settings: Settings
    namespace: str
    session: str
    call_id: str | None
