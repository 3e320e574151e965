"""Migration 10: recall stays flat as memory grows (issue 14).

- ``events_pinned``, ``events_safety``: partial indexes for the two lists activation reads on every step (pinned
  events; active safety-critical events), which were full scans of ``events``.
- ``events_current_by_fingerprint``: the exact-duplicate check of every admission reads current events by
  fingerprint in the namespace and in the user tier of the others, which ``events_by_fingerprint`` (namespace
  first) serves for the first branch only.
"""

RECALL_SQL = """
CREATE INDEX events_pinned ON events(pinned, id) WHERE pinned = 1;
CREATE INDEX events_safety ON events(criticality, status, pinned, id) WHERE criticality = 'safety';
CREATE INDEX events_current_by_fingerprint ON events(fingerprint, status);
"""
