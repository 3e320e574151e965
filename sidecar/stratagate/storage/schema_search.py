"""Migration 14: the change feed of the derived search indexes (storage/term_index.py, storage/term_feed.py).

SQLite stays the truth; the derived indexes next to the database only catch up. Every write that can change an
event's search terms (an insert, an erase or a redaction rewriting its content, a purge deleting it) appends a row
here from a trigger, so no code path can forget to. An index's watermark is the last ``seq`` it holds.
AUTOINCREMENT: a sequence number is never reused, even after a rollback, so ``seq > watermark`` is exactly what the
index has not seen.
"""

SEARCH_SQL = """
CREATE TABLE search_changes(
  seq INTEGER PRIMARY KEY AUTOINCREMENT,
  kind TEXT NOT NULL CHECK (kind IN ('event')),
  item_id INTEGER NOT NULL
) STRICT;
CREATE INDEX search_changes_by_kind ON search_changes(kind, seq);
CREATE TRIGGER events_search_add AFTER INSERT ON events
BEGIN INSERT INTO search_changes(kind, item_id) VALUES ('event', NEW.id); END;
CREATE TRIGGER events_search_change AFTER UPDATE OF
  title, summary, narrative, tags, quotes, type, participants, claims, mentioned_at, happened_start, time_original
  ON events
BEGIN INSERT INTO search_changes(kind, item_id) VALUES ('event', NEW.id); END;
CREATE TRIGGER events_search_delete AFTER DELETE ON events
BEGIN INSERT INTO search_changes(kind, item_id) VALUES ('event', OLD.id); END;
"""
