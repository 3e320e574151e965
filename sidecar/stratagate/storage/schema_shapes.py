"""Migration 13: what incremental maintenance keeps between passes.

``event_shapes`` holds, per active event and text field (0 summary, 1 narrative), the bucket that a near duplicate
must share (namespace, type, time status, scope, session for session scope, the field, its numbers, its negation) and
its words as short hashes (never the words themselves: an erased memory leaves no readable trace here);
``event_shape_prefix`` indexes the prefix words of each shape (the prefix filter of set-similarity joins), so a pass
finds an event's candidates by index instead of comparing all pairs. Both are derived from ``events`` and rebuilt by
a full pass. ``maintenance_cursors`` holds each step's watermark and the position of an unfinished sweep.
"""

from __future__ import annotations

SHAPES_SQL = """
CREATE TABLE event_shapes(
  event_id INTEGER NOT NULL REFERENCES events(id),
  field INTEGER NOT NULL CHECK (field IN (0, 1)),
  bucket TEXT NOT NULL,
  size INTEGER NOT NULL,
  words TEXT NOT NULL,
  PRIMARY KEY(event_id, field)
) STRICT;
CREATE TABLE event_shape_prefix(
  bucket TEXT NOT NULL,
  token TEXT NOT NULL,
  event_id INTEGER NOT NULL REFERENCES events(id),
  field INTEGER NOT NULL,
  PRIMARY KEY(bucket, token, event_id, field)
) STRICT, WITHOUT ROWID;
CREATE INDEX event_shape_prefix_by_event ON event_shape_prefix(event_id);
CREATE TABLE maintenance_cursors(
  step TEXT PRIMARY KEY,
  state TEXT NOT NULL CHECK (json_valid(state)),
  updated_at TEXT NOT NULL
) STRICT;
"""
