"""Migration 5: stored embeddings for the dense retrieval channel."""

DENSE_SQL = """
-- Dense retrieval (search/vectors.py): one vector per message, event and graph node and model, computed by
-- background 'embedding' jobs (one per namespace), never inside a capture. float32 little-endian, unit length.
-- AUTOINCREMENT: ids never come back, so a reader can fetch "everything newer than id N" (a replaced vector,
-- e.g. a node whose aliases changed, is a new row).
CREATE TABLE embeddings(
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  kind TEXT NOT NULL CHECK (kind IN ('message', 'event', 'node')),
  item_id INTEGER NOT NULL,
  namespace_id INTEGER NOT NULL REFERENCES namespaces(id),
  model TEXT NOT NULL,
  dim INTEGER NOT NULL CHECK (dim > 0),
  vector BLOB NOT NULL CHECK (length(vector) = 4 * dim),
  text_sha TEXT NOT NULL,
  created_at TEXT NOT NULL,
  UNIQUE(kind, item_id, model)
) STRICT;
CREATE INDEX embeddings_by_ns ON embeddings(namespace_id, kind, model);

-- Messages and events are append-only, so "embedded up to id N" per namespace is the whole backlog state.
CREATE TABLE embedding_cursors(
  namespace_id INTEGER NOT NULL REFERENCES namespaces(id),
  kind TEXT NOT NULL CHECK (kind IN ('message', 'event')),
  model TEXT NOT NULL,
  last_id INTEGER NOT NULL,
  updated_at TEXT NOT NULL,
  PRIMARY KEY(namespace_id, kind, model)
) STRICT;
-- "A namespace's items after id N" as an index range (the rowid is the last key column).
CREATE INDEX messages_by_ns_id ON messages(namespace_id);
CREATE INDEX events_by_ns_id ON events(namespace_id);

-- Each request for embeddings bumps 'requested'; a namespace's job finishes only once it has served the latest
-- request, so items written while it runs are never left behind. The job row itself (kind 'embedding',
-- subject = namespace id) is re-queued by the next request once it is done.
CREATE TABLE embedding_requests(
  namespace_id INTEGER PRIMARY KEY REFERENCES namespaces(id),
  requested INTEGER NOT NULL DEFAULT 0,
  served INTEGER NOT NULL DEFAULT 0,
  updated_at TEXT NOT NULL
) STRICT;
"""
