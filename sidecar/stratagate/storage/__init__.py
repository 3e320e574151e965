"""SQLite storage: one file, WAL, incremental row writes, every read filtered by namespace."""
