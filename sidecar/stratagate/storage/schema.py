"""Schema migrations, applied in order and tracked by ``PRAGMA user_version``.

Append a new entry to MIGRATIONS to change the schema; never edit a released one.
"""

from __future__ import annotations

MIGRATION_1 = """
CREATE TABLE namespaces(
  id INTEGER PRIMARY KEY,
  name TEXT NOT NULL UNIQUE,
  created_at TEXT NOT NULL
) STRICT;

CREATE TABLE sessions(
  id INTEGER PRIMARY KEY,
  namespace_id INTEGER NOT NULL REFERENCES namespaces(id),
  key TEXT NOT NULL,
  created_at TEXT NOT NULL,
  turn_count INTEGER NOT NULL DEFAULT 0,
  UNIQUE(namespace_id, key)
) STRICT;

CREATE TABLE blocks(
  id INTEGER PRIMARY KEY,
  namespace_id INTEGER NOT NULL REFERENCES namespaces(id),
  session_id INTEGER NOT NULL REFERENCES sessions(id),
  seq INTEGER NOT NULL,
  first_turn INTEGER NOT NULL,
  last_turn INTEGER NOT NULL,
  status TEXT NOT NULL CHECK (status IN ('pending', 'ready')),
  sealed_at TEXT NOT NULL,
  ready_at TEXT,
  l5_tokens INTEGER NOT NULL,
  l4 TEXT NOT NULL,
  l4_tokens INTEGER NOT NULL,
  l3 TEXT NOT NULL,
  l3_tokens INTEGER NOT NULL,
  l2 TEXT,
  l2_tokens INTEGER,
  l1 TEXT,
  l1_tokens INTEGER,
  l0_title TEXT,
  l0_tags TEXT,
  l0_tokens INTEGER,
  summary_model TEXT,
  has_durable_facts INTEGER,
  anchor_level INTEGER NOT NULL DEFAULT 5 CHECK (anchor_level BETWEEN 0 AND 5),
  anchor_pos INTEGER NOT NULL,
  lifted_at TEXT,
  lifted_by TEXT,
  UNIQUE(session_id, seq)
) STRICT;
CREATE INDEX blocks_by_ns ON blocks(namespace_id, session_id, seq);

CREATE TABLE turns(
  id INTEGER PRIMARY KEY,
  namespace_id INTEGER NOT NULL REFERENCES namespaces(id),
  session_id INTEGER NOT NULL REFERENCES sessions(id),
  seq INTEGER NOT NULL,
  receipt TEXT NOT NULL,
  started_at TEXT,
  ended_at TEXT,
  end_reason TEXT,
  block_id INTEGER REFERENCES blocks(id),
  captured_at TEXT NOT NULL,
  UNIQUE(namespace_id, receipt),
  UNIQUE(session_id, seq)
) STRICT;
CREATE INDEX turns_open ON turns(session_id, block_id, seq);

-- L5: the words that were said, including every tool call with its arguments and result.
CREATE TABLE messages(
  id INTEGER PRIMARY KEY,
  namespace_id INTEGER NOT NULL REFERENCES namespaces(id),
  session_id INTEGER NOT NULL REFERENCES sessions(id),
  turn_id INTEGER NOT NULL REFERENCES turns(id),
  position INTEGER NOT NULL,
  role TEXT NOT NULL CHECK (role IN ('user', 'assistant', 'tool')),
  content TEXT NOT NULL,
  tool_name TEXT,
  tool_call_id TEXT,
  tool_arguments TEXT,
  tool_result TEXT,
  is_error INTEGER NOT NULL DEFAULT 0,
  created_at TEXT NOT NULL,
  UNIQUE(turn_id, position)
) STRICT;
CREATE INDEX messages_by_ns ON messages(namespace_id, session_id, turn_id);

-- Source text is immutable once captured.
CREATE TRIGGER messages_immutable BEFORE UPDATE ON messages
BEGIN SELECT RAISE(ABORT, 'captured messages are immutable'); END;
CREATE TRIGGER messages_kept BEFORE DELETE ON messages
BEGIN SELECT RAISE(ABORT, 'captured messages are never deleted'); END;

-- Pre-tokenised text (see search/terms.py), so every index shares one tokenizer.
CREATE VIRTUAL TABLE message_fts USING fts5(terms, tokenize = 'unicode61 remove_diacritics 0');

CREATE TABLE jobs(
  id INTEGER PRIMARY KEY,
  namespace_id INTEGER NOT NULL REFERENCES namespaces(id),
  kind TEXT NOT NULL,
  subject_id INTEGER NOT NULL,
  status TEXT NOT NULL CHECK (status IN ('queued', 'running', 'done', 'failed')),
  attempts INTEGER NOT NULL DEFAULT 0,
  max_attempts INTEGER NOT NULL,
  next_run_at REAL NOT NULL,
  last_error TEXT,
  created_at TEXT NOT NULL,
  updated_at TEXT NOT NULL,
  UNIQUE(kind, subject_id)
) STRICT;
CREATE INDEX jobs_due ON jobs(status, next_run_at);

-- Append-only record of every mutation: who, what, when, before and after.
CREATE TABLE audit_log(
  id INTEGER PRIMARY KEY,
  namespace_id INTEGER,
  at TEXT NOT NULL,
  actor TEXT NOT NULL CHECK (actor IN ('capture', 'model', 'agent', 'user', 'system')),
  action TEXT NOT NULL,
  subject_type TEXT,
  subject_id TEXT,
  before TEXT,
  after TEXT
) STRICT;
CREATE INDEX audit_by_ns ON audit_log(namespace_id, id);
CREATE TRIGGER audit_no_update BEFORE UPDATE ON audit_log
BEGIN SELECT RAISE(ABORT, 'audit log is append-only'); END;
CREATE TRIGGER audit_no_delete BEFORE DELETE ON audit_log
BEGIN SELECT RAISE(ABORT, 'audit log is append-only'); END;
"""

MIGRATIONS: list[str] = [MIGRATION_1]
SCHEMA_VERSION = len(MIGRATIONS)
