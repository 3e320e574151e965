"""Migration 4: retrieval batches, evidence assessments, use receipts and long-term weights (the evidence gate).

Batches, assessments, receipts and counted uses are written once and never change or disappear (triggers refuse it):
together they are the record of what the agent retrieved, what it judged sufficient and what its answers relied
on. ``memory_use_stats`` is the only mutable table: per session and memory, how often a use receipt counted it and
in which of that session's turns it was last used; its counters only grow.

``AUTOINCREMENT`` on the public-id tables: SQLite then never hands out an id twice, so ``rb_N`` / ``asm_N`` /
``rcp_N`` stay unique across restarts (and would even if a newest row were ever removed).
"""

EVIDENCE_SQL = """
-- One row per retrieval tool result: what the agent was shown (the evidence refs), when (the session's turn).
CREATE TABLE retrieval_batches(
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  namespace_id INTEGER NOT NULL REFERENCES namespaces(id),
  session_id INTEGER NOT NULL REFERENCES sessions(id),
  tool TEXT NOT NULL CHECK (length(tool) BETWEEN 1 AND 128),
  query TEXT,
  arguments TEXT NOT NULL CHECK (json_valid(arguments) AND json_type(arguments) = 'object'),
  evidence_refs TEXT NOT NULL CHECK (json_valid(evidence_refs) AND json_type(evidence_refs) = 'array'),
  turn INTEGER NOT NULL CHECK (turn >= 1),
  call_id TEXT,
  created_at TEXT NOT NULL
) STRICT;
CREATE INDEX retrieval_batches_by_session ON retrieval_batches(session_id, turn);
CREATE TRIGGER retrieval_batches_immutable BEFORE UPDATE ON retrieval_batches
BEGIN SELECT RAISE(ABORT, 'retrieval batches are immutable'); END;
CREATE TRIGGER retrieval_batches_kept BEFORE DELETE ON retrieval_batches
BEGIN SELECT RAISE(ABORT, 'retrieval batches are never deleted'); END;

-- memory_assess: the agent's verdict on one batch as requested, and as recorded by the gate.
CREATE TABLE evidence_assessments(
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  batch_id INTEGER NOT NULL REFERENCES retrieval_batches(id),
  session_id INTEGER NOT NULL REFERENCES sessions(id),
  requested_verdict TEXT NOT NULL CHECK (requested_verdict IN ('sufficient', 'partial', 'wrong')),
  verdict TEXT NOT NULL CHECK (verdict IN ('sufficient', 'partial', 'wrong')),
  evidence_refs TEXT NOT NULL CHECK (json_valid(evidence_refs) AND json_type(evidence_refs) = 'array'),
  rejected_refs TEXT NOT NULL CHECK (json_valid(rejected_refs) AND json_type(rejected_refs) = 'array'),
  fit TEXT NOT NULL,
  missing TEXT NOT NULL,
  next_strategy TEXT NOT NULL CHECK (next_strategy IN ('answer', 'search_events', 'expand_event', 'search_graph',
    'expand_graph_node', 'search_raw', 'get_blocks', 'expand_block', 'ask_user')),
  reason TEXT,
  turn INTEGER NOT NULL CHECK (turn >= 1),
  created_at TEXT NOT NULL,
  -- The gate, also as a constraint: only a downgrade from sufficient to partial may differ from the request.
  CHECK (verdict = requested_verdict OR (requested_verdict = 'sufficient' AND verdict = 'partial'
    AND reason IS NOT NULL)),
  CHECK (verdict <> 'sufficient' OR (next_strategy = 'answer' AND json_array_length(evidence_refs) >= 1))
) STRICT;
CREATE INDEX evidence_assessments_by_batch ON evidence_assessments(batch_id, id);
CREATE TRIGGER evidence_assessments_immutable BEFORE UPDATE ON evidence_assessments
BEGIN SELECT RAISE(ABORT, 'evidence assessments are immutable'); END;
CREATE TRIGGER evidence_assessments_kept BEFORE DELETE ON evidence_assessments
BEGIN SELECT RAISE(ABORT, 'evidence assessments are never deleted'); END;

-- memory_record_use: what an answer relied on. The idempotency key makes a repeated call return this row.
CREATE TABLE use_receipts(
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  idempotency_key TEXT NOT NULL UNIQUE CHECK (length(idempotency_key) = 64),
  namespace_id INTEGER NOT NULL REFERENCES namespaces(id),
  session_id INTEGER NOT NULL REFERENCES sessions(id),
  batch_id INTEGER REFERENCES retrieval_batches(id),
  evidence_refs TEXT NOT NULL CHECK (json_valid(evidence_refs) AND json_type(evidence_refs) = 'array'),
  counted_refs TEXT NOT NULL CHECK (json_valid(counted_refs) AND json_type(counted_refs) = 'array'),
  result TEXT NOT NULL CHECK (json_valid(result) AND json_type(result) = 'object'),
  turn INTEGER NOT NULL CHECK (turn >= 1),
  call_id TEXT,
  created_at TEXT NOT NULL
) STRICT;
CREATE INDEX use_receipts_by_session ON use_receipts(session_id, id);
CREATE TRIGGER use_receipts_append_only BEFORE UPDATE ON use_receipts
BEGIN SELECT RAISE(ABORT, 'use receipts are append-only'); END;
CREATE TRIGGER use_receipts_kept BEFORE DELETE ON use_receipts
BEGIN SELECT RAISE(ABORT, 'use receipts are append-only'); END;

-- The batches a receipt settles (its own batch; without one, the batches its counted refs came from, or for an
-- empty receipt the turn's open batches).
CREATE TABLE use_receipt_batches(
  receipt_id INTEGER NOT NULL REFERENCES use_receipts(id),
  batch_id INTEGER NOT NULL REFERENCES retrieval_batches(id),
  PRIMARY KEY(receipt_id, batch_id)
) STRICT, WITHOUT ROWID;
CREATE INDEX use_receipt_batches_by_batch ON use_receipt_batches(batch_id);
CREATE TRIGGER use_receipt_batches_append_only BEFORE UPDATE ON use_receipt_batches
BEGIN SELECT RAISE(ABORT, 'use receipts are append-only'); END;
CREATE TRIGGER use_receipt_batches_kept BEFORE DELETE ON use_receipt_batches
BEGIN SELECT RAISE(ABORT, 'use receipts are append-only'); END;

-- Each counted ref, once per batch: a second receipt for the same batch and ref cannot reinforce again.
CREATE TABLE evidence_uses(
  id INTEGER PRIMARY KEY,
  receipt_id INTEGER NOT NULL REFERENCES use_receipts(id),
  batch_id INTEGER NOT NULL REFERENCES retrieval_batches(id),
  assessment_id INTEGER NOT NULL REFERENCES evidence_assessments(id),
  ref TEXT NOT NULL,
  kind TEXT NOT NULL CHECK (kind IN ('event', 'node', 'source')),
  item_id INTEGER,
  reinforced INTEGER NOT NULL CHECK (reinforced IN (0, 1)),
  UNIQUE(batch_id, ref),
  CHECK ((kind = 'source') = (item_id IS NULL)),
  CHECK (kind <> 'source' OR reinforced = 0)
) STRICT;
CREATE INDEX evidence_uses_by_item ON evidence_uses(kind, item_id);
CREATE TRIGGER evidence_uses_append_only BEFORE UPDATE ON evidence_uses
BEGIN SELECT RAISE(ABORT, 'evidence uses are append-only'); END;
CREATE TRIGGER evidence_uses_kept BEFORE DELETE ON evidence_uses
BEGIN SELECT RAISE(ABORT, 'evidence uses are append-only'); END;

-- Long-term weight inputs, per session and memory; written only by use receipts (evidence/weights.py).
CREATE TABLE memory_use_stats(
  namespace_id INTEGER NOT NULL REFERENCES namespaces(id),
  session_id INTEGER NOT NULL REFERENCES sessions(id),
  kind TEXT NOT NULL CHECK (kind IN ('event', 'node')),
  item_id INTEGER NOT NULL,
  uses INTEGER NOT NULL CHECK (uses >= 1),
  first_used_turn INTEGER NOT NULL CHECK (first_used_turn >= 1),
  last_used_turn INTEGER NOT NULL,
  last_used_at TEXT NOT NULL,
  PRIMARY KEY(session_id, kind, item_id),
  CHECK (last_used_turn >= first_used_turn)
) STRICT, WITHOUT ROWID;
CREATE INDEX memory_use_stats_by_item ON memory_use_stats(namespace_id, kind, item_id);
CREATE TRIGGER memory_use_stats_grow_only BEFORE UPDATE ON memory_use_stats
WHEN NEW.uses < OLD.uses OR NEW.last_used_turn < OLD.last_used_turn OR NEW.namespace_id <> OLD.namespace_id
  OR NEW.session_id <> OLD.session_id OR NEW.kind <> OLD.kind OR NEW.item_id <> OLD.item_id
  OR NEW.first_used_turn <> OLD.first_used_turn
BEGIN SELECT RAISE(ABORT, 'memory use counters only grow'); END;
CREATE TRIGGER memory_use_stats_kept BEFORE DELETE ON memory_use_stats
BEGIN SELECT RAISE(ABORT, 'memory use counters are never deleted'); END;
"""
