"""Facts follow the events that support them: when an event's status changes, so do the facts it alone holds up."""

from __future__ import annotations

import aiosqlite

from stratagate.events.models import EventRow
from stratagate.storage.db import Actor


async def follow_event(conn: aiosqlite.Connection, event: EventRow, actor: Actor) -> None:
    from stratagate.graph import store

    await store.follow_event_status(conn, event, actor)
