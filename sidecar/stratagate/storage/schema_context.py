"""Migration 8: the context engine (stratagate/context/). ``context_nodes`` archives every surface node of a DSH
session exactly as the model saw it (redacted; runtime-context snapshots and system prompts become a placeholder),
before anything replaces it; ``context_layers`` holds what replaces native history (tool cards, ready blocks at their
decayed level, folds T1–T3 and automatic digests), pending or landed; ``context_sessions`` keeps each session's
engine state (window, usage, reminders, last action). Nothing here is ever deleted by compaction: a layer only
changes state, and an archived node is immutable.
"""

CONTEXT_SQL = """
CREATE TABLE context_nodes(
  id INTEGER PRIMARY KEY,
  namespace_id INTEGER NOT NULL REFERENCES namespaces(id),
  session_id INTEGER NOT NULL REFERENCES sessions(id),
  seq INTEGER NOT NULL CHECK (seq >= 0),
  type TEXT NOT NULL CHECK (type IN ('user/message', 'assistant/message', 'tool/result')),
  kind TEXT NOT NULL CHECK (kind IN ('user', 'assistant', 'tool', 'runtime', 'checkpoint', 'other')),
  turn INTEGER,
  step INTEGER,
  call_id TEXT,
  tool_name TEXT,
  call_ids TEXT NOT NULL DEFAULT '[]',
  calls TEXT NOT NULL DEFAULT '[]',
  is_error INTEGER NOT NULL DEFAULT 0 CHECK (is_error IN (0, 1)),
  text TEXT NOT NULL,
  tokens INTEGER NOT NULL CHECK (tokens >= 0),
  replaces TEXT NOT NULL DEFAULT '[]',
  archived_at TEXT NOT NULL,
  UNIQUE(session_id, seq)
) STRICT;
CREATE INDEX context_nodes_by_call ON context_nodes(session_id, call_id);

CREATE TRIGGER context_nodes_immutable BEFORE UPDATE ON context_nodes
BEGIN SELECT RAISE(ABORT, 'archived context nodes are immutable'); END;

CREATE TABLE context_layers(
  id INTEGER PRIMARY KEY,
  namespace_id INTEGER NOT NULL REFERENCES namespaces(id),
  session_id INTEGER NOT NULL REFERENCES sessions(id),
  ref TEXT NOT NULL CHECK (length(ref) BETWEEN 2 AND 64),
  kind TEXT NOT NULL CHECK (kind IN ('card', 'block', 'fold')),
  tier INTEGER NOT NULL DEFAULT 0 CHECK (tier BETWEEN 0 AND 3),
  auto INTEGER NOT NULL DEFAULT 0 CHECK (auto IN (0, 1)),
  topic TEXT,
  start_seq INTEGER NOT NULL,
  end_seq INTEGER NOT NULL,
  covers TEXT NOT NULL,
  children TEXT NOT NULL DEFAULT '[]',
  block_id INTEGER REFERENCES blocks(id),
  level INTEGER CHECK (level IS NULL OR level BETWEEN 0 AND 5),
  text TEXT NOT NULL,
  tokens INTEGER NOT NULL CHECK (tokens >= 0),
  shadowed_tokens INTEGER NOT NULL CHECK (shadowed_tokens >= 0),
  state TEXT NOT NULL CHECK (state IN ('pending', 'landed', 'dropped', 'superseded')),
  deferrals INTEGER NOT NULL DEFAULT 0,
  replacement_seq INTEGER,
  error TEXT,
  created_at TEXT NOT NULL,
  landed_at TEXT,
  UNIQUE(session_id, ref)
) STRICT;
CREATE INDEX context_layers_by_state ON context_layers(session_id, state);
CREATE INDEX context_layers_by_replacement ON context_layers(session_id, replacement_seq);

CREATE TABLE context_sessions(
  session_id INTEGER PRIMARY KEY REFERENCES sessions(id),
  namespace_id INTEGER NOT NULL REFERENCES namespaces(id),
  state TEXT NOT NULL,
  updated_at TEXT NOT NULL
) STRICT;

CREATE TABLE context_settings(
  scope TEXT PRIMARY KEY CHECK (scope = 'global'),
  settings TEXT NOT NULL,
  updated_at TEXT NOT NULL
) STRICT;
"""
