"""The embeddable Python API: ``from stratagate import Memory`` (``memory.py``), a client of the same protocol table
the sidecar serves, in the caller's own process and event loop."""
