"""Knowledge graph: nodes, typed edges and facts with validity windows, projected from events.

Importing the graph registers its status hook with the event store: facts follow the events that support them
(when an event's status changes, so do the facts it alone holds up), in the same transaction.
"""

from stratagate.events.store import on_status_change
from stratagate.graph.store import follow_event_status

on_status_change(follow_event_status)
