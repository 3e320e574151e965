"""Migration 17: team memory (stratagate/team/, events/team.py).

- ``events.team_member``: set on a team memory (who said it); NULL on every other event. A team memory is stored with
  scope ``project`` in its project's namespace (it is seen as a project memory is) and is shown as scope ``team``.
- ``team_links``: the team-wide id (``uid``) of each team memory here and the server version this machine last saw
  of it. A memory two machines stated in the same words is one local event with two uids.
- ``team_outbox``: what this machine changed in team memory and has not yet pushed, written in the transaction of the
  change itself (so a crash never loses one, and a rolled-back change never sends one). Deleted once the server has it.
- ``team_cursors``: per namespace, the last server change applied here.
- ``team_state``: one row: this machine's member id and replica id, and the sync's last push, pull and error.
- ``namespaces.team_default``: 1 when the project's decisions, changes, preferences and rules are team memory by
  default; ``namespaces.team_project``: the project's name on the team server (default: the folder's name).
"""

TEAM_SQL = """
ALTER TABLE events ADD COLUMN team_member TEXT;
ALTER TABLE namespaces ADD COLUMN team_default INTEGER NOT NULL DEFAULT 0 CHECK (team_default IN (0, 1));
ALTER TABLE namespaces ADD COLUMN team_project TEXT;
CREATE TABLE team_links(
  uid TEXT PRIMARY KEY,
  event_id INTEGER NOT NULL REFERENCES events(id),
  member TEXT NOT NULL,
  version INTEGER NOT NULL DEFAULT 0
) STRICT;
CREATE INDEX team_links_by_event ON team_links(event_id);
CREATE TABLE team_outbox(
  id INTEGER PRIMARY KEY,
  op_id TEXT NOT NULL UNIQUE,
  namespace_id INTEGER NOT NULL REFERENCES namespaces(id),
  uid TEXT NOT NULL,
  kind TEXT NOT NULL CHECK (kind IN ('create', 'status', 'erase')),
  body TEXT NOT NULL,
  base_version INTEGER NOT NULL,
  created_at TEXT NOT NULL
) STRICT;
CREATE TABLE team_cursors(
  namespace_id INTEGER PRIMARY KEY REFERENCES namespaces(id),
  seq INTEGER NOT NULL,
  pulled_at TEXT NOT NULL
) STRICT;
CREATE TABLE team_state(
  id INTEGER PRIMARY KEY CHECK (id = 1),
  member TEXT,
  replica TEXT NOT NULL,
  server TEXT,
  pushed_at TEXT,
  pulled_at TEXT,
  last_error TEXT,
  error_at TEXT
) STRICT;
INSERT INTO team_state(id, replica) VALUES (1, lower(hex(randomblob(16))));
"""
