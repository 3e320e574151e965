"""Knowledge graph: nodes, typed edges and facts with validity windows, projected from events.

Facts follow the events that support them through the event store's status hook (``graph.store.follow_event_status``),
registered by ``stratagate.wiring.register_hooks``: importing this package registers nothing.
"""
