"""What an agent tool runs with: the database, the settings, the caller (namespace, session, tool call id) and the
app's services a tool may use."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from stratagate.config import Settings
from stratagate.storage.db import Database


@dataclass
class ToolContext:
    db: Database
    settings: Settings
    namespace: str
    session: str
    call_id: str | None
    dense: Any = None
    """The app's dense channel (``search.vectors.DenseIndex``); None: lexical ranking only."""
