"""Schema migrations, applied in order and tracked by ``PRAGMA user_version``.

Append a new entry to MIGRATIONS to change the schema; never edit a released one.
"""

from __future__ import annotations

from stratagate.storage.schema_context import CONTEXT_SQL
from stratagate.storage.schema_dense import DENSE_SQL
from stratagate.storage.schema_erase import ERASE_SQL
from stratagate.storage.schema_evidence import EVIDENCE_SQL
from stratagate.storage.schema_leases import LEASES_SQL
from stratagate.storage.schema_maintain import MAINTAIN_SQL
from stratagate.storage.schema_privacy import PRIVACY_SQL
from stratagate.storage.schema_recall import RECALL_SQL
from stratagate.storage.schema_search import SEARCH_SQL
from stratagate.storage.schema_shapes import SHAPES_SQL
from stratagate.storage.schema_tail import TAIL_SQL
from stratagate.storage.schema_team import TEAM_SQL

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

-- Pre-tokenised text (see text/terms.py), so every index shares one tokenizer.
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

MIGRATION_2 = """
-- Long-term memory: event cards. Content and provenance are written once; only lifecycle columns change.
CREATE TABLE events(
  id INTEGER PRIMARY KEY,
  namespace_id INTEGER NOT NULL REFERENCES namespaces(id),
  session_id INTEGER REFERENCES sessions(id),
  origin TEXT NOT NULL CHECK (origin IN ('remember', 'extraction', 'import')),
  block_id INTEGER REFERENCES blocks(id),
  import_id INTEGER,
  title TEXT NOT NULL,
  summary TEXT NOT NULL,
  narrative TEXT NOT NULL,
  tags TEXT NOT NULL DEFAULT '[]' CHECK (json_valid(tags) AND json_type(tags) = 'array'),
  quotes TEXT NOT NULL DEFAULT '[]' CHECK (json_valid(quotes) AND json_type(quotes) = 'array'),
  type TEXT NOT NULL CHECK (type IN ('decision', 'preference', 'plan', 'change', 'fact', 'event')),
  participants TEXT NOT NULL DEFAULT '[]' CHECK (json_valid(participants) AND json_type(participants) = 'array'),
  scope TEXT NOT NULL CHECK (scope IN ('user', 'project', 'session')),
  criticality TEXT NOT NULL CHECK (criticality IN ('routine', 'preference', 'identity', 'safety')),
  confidence REAL NOT NULL CHECK (confidence BETWEEN 0 AND 1),
  status TEXT NOT NULL CHECK (status IN ('active', 'superseded', 'disputed', 'forgotten', 'archived')),
  prior_status TEXT CHECK (prior_status IN ('active', 'superseded', 'disputed', 'forgotten', 'archived')),
  successor_id INTEGER REFERENCES events(id),
  pinned INTEGER NOT NULL DEFAULT 0 CHECK (pinned IN (0, 1)),
  weight_cap REAL CHECK (weight_cap BETWEEN 0 AND 1),
  mentioned_at TEXT NOT NULL,
  happened_start TEXT,
  happened_end TEXT,
  time_original TEXT,
  time_precision TEXT NOT NULL DEFAULT 'unknown'
    CHECK (time_precision IN ('instant', 'day', 'week', 'month', 'year', 'range', 'unknown')),
  time_basis TEXT NOT NULL DEFAULT 'unknown' CHECK (time_basis IN ('explicit', 'relative', 'inferred', 'unknown')),
  time_status TEXT NOT NULL DEFAULT 'unknown'
    CHECK (time_status IN ('planned', 'occurred', 'ongoing', 'cancelled', 'unknown')),
  fingerprint TEXT NOT NULL,
  created_at TEXT NOT NULL,
  updated_at TEXT NOT NULL,
  CHECK (scope <> 'session' OR session_id IS NOT NULL),
  CHECK (status <> 'superseded' OR successor_id IS NOT NULL)
) STRICT;
CREATE INDEX events_by_status ON events(namespace_id, status);
CREATE INDEX events_by_fingerprint ON events(namespace_id, fingerprint);
CREATE INDEX events_by_successor ON events(successor_id);

CREATE TRIGGER events_content_immutable BEFORE UPDATE OF
  namespace_id, session_id, origin, block_id, import_id, title, summary, narrative, tags, quotes, type,
  participants, scope, criticality, confidence, mentioned_at, happened_start, happened_end, time_original,
  time_precision, time_basis, time_status, fingerprint, created_at ON events
BEGIN SELECT RAISE(ABORT, 'event content and provenance are immutable; supersede the event instead'); END;

-- Provenance: where each event came from (a captured message, or the tool call that remembered it).
CREATE TABLE event_sources(
  id INTEGER PRIMARY KEY,
  event_id INTEGER NOT NULL REFERENCES events(id),
  message_id INTEGER REFERENCES messages(id),
  call_id TEXT,
  quote TEXT NOT NULL,
  created_at TEXT NOT NULL
) STRICT;
CREATE INDEX event_sources_by_event ON event_sources(event_id);
CREATE TRIGGER event_sources_immutable BEFORE UPDATE ON event_sources
BEGIN SELECT RAISE(ABORT, 'event sources are immutable'); END;

-- Pre-tokenised (text/terms.py) title, summary, narrative, tags, quotes, participants, type and time wording.
CREATE VIRTUAL TABLE event_fts USING fts5(terms, tokenize = 'unicode61 remove_diacritics 0');

-- A forgotten event's fingerprint: a later restatement of it is refused until the event is restored.
CREATE TABLE tombstones(
  namespace_id INTEGER NOT NULL REFERENCES namespaces(id),
  fingerprint TEXT NOT NULL,
  event_id INTEGER NOT NULL REFERENCES events(id),
  created_at TEXT NOT NULL,
  PRIMARY KEY(namespace_id, fingerprint)
) STRICT;
"""

MIGRATION_3 = """
-- Structured claims of an event (subject, predicate, object or value), written once; the graph projects them.
ALTER TABLE events ADD COLUMN claims TEXT NOT NULL DEFAULT '[]'
  CHECK (json_valid(claims) AND json_type(claims) = 'array');
DROP TRIGGER events_content_immutable;
CREATE TRIGGER events_content_immutable BEFORE UPDATE OF
  namespace_id, session_id, origin, block_id, import_id, title, summary, narrative, tags, quotes, type,
  participants, scope, criticality, confidence, mentioned_at, happened_start, happened_end, time_original,
  time_precision, time_basis, time_status, fingerprint, claims, created_at ON events
BEGIN SELECT RAISE(ABORT, 'event content and provenance are immutable; supersede the event instead'); END;

-- Imports of memories exported from other assistants: the source text is kept verbatim.
CREATE TABLE imports(
  id INTEGER PRIMARY KEY,
  namespace_id INTEGER NOT NULL REFERENCES namespaces(id),
  format TEXT NOT NULL,
  source_name TEXT NOT NULL,
  source_text TEXT NOT NULL,
  source_sha256 TEXT NOT NULL,
  item_count INTEGER NOT NULL,
  report TEXT NOT NULL DEFAULT '{}' CHECK (json_valid(report)),
  status TEXT NOT NULL CHECK (status IN ('active', 'removed')),
  created_at TEXT NOT NULL,
  removed_at TEXT
) STRICT;
CREATE TRIGGER imports_source_immutable BEFORE UPDATE OF
  namespace_id, format, source_name, source_text, source_sha256, created_at ON imports
BEGIN SELECT RAISE(ABORT, 'an import keeps its source verbatim'); END;
CREATE TRIGGER imports_no_delete BEFORE DELETE ON imports
BEGIN SELECT RAISE(ABORT, 'imports are never deleted; remove marks them removed'); END;
ALTER TABLE event_sources ADD COLUMN import_id INTEGER REFERENCES imports(id);
ALTER TABLE event_sources ADD COLUMN source_ref TEXT;
CREATE INDEX events_by_import ON events(import_id);

-- Knowledge graph: a projection of events. Nodes with aliases, typed directed edges, and facts on nodes
-- (attribute = value) and on edges, each with a status, a valid-time window and the events that support it.
CREATE TABLE graph_nodes(
  id INTEGER PRIMARY KEY,
  namespace_id INTEGER NOT NULL REFERENCES namespaces(id),
  kind TEXT NOT NULL CHECK (kind IN ('person', 'project', 'organization', 'tool', 'place', 'concept')),
  name TEXT NOT NULL,
  key TEXT NOT NULL,
  category TEXT,
  created_at TEXT NOT NULL,
  updated_at TEXT NOT NULL,
  UNIQUE(namespace_id, key)
) STRICT;
CREATE TABLE graph_aliases(
  namespace_id INTEGER NOT NULL REFERENCES namespaces(id),
  key TEXT NOT NULL,
  node_id INTEGER NOT NULL REFERENCES graph_nodes(id),
  alias TEXT NOT NULL,
  created_at TEXT NOT NULL,
  PRIMARY KEY(namespace_id, key)
) STRICT;
CREATE INDEX graph_aliases_by_node ON graph_aliases(node_id);
CREATE TABLE graph_edges(
  id INTEGER PRIMARY KEY,
  namespace_id INTEGER NOT NULL REFERENCES namespaces(id),
  src_id INTEGER NOT NULL REFERENCES graph_nodes(id),
  predicate TEXT NOT NULL,
  dst_id INTEGER NOT NULL REFERENCES graph_nodes(id),
  created_at TEXT NOT NULL,
  UNIQUE(src_id, predicate, dst_id)
) STRICT;
CREATE INDEX graph_edges_by_dst ON graph_edges(dst_id);
CREATE TABLE graph_facts(
  id INTEGER PRIMARY KEY,
  namespace_id INTEGER NOT NULL REFERENCES namespaces(id),
  node_id INTEGER NOT NULL REFERENCES graph_nodes(id),
  edge_id INTEGER REFERENCES graph_edges(id),
  attribute TEXT NOT NULL,
  value TEXT,
  slot TEXT,
  scope TEXT NOT NULL CHECK (scope IN ('user', 'project', 'session')),
  session_id INTEGER REFERENCES sessions(id),
  status TEXT NOT NULL CHECK (status IN ('active', 'superseded', 'disputed', 'archived')),
  prior_status TEXT CHECK (prior_status IN ('active', 'superseded', 'disputed', 'archived')),
  valid_from TEXT,
  valid_to TEXT,
  superseded_by INTEGER REFERENCES graph_facts(id),
  recorded_at TEXT NOT NULL,
  updated_at TEXT NOT NULL,
  CHECK ((edge_id IS NULL) <> (value IS NULL)),
  CHECK (scope <> 'session' OR session_id IS NOT NULL)
) STRICT;
CREATE INDEX graph_facts_by_node ON graph_facts(node_id, status);
CREATE INDEX graph_facts_by_edge ON graph_facts(edge_id);
CREATE INDEX graph_facts_by_slot ON graph_facts(node_id, slot, status);
-- 'supports': the event states the fact; 'ends': the event says it stopped (a switch, a stop, a newer value).
-- A fact's status is recomputed from these events' statuses whenever one of them changes.
CREATE TABLE graph_fact_events(
  fact_id INTEGER NOT NULL REFERENCES graph_facts(id),
  event_id INTEGER NOT NULL REFERENCES events(id),
  role TEXT NOT NULL CHECK (role IN ('supports', 'ends')),
  created_at TEXT NOT NULL,
  PRIMARY KEY(fact_id, event_id, role)
) STRICT;
CREATE INDEX graph_fact_events_by_event ON graph_fact_events(event_id);
-- Pre-tokenised node name, aliases, kind, category and current facts.
CREATE VIRTUAL TABLE graph_fts USING fts5(terms, tokenize = 'unicode61 remove_diacritics 0');

-- Projection progress: batches of events, one job each; an event is projected once (state 'done').
CREATE TABLE graph_batches(
  id INTEGER PRIMARY KEY,
  namespace_id INTEGER NOT NULL REFERENCES namespaces(id),
  event_ids TEXT NOT NULL CHECK (json_valid(event_ids) AND json_type(event_ids) = 'array'),
  reason TEXT NOT NULL,
  created_at TEXT NOT NULL,
  done_at TEXT
) STRICT;
CREATE TABLE graph_projection(
  event_id INTEGER PRIMARY KEY REFERENCES events(id),
  batch_id INTEGER REFERENCES graph_batches(id),
  state TEXT NOT NULL CHECK (state IN ('pending', 'done')),
  result TEXT,
  updated_at TEXT NOT NULL
) STRICT;
"""

# Every model answer looks for fallback blocks to upgrade (blocks/upgrade.py): without this the look-up read every
# block's row, long views included (~10 ms at 3,400 blocks, growing with memory), once per summary job.
FALLBACKS_SQL = "CREATE INDEX blocks_fallback ON blocks(namespace_id) WHERE summary_source = 'fallback';"

# Recall ranks graph nodes with FTS5's bm25 over graph_fts twice a step (the prompt, the recent turns), and the cost
# grows with the index's segments: each node document is rewritten on every fact change, and at FTS5's default
# (automerge 4) a 10k-event memory held 13 segments for 278 nodes (bm25 of a 20-term query 0.78 ms; 0.37 merged).
# Merging at 2 keeps about half as many at no measurable cost per write; maintenance merges the rest.
GRAPH_MERGE_SQL = """
INSERT INTO graph_fts(graph_fts, rank) VALUES ('automerge', 2);
INSERT INTO graph_fts(graph_fts) VALUES ('optimize');
"""

MIGRATIONS: list[str] = [
    MIGRATION_1, MIGRATION_2, MIGRATION_3, EVIDENCE_SQL, DENSE_SQL, PRIVACY_SQL, LEASES_SQL, CONTEXT_SQL, MAINTAIN_SQL,
    RECALL_SQL, ERASE_SQL, TAIL_SQL, SHAPES_SQL, SEARCH_SQL, FALLBACKS_SQL, GRAPH_MERGE_SQL, TEAM_SQL,
]
SCHEMA_VERSION = len(MIGRATIONS)
