"""``page.audit`` (GET /audit): the namespace's audit log, newest first, each entry with the undo the page offers."""

from __future__ import annotations

import json
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, StringConstraints

from stratagate import ids
from stratagate.app import App
from stratagate.page import longterm_queries as q
from stratagate.page.foreign import hide_foreign
from stratagate.page.undo_rules import undoable
from stratagate.protocol import method
from stratagate.protocol.types import Name, Result
from stratagate.storage.lookup import audit_undone, namespace_id

Limit = Annotated[int, Field(ge=1, le=200, description="Page size (1–200).")]
Offset = Annotated[int, Field(ge=0, le=1_000_000, description="Rows to skip.")]
SubjectId = Annotated[str, StringConstraints(min_length=1, max_length=128)]


class Undo(Result):
    label: str


class AuditEntry(Result):
    id: int
    at: str
    actor: str
    action: str
    subject_type: str | None
    subject_id: str | None
    before: Any
    after: Any
    undo: Undo | None
    undone_by: int | None = None
    """The ``audit.undone`` entry that reversed this one (then ``undo`` is null)."""
    subject_title: str | None = None
    """An event subject's title (the page's sentence quotes it); None for other subjects."""


def entry_view(row: dict[str, Any], undone_by: int | None = None) -> dict[str, Any]:
    """One audit row as the page shows it: before/after parsed, ``undo`` when ``page.undo`` can reverse it (not once
    it was undone: ``undone_by`` names the entry that did)."""
    entry = {
        "id": int(row["id"]),
        "at": row["at"],
        "actor": row["actor"],
        "action": row["action"],
        "subject_type": row["subject_type"],
        "subject_id": row["subject_id"],
        "before": json.loads(row["before"]) if row["before"] else None,
        "after": json.loads(row["after"]) if row["after"] else None,
    }
    label = None if undone_by is not None else undoable(entry)
    return entry | {"undo": {"label": label} if label else None, "undone_by": undone_by}


async def entry_views(app: App, rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    # The rule page.undo refuses a second undo by: an audit.undone entry naming the entry.
    undone = await audit_undone(app.db.reader, [int(r["id"]) for r in rows])
    return [entry_view(r, undone.get(int(r["id"]))) for r in rows]


async def with_titles(app: App, ns: int, entries: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Each event subject's title, so the page can say "You forgot evt_3 'We use npm'" (the namespace's own only)."""
    keys = {e["subject_id"]: ids.parse(e["subject_id"], "evt") for e in entries
            if e["subject_type"] == "event" and isinstance(e["subject_id"], str)}
    found = await q.events_by_id(app.db.reader, ns, [k for k in keys.values() if k is not None])
    titles = {public: found[k].title for public, k in keys.items() if k is not None and k in found}
    return [e | {"subject_title": titles.get(e["subject_id"])} for e in entries]


class AuditParams(BaseModel):
    model_config = ConfigDict(extra="forbid")

    namespace: Name
    subject: SubjectId | None = Field(None, description="Only entries about this subject, e.g. 'evt_3'.")
    actor: Literal["capture", "model", "agent", "user", "system"] | None = None
    before_id: int | None = Field(None, ge=1, description="Only entries older than this id (the next page).")
    limit: Limit = 50


class AuditResult(Result):
    entries: list[AuditEntry]
    next_before_id: int | None


@method("page.audit", params=AuditParams, result=AuditResult, http="GET /audit")
async def page_audit(app: App, p: AuditParams) -> dict[str, Any]:
    ns = await namespace_id(app.db, p.namespace)
    rows = await q.audit_entries(
        app.db.reader, ns, subject=p.subject, actor=p.actor, before_id=p.before_id, limit=p.limit + 1
    )
    more = len(rows) > p.limit
    rows = rows[: p.limit]
    entries = await with_titles(app, ns, await entry_views(app, rows))
    return await hide_foreign(app.db.reader, ns, {
        "entries": entries, "next_before_id": int(rows[-1]["id"]) if more else None
    })
