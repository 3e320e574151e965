"""Team memory: a project's shared decisions, changes, preferences and rules, synchronised through PostgreSQL.

Each machine keeps its own SQLite memory; transcripts, blocks, the context archive and session memory never leave
it. What is shared is team memory (events/team.py): its redacted texts and typed fields, its status (supersession,
dispute, forget, restore) and its erasure. ``sync.TeamSync`` pushes the local outbox and pulls the others' changes;
``server`` holds every statement run on PostgreSQL (``server_schema`` its tables); ``apply`` applies a pulled change
through the local admission path and store functions.
"""
