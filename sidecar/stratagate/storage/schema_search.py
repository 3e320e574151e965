"""Migration 13: the change feed of the derived search index (storage/term_index.py).

SQLite stays the truth; the derived index next to the database only catches up. Every write that can change an
event's search terms (an insert, an erase or a redaction rewriting its content, a purge deleting it) appends a row
here from a trigger, so no code path can forget to; the index's watermark is the last ``seq`` it holds.
AUTOINCREMENT: a sequence number is never reused, even after a rollback, so ``seq > watermark`` is exactly what the
index has not seen.
"""

SEARCH_SQL = """
CREATE TABLE search_changes(
  seq INTEGER PRIMARY KEY AUTOINCREMENT,
  kind TEXT NOT NULL CHECK (kind IN ('event')),
  item_id INTEGER NOT NULL,
  op TEXT NOT NULL CHECK (op IN ('add', 'change'))
) STRICT;
CREATE TRIGGER events_search_add AFTER INSERT ON events
BEGIN INSERT INTO search_changes(kind, item_id, op) VALUES ('event', NEW.id, 'add'); END;
CREATE TRIGGER events_search_change AFTER UPDATE OF
  title, summary, narrative, tags, quotes, type, participants, claims, mentioned_at, happened_start, time_original
  ON events
BEGIN INSERT INTO search_changes(kind, item_id, op) VALUES ('event', NEW.id, 'change'); END;
CREATE TRIGGER events_search_delete AFTER DELETE ON events
BEGIN INSERT INTO search_changes(kind, item_id, op) VALUES ('event', OLD.id, 'change'); END;
"""
