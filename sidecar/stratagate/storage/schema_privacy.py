"""Migration 6: the privileged-write exception (secret scrubbing and erase), the redaction key, erasure records.

Content stays immutable for every ordinary write. The two operations that must rewrite stored text — scrubbing
secrets out of a database (`stratagate redact --db`) and erasing a memory (`memory_forget erase=true`,
`stratagate erase`) — insert one row into ``privileged_writes`` inside their own transaction, do their rewrite,
and delete the row before committing. The immutability triggers let a write through only while that row exists,
so no other code path (and no other connection: the row is invisible outside the uncommitted transaction) can.
"""

PRIVACY_SQL = """
-- Present only inside a scrub or erase transaction; never committed (the operation deletes it before commit).
CREATE TABLE privileged_writes(
  operation TEXT NOT NULL CHECK (operation IN ('redact', 'erase')),
  started_at TEXT NOT NULL
) STRICT;

-- Small key/value settings of this database, e.g. the key of the short secret hashes in redaction placeholders.
CREATE TABLE meta(
  key TEXT PRIMARY KEY,
  value TEXT NOT NULL
) STRICT;

-- What was erased, without its content: the subject's id, a keyed fingerprint and what was removed where.
CREATE TABLE erasures(
  id INTEGER PRIMARY KEY,
  namespace_id INTEGER NOT NULL REFERENCES namespaces(id),
  subject_type TEXT NOT NULL,
  subject_id TEXT NOT NULL,
  fingerprint TEXT NOT NULL,
  actor TEXT NOT NULL CHECK (actor IN ('capture', 'model', 'agent', 'user', 'system')),
  counts TEXT NOT NULL DEFAULT '{}' CHECK (json_valid(counts) AND json_type(counts) = 'object'),
  erased_at TEXT NOT NULL
) STRICT;
CREATE INDEX erasures_by_ns ON erasures(namespace_id, id);
CREATE TRIGGER erasures_no_update BEFORE UPDATE ON erasures
BEGIN SELECT RAISE(ABORT, 'erasure records are append-only'); END;
CREATE TRIGGER erasures_no_delete BEFORE DELETE ON erasures
BEGIN SELECT RAISE(ABORT, 'erasure records are append-only'); END;

DROP TRIGGER messages_immutable;
CREATE TRIGGER messages_immutable BEFORE UPDATE ON messages
WHEN NOT EXISTS (SELECT 1 FROM privileged_writes)
BEGIN SELECT RAISE(ABORT, 'captured messages are immutable'); END;
DROP TRIGGER messages_kept;
CREATE TRIGGER messages_kept BEFORE DELETE ON messages
WHEN NOT EXISTS (SELECT 1 FROM privileged_writes WHERE operation = 'erase')
BEGIN SELECT RAISE(ABORT, 'captured messages are never deleted'); END;

DROP TRIGGER audit_no_update;
CREATE TRIGGER audit_no_update BEFORE UPDATE ON audit_log
WHEN NOT EXISTS (SELECT 1 FROM privileged_writes)
BEGIN SELECT RAISE(ABORT, 'audit log is append-only'); END;

DROP TRIGGER events_content_immutable;
CREATE TRIGGER events_content_immutable BEFORE UPDATE OF
  namespace_id, session_id, origin, block_id, import_id, title, summary, narrative, tags, quotes, type,
  participants, scope, criticality, confidence, mentioned_at, happened_start, happened_end, time_original,
  time_precision, time_basis, time_status, fingerprint, claims, created_at ON events
WHEN NOT EXISTS (SELECT 1 FROM privileged_writes)
BEGIN SELECT RAISE(ABORT, 'event content and provenance are immutable; supersede the event instead'); END;

DROP TRIGGER event_sources_immutable;
CREATE TRIGGER event_sources_immutable BEFORE UPDATE ON event_sources
WHEN NOT EXISTS (SELECT 1 FROM privileged_writes)
BEGIN SELECT RAISE(ABORT, 'event sources are immutable'); END;

DROP TRIGGER imports_source_immutable;
CREATE TRIGGER imports_source_immutable BEFORE UPDATE OF
  namespace_id, format, source_name, source_text, source_sha256, created_at ON imports
WHEN NOT EXISTS (SELECT 1 FROM privileged_writes)
BEGIN SELECT RAISE(ABORT, 'an import keeps its source verbatim'); END;

DROP TRIGGER retrieval_batches_immutable;
CREATE TRIGGER retrieval_batches_immutable BEFORE UPDATE ON retrieval_batches
WHEN NOT EXISTS (SELECT 1 FROM privileged_writes)
BEGIN SELECT RAISE(ABORT, 'retrieval batches are immutable'); END;

DROP TRIGGER evidence_assessments_immutable;
CREATE TRIGGER evidence_assessments_immutable BEFORE UPDATE ON evidence_assessments
WHEN NOT EXISTS (SELECT 1 FROM privileged_writes)
BEGIN SELECT RAISE(ABORT, 'evidence assessments are immutable'); END;

DROP TRIGGER use_receipts_append_only;
CREATE TRIGGER use_receipts_append_only BEFORE UPDATE ON use_receipts
WHEN NOT EXISTS (SELECT 1 FROM privileged_writes)
BEGIN SELECT RAISE(ABORT, 'use receipts are append-only'); END;
"""
