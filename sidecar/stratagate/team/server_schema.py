"""The team server's tables, on PostgreSQL, and their migrations (``team_schema`` holds the version applied).

- ``team_events``: one row per team memory: project, member, its redacted content (``body``: texts and typed
  fields, the same keys as events/team.py ``content``), its current status and successor, ``erased``, and a
  ``version`` that each applied change raises. ``search`` is a generated tsvector over the redacted texts (the
  server's own full-text search: ``server.search``; an erased memory's text is gone from it too).
- ``team_changes``: the append-only log every machine pulls from, by ``seq`` (its cursor). ``op_id`` is the pushing
  machine's outbox id: pushing one twice (a crash between the server's commit and the local delete) stores it once.
  ``replica`` says which machine made the change, so a machine can tell its own changes from others'.
- ``team_audit``: who changed what and when, content-free.

Writers take one transaction-level advisory lock (``PUSH_LOCK``) so ``seq`` order is commit order: a puller that has
read up to seq N never finds a change below N committed later.
"""

from __future__ import annotations

from typing import Any

PUSH_LOCK = 0x5374_7261_7461  # "Strata": the one advisory lock of team writes
NOTIFY_CHANNEL = "stratagate_team"

MIGRATIONS: list[str] = [
    """
    CREATE TABLE team_events(
      uid TEXT PRIMARY KEY,
      project TEXT NOT NULL,
      member TEXT NOT NULL,
      replica TEXT NOT NULL,
      body JSONB NOT NULL,
      status TEXT NOT NULL DEFAULT 'active',
      successor_uid TEXT,
      erased BOOLEAN NOT NULL DEFAULT FALSE,
      version INTEGER NOT NULL DEFAULT 1,
      created_at TIMESTAMPTZ NOT NULL DEFAULT now(),
      updated_at TIMESTAMPTZ NOT NULL DEFAULT now(),
      search TSVECTOR GENERATED ALWAYS AS (
        to_tsvector('simple', coalesce(body->>'title', '') || ' ' || coalesce(body->>'narrative', ''))
      ) STORED
    );
    CREATE INDEX team_events_search ON team_events USING GIN (search);
    CREATE INDEX team_events_project ON team_events(project);
    CREATE TABLE team_changes(
      seq BIGSERIAL PRIMARY KEY,
      op_id TEXT NOT NULL UNIQUE,
      uid TEXT NOT NULL,
      project TEXT NOT NULL,
      member TEXT NOT NULL,
      replica TEXT NOT NULL,
      kind TEXT NOT NULL CHECK (kind IN ('create', 'status', 'erase', 'noop')),
      body JSONB NOT NULL,
      version INTEGER NOT NULL,
      at TIMESTAMPTZ NOT NULL DEFAULT now()
    );
    CREATE INDEX team_changes_by_project ON team_changes(project, seq);
    CREATE INDEX team_changes_by_uid ON team_changes(uid, version);
    CREATE TABLE team_audit(
      id BIGSERIAL PRIMARY KEY,
      at TIMESTAMPTZ NOT NULL DEFAULT now(),
      member TEXT NOT NULL,
      replica TEXT NOT NULL,
      action TEXT NOT NULL,
      uid TEXT NOT NULL,
      detail JSONB NOT NULL
    );
    """,
]
VERSION = len(MIGRATIONS)


async def ensure(conn: Any) -> int:
    """Bring the server's tables to ``VERSION`` (each migration in one transaction, under the push lock, so two
    machines starting at once apply it once). Returns the version found before. A server newer than this code
    (another member upgraded first) is used as it is when only tables were added; the caller sees its version."""
    async with conn.transaction():
        await conn.execute("SELECT pg_advisory_xact_lock($1)", PUSH_LOCK)
        await conn.execute("CREATE TABLE IF NOT EXISTS team_schema(version INTEGER NOT NULL)")
        found = await conn.fetchval("SELECT max(version) FROM team_schema") or 0
        for version in range(found + 1, VERSION + 1):
            await conn.execute(MIGRATIONS[version - 1])
            await conn.execute("INSERT INTO team_schema(version) VALUES ($1)", version)
    return int(found)
