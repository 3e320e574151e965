"""The hooks a lower package calls and a higher one provides, registered in one place and explicitly.

Importing a package has no side effect: ``App`` calls ``register_hooks`` when it is built, and every entry point
that writes through the stores without an App (the CLI's database commands, benches, tests) calls it before its
first write.
"""

from __future__ import annotations

from stratagate.events import team
from stratagate.events.store import on_status_change
from stratagate.graph.store import follow_event_status


def register_hooks() -> None:
    """Facts follow the events that support them: when an event's status changes, so do the facts it alone holds
    up, in the same transaction (the graph is a projection of events; events do not import the graph).
    A team memory's status change goes to the team outbox in the same transaction (events/team.py).
    Registering twice is harmless."""
    on_status_change(follow_event_status)
    on_status_change(team.on_status)
