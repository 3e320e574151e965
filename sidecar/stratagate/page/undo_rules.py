"""Which audit entries the Memory page can undo, and the label of each undo: one pure rule over an audit entry.

``page.audit`` (page/audit_view.py) shows the label next to an entry; ``page.undo`` (page/review.py) applies the
undo only to entries this module names, and re-checks the current state first (an entry whose change was since
undone or overtaken is refused there, naming why). An entry is the audit row as the page shows it: ``{id, at, actor,
action, subject_type, subject_id, before, after}`` with ``before``/``after`` parsed JSON (or None).

The table (action → what the undo does):

- ``event.forgotten`` → restore it;          ``event.restored`` → forget it again
- ``event.pinned``    → unpin it;            ``event.unpinned`` → pin it again
- ``event.edited``    → archive the correction, unsupersede the original (the page's edit)
- ``event.merged``    → unmerge it (maintenance's merges too: ``event_merges`` keeps what to put back)
- ``event.resolved``  → both events back to disputed (the page's resolve)
- ``event.superseded`` by actor ``user`` → unsupersede it
- ``import.created``  → remove the import (restores what it superseded)
- ``settings.changed`` → the settings as they were before

Entries written as one step of a compound page action carry ``after.note.part_of`` (the anchor's action): they are
undone through their anchor entry, never one by one. Undo entries themselves are ``audit.undone`` (subject
``audit``/``<id>``), not undoable; what an undo changed is (forget ↔ restore, pin ↔ unpin redo that way).
Not undoable: ``namespace.deleted`` (the rows are gone), ``job.retried``, ``import.removed``, and everything else.
"""

from __future__ import annotations

from typing import Any

from stratagate.storage import lookup

UNDONE = lookup.UNDONE
"""The action of the entry ``page.undo`` writes for each undo: subject_type ``audit``, subject_id ``str(id)`` of the
entry it undid, ``after = {"undid": id, "action": ..., "audit_ids": [...]}``. An entry is undone when such an entry
names it."""

PART_OF = "part_of"
"""Key in ``after.note`` of an entry that is one step of a compound page action (edit, resolve)."""


def _note(entry: dict[str, Any]) -> dict[str, Any]:
    after = entry.get("after")
    note = after.get("note") if isinstance(after, dict) else None
    return note if isinstance(note, dict) else {}


def _after(entry: dict[str, Any], key: str) -> Any:
    after = entry.get("after")
    return after.get(key) if isinstance(after, dict) else None


def undoable(entry: dict[str, Any]) -> str | None:
    """The label of the undo of ``entry`` (e.g. ``"Restore evt_3"``), or None when the page cannot undo it."""
    action = entry.get("action")
    subject = entry.get("subject_id") or ""
    if _note(entry).get(PART_OF):
        return None
    if action == "event.forgotten":
        return f"Restore {subject}"
    if action == "event.restored":
        return f"Forget {subject} again"
    if action == "event.pinned":
        return f"Unpin {subject}"
    if action == "event.unpinned":
        return f"Pin {subject} again"
    if action == "event.edited":
        correction = _after(entry, "id")
        return f"Undo the edit of {subject}" + (f" (archive {correction})" if correction else "")
    if action == "event.merged":
        into = _note(entry).get("into")
        return f"Unmerge {subject}" + (f" from {into}" if into else "")
    if action == "event.resolved":
        pair = _after(entry, "pair")
        if isinstance(pair, list) and len(pair) == 2:
            return f"Reopen the dispute of {pair[0]} and {pair[1]}"
        return "Reopen the dispute"
    if action == "event.superseded" and entry.get("actor") == "user":
        return f"Unsupersede {subject}"
    if action == "import.created":
        return f"Remove {subject}"
    if action == "settings.changed":
        return "Restore the previous settings"
    return None
