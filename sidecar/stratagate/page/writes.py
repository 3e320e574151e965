"""What every write route of the Memory page shares: the actor, the namespace and event lookups (an id of another
namespace is as unknown as a missing one), and the ``audit_ids`` every result carries."""

from __future__ import annotations

from typing import Annotated

from pydantic import BaseModel, ConfigDict, StringConstraints

from stratagate import ids
from stratagate.errors import Invalid, NotFound
from stratagate.events import store
from stratagate.events.models import EventRow
from stratagate.protocol.types import Name, Result
from stratagate.storage import lookup
from stratagate.storage.sqlite import Connection

ACTOR = "user"
"""Every page write is the user's own (the page is their admin view)."""

EventRef = Annotated[str, StringConstraints(min_length=1, max_length=64)]


class Params(BaseModel):
    """Params of a write route: unknown fields are refused (a typo is a 400 naming it, never silently ignored)."""

    model_config = ConfigDict(extra="forbid")


class NamespaceParams(Params):
    namespace: Name


class Written(Result):
    """Every write result names the audit entries it wrote (``page.undo`` takes one of them)."""

    audit_ids: list[int]


async def namespace_id(conn: Connection, name: str) -> int:
    key = await lookup.namespace_key(conn, name)
    if key is None:
        raise NotFound(f"unknown namespace {name!r}")
    return key


def event_key(value: str, field: str = "id") -> int:
    key = ids.parse(value, "evt")
    if key is None:
        raise Invalid(f"{field} must be an event id like 'evt_12' (got {value!r})", {"field": field})
    return key


async def event_of(conn: Connection, ns: int, value: str, field: str = "id") -> EventRow:
    """The event ``value`` of namespace ``ns`` (404 for one of another namespace: the page shows only its own)."""
    ev = await store.get_event(conn, event_key(value, field))
    if ev is None or ev.namespace_id != ns:
        raise NotFound(f"unknown event {value} in this namespace")
    return ev
