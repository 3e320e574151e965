"""A change pulled from the team server, applied to this machine's memory.

Each change is applied inside the caller's local transaction together with its step of the namespace's cursor (the
sync puts up to 20 in one), so a change is applied exactly once whatever is killed when. A ``create`` goes through the
one admission path (events/admit.py) as the ``system`` actor, its audit note naming the uid and member: redaction,
tombstones (a memory forgotten or erased here is not brought back), duplicates (the same words said here already:
one event, both uids linked) and graph projection apply as for any memory. A ``status`` goes through the store's own
functions (events/store.py ``mirror_status``), so tombstones and the graph follow. Changes this machine made itself
only raise the version it has seen. An ``erase`` runs the full erase (erase/), in its own transaction: the caller
applies it between two cursor steps.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal, cast

from stratagate.events import admit, store, team
from stratagate.events.models import Origin, Status
from stratagate.events.store import Source
from stratagate.storage.sqlite import Connection
from stratagate.team.server import Change

_STATUSES: frozenset[str] = frozenset({"active", "superseded", "disputed", "forgotten", "archived"})


def candidate(change: Change) -> admit.Candidate:
    b = change.body
    return admit.Candidate(
        statement=b["statement"], title=b.get("title"), summary=b.get("summary"), narrative=b.get("narrative"),
        tags=b.get("tags") or [], quotes=b.get("quotes") or [], participants=b.get("participants") or [],
        type=b.get("type") or "fact", scope="team", criticality=b.get("criticality") or "routine",
        confidence=b.get("confidence", 1.0), mentioned_at=datetime.fromisoformat(b["mentioned_at"]),
        time_original=b.get("time_original"), time_status=b.get("time_status") or "unknown",
        claims=b.get("claims") or [], sources=[Source(source_ref=f"team:{change.uid}")],
    )


async def apply(conn: Connection, namespace_id: int, change: Change, replica: str) -> Literal["applied", "erase"]:
    """Apply ``change`` inside the caller's transaction; ``erase``: the caller must erase the linked event."""
    event_id = await team.event_of(conn, change.uid)
    # This machine's own change is here already, unless the server turned it into a dispute.
    own = change.replica == replica and not change.body.get("conflict")
    if own or (event_id is not None and change.kind == "create"):
        if event_id is not None:
            await team.saw_version(conn, change.uid, change.version)
        return "applied"
    if change.kind == "create":
        if not change.body.get("statement"):
            return "applied"  # erased on the server before this machine saw it
        said = change.body.get("origin")
        origin: Origin = said if said in ("remember", "extraction", "import") else "remember"
        await admit.admit(conn, [candidate(change)], admit.Options(
            namespace_id=namespace_id, session_id=None, origin=origin, actor=team.TEAM_ACTOR,
            on_tombstone="suppress", on_exact_duplicate="merge", unknown_target="skip",
            note={"team": change.uid, "member": change.member},
            team=team.Stamp(change.uid, change.member, change.version)))
        return "applied"
    if event_id is None:
        return "applied"  # a memory this machine never took (suppressed by a tombstone here)
    if change.kind == "erase":
        return "erase"
    ev = await store.get_event(conn, event_id)
    status = change.body.get("status")
    if ev is not None and status in _STATUSES:
        successor = change.body.get("successor_uid")
        successor_id = await team.event_of(conn, successor) if successor else None
        note: dict[str, Any] = {"team": change.uid, "member": change.member}
        if change.body.get("conflict"):
            note["conflict"] = change.body["conflict"]
        await store.mirror_status(conn, ev, team.TEAM_ACTOR, cast(Status, status), successor_id, note)
    await team.saw_version(conn, change.uid, change.version)
    return "applied"
