"""``page.undo``: reverse one audited change — only what page/undo_rules.py names, only once, and only while the
change still holds (an overtaken change is refused, naming what is different now).

Each undo goes through the same store functions as the change (restore ↔ forget, pin ↔ unpin, archive + unsupersede
for an edit, maintenance's unmerge, dispute for a resolve, import removal, the settings store) and ends with one
``audit.undone`` entry naming the undone entry, so a second undo of it is refused."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from pydantic import Field

from stratagate import user_settings
from stratagate.app import App
from stratagate.errors import Invalid, NotFound
from stratagate.events import store
from stratagate.imports.store import parse_import_id, remove_import
from stratagate.maintenance import consolidate
from stratagate.maintenance import store as merges
from stratagate.page.review import pin_event, restore_event
from stratagate.page.settings_view import change_settings
from stratagate.page.undo_rules import UNDONE, undoable
from stratagate.page.writes import ACTOR, NamespaceParams, Written, event_of, namespace_id
from stratagate.protocol import method
from stratagate.storage import lookup
from stratagate.storage.db import audit, collect_audit_ids
from stratagate.storage.sqlite import Connection

Entry = dict[str, Any]


class UndoParams(NamespaceParams):
    audit_id: int = Field(ge=1, description="the id of the audit entry to undo (as page.audit lists it)")


class UndoResult(Written):
    undone: int
    label: str
    action: str = Field(description="the action of the entry undone (e.g. event.forgotten): what the page names")
    subject_id: str | None = Field(description="its subject (e.g. evt_3)")


def _after(entry: Entry) -> dict[str, Any]:
    return entry["after"] if isinstance(entry.get("after"), dict) else {}


def _note(entry: Entry) -> dict[str, Any]:
    note = _after(entry).get("note")
    return note if isinstance(note, dict) else {}


async def _subject(conn: Connection, ns: int, entry: Entry) -> Any:
    return await event_of(conn, ns, str(entry["subject_id"]), "subject")


async def _forgotten(conn: Connection, ns: int, entry: Entry) -> None:
    await restore_event(conn, await _subject(conn, ns, entry))


async def _restored(conn: Connection, ns: int, entry: Entry) -> None:
    ev = await _subject(conn, ns, entry)
    if ev.status == "forgotten":
        raise Invalid(f"{ev.public_id} is already forgotten")
    await store.forget(conn, ev, ACTOR, f"undo of audit entry {entry['id']}")


async def _pinned(conn: Connection, ns: int, entry: Entry) -> None:
    await pin_event(conn, await _subject(conn, ns, entry), False)


async def _unpinned(conn: Connection, ns: int, entry: Entry) -> None:
    await pin_event(conn, await _subject(conn, ns, entry), True)


async def _edited(conn: Connection, ns: int, entry: Entry) -> None:
    original = await _subject(conn, ns, entry)
    correction = await event_of(conn, ns, str(_after(entry).get("id")), "correction")
    if original.status != "superseded" or original.successor_id != correction.id:
        raise Invalid(f"{original.public_id} is {original.status} now, no longer replaced by its correction "
                             f"{correction.public_id}: nothing to undo")
    if correction.status not in ("active", "disputed"):
        raise Invalid(f"the correction {correction.public_id} is {correction.status} now (changed again "
                             "since); undo that change first")
    note = {"undo": entry["id"]}
    await store.archive(conn, correction, ACTOR, note)
    await store.unsupersede(conn, original, ACTOR, note)


async def _merged(conn: Connection, ns: int, entry: Entry) -> None:
    ev = await _subject(conn, ns, entry)
    open_merge = await merges.open_merge_of(conn, ev.id)
    if open_merge is None or int(open_merge["id"]) != _note(entry).get("merge"):
        raise Invalid(f"the merge of {ev.public_id} in audit entry {entry['id']} is no longer open "
                             "(it was unmerged since)")
    await consolidate.unmerge(conn, ev, ACTOR)


async def _resolved(conn: Connection, ns: int, entry: Entry) -> None:
    after = _after(entry)
    pair = after.get("pair")
    if not (isinstance(pair, list) and len(pair) == 2):
        raise Invalid(f"audit entry {entry['id']} does not name its pair")
    a = await event_of(conn, ns, str(pair[0]), "pair")
    b = await event_of(conn, ns, str(pair[1]), "pair")
    if after.get("kept") == "both":
        for ev in (a, b):
            if ev.status != "active":
                raise Invalid(f"{ev.public_id} is {ev.status} now, not active: the resolve was overtaken")
    else:
        if a.status != "active" or b.status != "superseded" or b.successor_id != a.id:
            raise Invalid(f"{a.public_id} is {a.status} and {b.public_id} {b.status} now: the resolve was "
                                 "overtaken, nothing to undo")
        b = await store.unsupersede(conn, b, ACTOR, {"undo": entry["id"]})  # back to its prior status: disputed
    current_a = await store.get_event(conn, a.id) or a
    await store.dispute(conn, current_a, b, ACTOR)
    current_b = await store.get_event(conn, b.id) or b
    await store.dispute(conn, current_b, current_a, ACTOR)


async def _superseded(conn: Connection, ns: int, entry: Entry) -> None:
    ev = await _subject(conn, ns, entry)
    if ev.status != "superseded" or ev.lifecycle()["successor_id"] != _after(entry).get("successor_id"):
        raise Invalid(f"{ev.public_id} is {ev.status} now, no longer superseded as in audit entry "
                             f"{entry['id']}: nothing to undo")
    await store.unsupersede(conn, ev, ACTOR, {"undo": entry["id"]})


UNDO: dict[str, Callable[[Connection, int, Entry], Awaitable[None]]] = {
    "event.forgotten": _forgotten,
    "event.restored": _restored,
    "event.pinned": _pinned,
    "event.unpinned": _unpinned,
    "event.edited": _edited,
    "event.merged": _merged,
    "event.resolved": _resolved,
    "event.superseded": _superseded,
}
"""Undos inside one transaction with their audit.undone entry (imports and settings have their own paths)."""


async def _checked(conn: Connection, p: UndoParams) -> tuple[int, Entry, str]:
    ns = await namespace_id(conn, p.namespace)
    entry = await lookup.audit_entry(conn, p.audit_id)
    # Settings are the database's, not a namespace's: their entries (namespace NULL) are undone from any namespace.
    if entry is None or entry["namespace_id"] not in (ns, None) or (
            entry["namespace_id"] is None and entry["action"] != "settings.changed"):
        raise NotFound(f"unknown audit entry {p.audit_id} in this namespace")
    label = undoable(entry)
    if label is None:
        raise Invalid(f"audit entry {p.audit_id} ({entry['action']}) cannot be undone",
                             {"action": entry["action"]})
    done = await lookup.audit_undone(conn, [p.audit_id])
    if done:
        raise Invalid(f"audit entry {p.audit_id} was already undone (audit entry {done[p.audit_id]})")
    return ns, entry, label


async def _mark(conn: Connection, entry: Entry, label: str, written: list[int]) -> None:
    await audit(conn, entry["namespace_id"], ACTOR, UNDONE, "audit", str(entry["id"]),
                {"action": entry["action"], "subject_id": entry["subject_id"]},
                {"undid": entry["id"], "label": label, "audit_ids": list(written)})


@method("page.undo", params=UndoParams, result=UndoResult, http="POST /undo")
async def undo(app: App, p: UndoParams) -> dict[str, Any]:
    """Undo one audited change (see page/undo_rules.py for which)."""
    after: dict[str, Any] | None = None
    with collect_audit_ids() as audit_ids:
        async with app.db.transaction() as conn:
            ns, entry, label = await _checked(conn, p)
            action = entry["action"]
            if action in UNDO:
                await UNDO[action](conn, ns, entry)
                await _mark(conn, entry, label, audit_ids)
            elif action == "settings.changed":
                before = entry["before"] if isinstance(entry.get("before"), dict) else {}
                now = await user_settings.stored_now(conn, app.user_settings)
                changed = [k for k, v in (_after(entry).get("stored") or {}).items() if now.get(k) != v]
                if changed:
                    raise Invalid(f"setting {changed[0]} was changed again since audit entry {entry['id']}; "
                                         "undo that change first")
                after = await change_settings(conn, app, dict(before.get("stored") or {}))
                await _mark(conn, entry, label, audit_ids)
        if action == "settings.changed":
            if after is not None:
                user_settings.assign(app.settings, app.user_settings, after)
                await app.settings_changed(after)
        elif action == "import.created":
            # The removal runs its own transaction (imports/store.py), then the undo is marked.
            await remove_import(app.db, parse_import_id(str(entry["subject_id"])), p.namespace, actor=ACTOR)
            async with app.db.transaction() as conn:
                await _checked(conn, p)  # nobody undid it meanwhile
                await _mark(conn, entry, label, audit_ids)
    return {"undone": p.audit_id, "label": label, "action": entry["action"], "subject_id": entry["subject_id"],
            "audit_ids": audit_ids}
