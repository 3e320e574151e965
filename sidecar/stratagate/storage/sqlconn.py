"""Temporary: the old name of storage/sqlite.py's connection type, until every import names that module."""

from stratagate.storage.sqlite import Connection

ReadConnection = Connection

__all__ = ["Connection", "ReadConnection"]
