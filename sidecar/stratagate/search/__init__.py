"""Search: one tokenizer for every index, BM25 over SQLite FTS5."""
