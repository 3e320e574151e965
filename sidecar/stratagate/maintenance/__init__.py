"""Maintenance: a scheduled, persisted pass that keeps memory tidy without deleting anything — consolidation of
near-duplicate events (reversible merges), re-projection of a stale graph, FTS/SQLite optimize — and the report of
counts, sizes and job health (``system.stats``, ``stratagate stats``). See run.py for the pass and its schedule."""
