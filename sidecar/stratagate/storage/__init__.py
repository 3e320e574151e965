"""SQLite storage: one file, WAL, incremental row writes, every read filtered by namespace."""

from stratagate.storage.db import Database, SchemaError

__all__ = ["Database", "SchemaError"]
