"""Migration 9: memory without a model, maintenance and the user tier.

- ``blocks.summary_source``: where a ready block's L0–L2 came from: ``model``, ``extractive`` (zero-model mode, by
  rule) or ``fallback`` (by rule because the model jobs failed; upgraded when the model comes back).
  ``blocks.events_source``: the same for the block's extracted events (``model``, ``rules``, ``fallback``).
- ``namespaces.user_tier``: 1 when the namespace shares and sees ``user``-scope events of the other namespaces of
  the same database (the same DSH home); 0 opts out of both.
- ``maintenance_runs``: every real (not dry) maintenance run with its report; the schedule reads the newest one.
- ``event_merges``: the audited, reversible consolidation of a near-duplicate event into a survivor. The merged
  event's lifecycle columns before the merge and the source rows copied to the survivor are recorded, so an unmerge
  restores the state exactly.
"""

MAINTAIN_SQL = """
ALTER TABLE blocks ADD COLUMN summary_source TEXT CHECK (summary_source IN ('model', 'extractive', 'fallback'));
UPDATE blocks SET summary_source = 'model' WHERE status = 'ready';
ALTER TABLE blocks ADD COLUMN events_source TEXT CHECK (events_source IN ('model', 'rules', 'fallback'));

ALTER TABLE namespaces ADD COLUMN user_tier INTEGER NOT NULL DEFAULT 1 CHECK (user_tier IN (0, 1));
CREATE INDEX events_by_scope ON events(scope, status);

CREATE TABLE maintenance_runs(
  id INTEGER PRIMARY KEY,
  trigger TEXT NOT NULL CHECK (trigger IN ('schedule', 'start', 'manual')),
  status TEXT NOT NULL CHECK (status IN ('running', 'done', 'failed')),
  started_at TEXT NOT NULL,
  finished_at TEXT,
  error TEXT,
  report TEXT CHECK (report IS NULL OR json_valid(report))
) STRICT;

CREATE TABLE event_merges(
  id INTEGER PRIMARY KEY,
  namespace_id INTEGER NOT NULL REFERENCES namespaces(id),
  survivor_id INTEGER NOT NULL REFERENCES events(id),
  merged_id INTEGER NOT NULL REFERENCES events(id),
  merged_before TEXT NOT NULL CHECK (json_valid(merged_before)),
  added_sources TEXT NOT NULL DEFAULT '[]' CHECK (json_valid(added_sources) AND json_type(added_sources) = 'array'),
  similarity REAL NOT NULL CHECK (similarity BETWEEN 0 AND 1),
  run_id INTEGER REFERENCES maintenance_runs(id),
  actor TEXT NOT NULL CHECK (actor IN ('user', 'agent', 'system')),
  created_at TEXT NOT NULL,
  undone_at TEXT
) STRICT;
CREATE INDEX event_merges_by_survivor ON event_merges(survivor_id);
CREATE INDEX event_merges_by_merged ON event_merges(merged_id);
"""
