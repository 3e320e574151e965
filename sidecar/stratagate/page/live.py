"""``page.changes``: the Memory page's one long poll, so the open tab refetches only when its area changed.

The cursor is ``c1.<audit high-water id>.<jobs>.<namespaces>.<settings>.<evidence>``: every mutation writes an audit
row in its own transaction, so the audit rows after the client's high-water mark name the areas that changed (by
action: ``event.forgotten`` → events, ``fact.*`` → graph, …); the four stamps cover state that changes without an
audit row (a job's claim, a new namespace row, stored settings, receipts). The wait is event-driven: this process's
commits set ``Database.committed()``; another process's commit (a second sidecar, the CLI, a sqlite3 shell) moves
the reader's ``PRAGMA data_version``, looked at every 0.5 s while waiting. Nothing is recomputed between wake-ups."""

from __future__ import annotations

import asyncio
import hashlib
import re
from dataclasses import dataclass
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from stratagate.app import App
from stratagate.errors import Invalid
from stratagate.page import read_queries as q
from stratagate.protocol import method
from stratagate.protocol.types import Result
from stratagate.storage.db import Database

Area = Literal["jobs", "blocks", "events", "graph", "imports", "audit", "evidence", "settings", "namespaces"]
AREAS: tuple[Area, ...] = (
    "jobs", "blocks", "events", "graph", "imports", "audit", "evidence", "settings", "namespaces"
)
STAMPED: tuple[Area, ...] = ("jobs", "namespaces", "settings", "evidence")
"""Areas with a stamp of their own in the cursor, in cursor order."""
DATA_VERSION_EVERY_S = 0.5
AUDIT_TAIL_CAP = 5000
"""A client further behind than this many audit rows is told that every area changed (one cheap answer instead of
reading the whole tail)."""

# Keyed by the action's first word with its dot ("maintenance."): a bare "maintenance" would read as the job kind
# of that name, which only jobs/pipeline.py may spell.
_BY_PREFIX: dict[str, tuple[Area, ...]] = {
    "turn.": ("blocks",),
    "block.": ("blocks",),
    "message.": ("blocks",),
    "job.": ("jobs",),
    "jobs.": ("jobs",),
    "maintenance.": ("jobs",),
    "event.": ("events",),
    "events.": ("events",),
    "node.": ("graph",),
    "fact.": ("graph",),
    "graph.": ("graph",),
    "import.": ("imports",),
    "evidence.": ("evidence",),
    "settings.": ("settings",),
}
_BY_ACTION: dict[str, tuple[Area, ...]] = {
    "namespace.settings_changed": ("namespaces", "settings", "events"),  # the user tier changes what events show
    # These rewrite or remove rows of many kinds at once.
    "namespace.deleted": AREAS,
    "event.erased": AREAS,
    "message.erased": AREAS,
    "secrets.redacted": AREAS,
}


def areas_of(action: str) -> tuple[Area, ...]:
    """The page areas an audit action changes (every action also changes ``audit``)."""
    if action in _BY_ACTION:
        return _BY_ACTION[action]
    prefix = action.split(".", 1)[0] + "."
    if prefix == "namespace.":
        return ("namespaces",)
    return _BY_PREFIX.get(prefix, ())


_CURSOR = re.compile(r"^c1\.(\d{1,19})" + r"\.([0-9a-f]{12})" * len(STAMPED) + "$")


@dataclass(frozen=True)
class Cursor:
    audit: int
    stamps: tuple[str, ...]

    def encode(self) -> str:
        return ".".join(["c1", str(self.audit), *self.stamps])

    @classmethod
    def parse(cls, text: str) -> Cursor:
        m = _CURSOR.match(text.strip())
        if m is None:
            raise Invalid("since must be a cursor returned by page.changes (got an unknown value)")
        return cls(int(m.group(1)), tuple(m.groups()[1:]))


def _stamp(value: object) -> str:
    return hashlib.blake2b(repr(value).encode(), digest_size=6).hexdigest()


async def current(db: Database) -> Cursor:
    state = await q.unaudited_state(db)
    return Cursor(await q.audit_high_water(db), tuple(_stamp(state[a]) for a in STAMPED))


async def changed_areas(db: Database, since: Cursor | None, now: Cursor) -> list[Area]:
    if since is None or since.audit > now.audit:  # no cursor, or one of another (or a rebuilt) database
        return list(AREAS)
    found: set[Area] = {a for a, old, new in zip(STAMPED, since.stamps, now.stamps, strict=True) if old != new}
    if since.audit < now.audit:
        actions = await q.audit_actions_after(db, since.audit, now.audit, AUDIT_TAIL_CAP)
        if actions is None:
            return list(AREAS)
        found.add("audit")
        for action in actions:
            found.update(areas_of(action))
    return [a for a in AREAS if a in found]


class ChangesParams(BaseModel):
    model_config = ConfigDict(extra="forbid")

    since: str | None = Field(None, max_length=200, description="the cursor of the previous answer")
    wait: float = Field(20, ge=0, le=25, description="seconds to wait for a change")


class ChangesResult(Result):
    cursor: str
    changed: list[Area]


async def _woken(db: Database, app: App, version: int, seconds: float) -> None:
    """Return once this process commits, the app shuts down, another connection commits (data_version moves) or
    ``seconds`` pass."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + seconds
    local = asyncio.ensure_future(db.committed().wait())
    stop = asyncio.ensure_future(app.shutdown_requested.wait())
    try:
        while (remaining := deadline - loop.time()) > 0:
            done, _ = await asyncio.wait({local, stop}, timeout=min(DATA_VERSION_EVERY_S, remaining),
                                         return_when=asyncio.FIRST_COMPLETED)
            if done or await db.reader_data_version() != version:
                return
    finally:
        local.cancel()
        stop.cancel()


@method("page.changes", params=ChangesParams, result=ChangesResult, http="GET /changes")
async def changes(app: App, p: ChangesParams) -> ChangesResult:
    """Which areas changed since ``since``: at once if any did (or ``since`` is missing), else when one does or
    ``wait`` seconds pass (then ``changed`` is empty)."""
    since = Cursor.parse(p.since) if p.since else None
    db = app.db
    loop = asyncio.get_running_loop()
    deadline = loop.time() + p.wait
    while True:
        # data_version first: a commit after this read is seen by the wait below, never lost in between.
        version = await db.reader_data_version()
        revision = db.revision
        now = await current(db)
        found = await changed_areas(db, since, now)
        remaining = deadline - loop.time()
        if found or remaining <= 0 or app.shutdown_requested.is_set():
            return ChangesResult(cursor=now.encode(), changed=found)
        if db.revision == revision:
            await _woken(db, app, version, remaining)
