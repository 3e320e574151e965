"""Consolidation: near-duplicate active events of a namespace merged into one survivor, reversibly.

What counts as a duplicate is the admission's own notion (``events.store.near_same``: ≥ 80 % word overlap, the same
numbers and dates, the same negation; or the same fingerprint), and only between events that could have been one:
the same namespace, type, time status and scope, and for ``session`` scope the same session (so a merge never widens
what a session sees). The survivor of a group is the pinned event, else the oldest; a pinned event is never merged
away, and an event that absorbs others in a run is not merged itself in that run.

A merge changes only what an unmerge can put back exactly: the merged event becomes ``superseded`` with
``successor_id`` = survivor (every reader already hides it and ``successor_chain`` leads to the survivor), the
merged event's evidence rows are COPIED to the survivor (their ids in ``event_merges.added_sources``) and so are its
graph fact links (so no fact changes status; they are kept in ``merged_before.graph_links``), and the merged
event's lifecycle columns before the merge are ``merged_before.event``. An unmerge deletes only those copies,
writes the lifecycle columns back byte for byte and marks the merge undone. Nothing is deleted by a merge.

``plan`` only reads (a dry run uses it on a read-only connection); ``apply`` re-checks each merge inside its own
short transaction, so a pass that races a capture or another pass merges nothing twice.
"""

from __future__ import annotations

import asyncio
import json
from collections import defaultdict
from typing import Any

from pydantic import BaseModel

from stratagate import ids
from stratagate.errors import Invalid, NotFound
from stratagate.events import store as events
from stratagate.events.models import SUPERSEDED_WEIGHT_CAP, EventRow
from stratagate.graph.store import follow_event_status
from stratagate.maintenance import store
from stratagate.maintenance.shapes import Shape, group_key, near, shapes
from stratagate.storage.db import Actor, Database, audit
from stratagate.storage.lookup import namespace_name
from stratagate.storage.sqlite import Connection
from stratagate.text.terms import terms
from stratagate.timeutil import now_iso


class Merge(BaseModel):
    """One planned (or done) merge of ``merged`` into ``survivor``."""

    namespace_id: int
    namespace: str
    survivor_id: int
    merged_id: int
    similarity: float
    match: str  # 'exact' (same fingerprint) or 'near'

    def public(self) -> dict[str, Any]:
        return {
            "namespace": self.namespace,
            "survivor": ids.make("evt", self.survivor_id),
            "merged": ids.make("evt", self.merged_id),
            "similarity": self.similarity,
            "match": self.match,
        }


def _jaccard(a: str, b: str) -> float:
    wa, wb = set(terms(a)), set(terms(b))
    return len(wa & wb) / len(wa | wb) if wa | wb else 0.0


def similarity(a: Any, b: Any) -> tuple[float, str] | None:
    """How alike two event rows are, if they are duplicates by the admission's rule; else None."""
    if a["fingerprint"] == b["fingerprint"]:
        return 1.0, "exact"
    scores = [
        _jaccard(a[field], b[field]) for field in ("summary", "narrative") if events.near_same(a[field], b[field])
    ]
    return (round(max(scores), 4), "near") if scores else None


def _pair_score(a: dict[str, Any], b: dict[str, Any], shaped: dict[int, list[Shape]]) -> tuple[float, str] | None:
    """``similarity`` of two rows of one group from their shapes, computed once per row."""
    if a["fingerprint"] == b["fingerprint"]:
        return 1.0, "exact"
    theirs = {s.field: s for s in shaped[int(b["id"])]}
    scores = [score for s in shaped[int(a["id"])] if (t := theirs.get(s.field)) is not None
              and t.bucket == s.bucket and (score := near(s.words, t.words)) is not None]
    return (round(max(scores), 4), "near") if scores else None


def _candidate_pairs(rows: list[dict[str, Any]], shaped: dict[int, list[Shape]]) -> set[tuple[int, int]]:
    """Index positions (i < j) that may be duplicates: the same fingerprint, or a shared bucket and prefix word
    (shapes.py: the prefix filter of set-similarity joins), so a plan is far from quadratic."""
    pairs: set[tuple[int, int]] = set()
    index: dict[tuple[str, str], list[int]] = defaultdict(list)
    for j, row in enumerate(rows):
        index[("fp", str(row["fingerprint"]))].append(j)
        for shape in shaped[int(row["id"])]:
            for token in shape.prefix:
                index[(shape.bucket, token)].append(j)
    for same in index.values():
        pairs.update((a, b) for k, a in enumerate(same) for b in same[k + 1 :] if a != b)
    return pairs


def plan_namespace(namespace_id: int, name: str, rows: list[dict[str, Any]]) -> list[Merge]:
    """The merges of one namespace's active events, all pairs considered (a dry run, and the reference the
    incremental sweep (sweep.py) keeps to). Pure; run in a worker thread."""
    out: list[Merge] = []
    groups: dict[str, list[dict[str, Any]]] = defaultdict(list)
    shaped: dict[int, list[Shape]] = {}
    for row in rows:
        groups[group_key(row)].append(row)
        shaped[int(row["id"])] = shapes(row)
    for members in groups.values():
        if len(members) < 2:
            continue
        neighbours: dict[int, list[int]] = defaultdict(list)
        for i, j in _candidate_pairs(members, shaped):
            neighbours[min(i, j)].append(max(i, j))
        taken: set[int] = set()
        for i, survivor in enumerate(members):  # survivors first: pinned, then the oldest
            if i in taken:
                continue
            for j in sorted(set(neighbours[i])):
                other = members[j]
                if j in taken or other["pinned"]:
                    continue
                score = _pair_score(survivor, other, shaped)
                if score is None:
                    continue
                taken.update((i, j))
                out.append(Merge(namespace_id=namespace_id, namespace=name, survivor_id=int(survivor["id"]),
                                 merged_id=int(other["id"]), similarity=score[0], match=score[1]))
    return out


async def plan(conn: Connection) -> list[Merge]:
    """Every merge a pass would make now, in the order it would make them. Reads only."""
    out: list[Merge] = []
    for namespace_id in await store.namespace_ids(conn):
        rows = [dict(r) for r in await store.active_events(conn, namespace_id)]
        if len(rows) < 2:
            continue
        name = await namespace_name(conn, namespace_id) or ""
        out += await asyncio.to_thread(plan_namespace, namespace_id, name, rows)
    return out


def mergeable(survivor: EventRow | None, merged: EventRow | None, *, chosen: bool = False) -> str | None:
    """Why ``merged`` cannot be merged into ``survivor`` now (None: it can). A merge the user ``chosen`` (the
    Memory page) may join events of another type or time status; never a pinned one, and never across scopes or
    sessions of session scope (a merge must not widen what a session sees)."""
    if survivor is None or merged is None:
        return "no such event"
    for ev in (survivor, merged):
        if ev.status != "active":
            return f"{ev.public_id} is {ev.status}; only active events are merged"
    if survivor.id == merged.id:
        return "an event cannot be merged into itself"
    if survivor.namespace_id != merged.namespace_id:
        return "the events belong to different namespaces"
    if merged.pinned:
        return f"{merged.public_id} is pinned; unpin it first"
    if survivor.scope != merged.scope:
        return f"{survivor.public_id} has scope {survivor.scope}, {merged.public_id} {merged.scope}"
    if survivor.scope == "session" and survivor.session_id != merged.session_id:
        return "session-scoped events of different sessions are never merged"
    if not chosen and (survivor.type, survivor.time_status) != (merged.type, merged.time_status):
        return "different type or time status"
    return None


async def merge_one(
    conn: Connection, m: Merge, actor: Actor, run_id: int | None, why: str, *, chosen: bool = False
) -> bool:
    """Apply one planned merge inside the caller's transaction, if it still holds; True when it was made.
    ``chosen``: the user picked the pair (the Memory page), so it need not be a near duplicate."""
    survivor = await events.get_event(conn, m.survivor_id)
    merged = await events.get_event(conn, m.merged_id)
    if mergeable(survivor, merged, chosen=chosen) is not None or await store.is_open_survivor(conn, m.merged_id):
        return False
    assert survivor is not None and merged is not None
    if not chosen and similarity(survivor.model_dump(), merged.model_dump()) is None:
        return False
    before = await store.lifecycle_columns(conn, merged.id)
    added_sources = await events.copy_sources(conn, merged.id, survivor.id)
    links = await store.copy_fact_links(conn, merged.id, survivor.id)
    await store.set_lifecycle(conn, merged.id, {
        "status": "superseded",
        "prior_status": merged.status,
        "successor_id": survivor.id,
        "weight_cap": SUPERSEDED_WEIGHT_CAP,
        "updated_at": now_iso(),
    })
    merge_id = await store.insert_merge(
        conn, m.namespace_id, survivor.id, merged.id, {"event": before, "graph_links": links}, added_sources,
        m.similarity, run_id, actor,
    )
    after = await events.get_event(conn, merged.id)
    assert after is not None
    await follow_event_status(conn, after, actor)  # facts it held are held by the survivor too: nothing changes
    await audit(conn, m.namespace_id, actor, "event.merged", "event", merged.public_id, merged.lifecycle(),
                after.lifecycle() | {"note": {
                    "into": survivor.public_id, "merge": merge_id, "similarity": m.similarity, "match": m.match,
                    "why": why, "sources_copied": len(added_sources), "fact_links_copied": len(links),
                    "run": run_id}})
    return True


async def apply(db: Database, merges: list[Merge], actor: Actor, run_id: int | None, why: str) -> list[Merge]:
    """Each merge in its own short transaction (the writer is never held for a whole pass); the ones made."""
    done = []
    for m in merges:
        async with db.transaction() as conn:
            if await merge_one(conn, m, actor, run_id, why):
                done.append(m)
    return done


async def unmerge(conn: Connection, merged: EventRow, actor: Actor) -> dict[str, Any]:
    """Undo the open merge of ``merged`` inside the caller's transaction: exactly what the merge did, no more."""
    row = await store.open_merge_of(conn, merged.id)
    if row is None:
        raise NotFound(f"{merged.public_id} is not a merged duplicate (no open merge)")
    survivor_key = int(row["survivor_id"])
    if merged.status != "superseded" or merged.successor_id != survivor_key:
        raise Invalid(
            f"{merged.public_id} is {merged.status} now, no longer merged into {ids.make('evt', survivor_key)}; "
            "only a merged duplicate that is still superseded by its survivor can be unmerged"
        )
    survivor = await events.get_event(conn, survivor_key)
    if survivor is not None and survivor.status == "forgotten":
        # Its words restate a forgotten memory: admission would refuse them too (a tombstone's near duplicate).
        raise Invalid(
            f"{survivor.public_id}, which {merged.public_id} was merged into, is forgotten; restore "
            f"{survivor.public_id} first (memory_restore), then unmerge"
        )
    before = json.loads(row["merged_before"])
    removed = await store.delete_copied(conn, survivor_key, json.loads(row["added_sources"]),
                                        before.get("graph_links", []))
    await store.set_lifecycle(conn, merged.id, before["event"])
    await store.mark_undone(conn, int(row["id"]))
    after = await events.get_event(conn, merged.id)
    assert after is not None
    await follow_event_status(conn, after, actor)
    await audit(conn, merged.namespace_id, actor, "event.unmerged", "event", merged.public_id, merged.lifecycle(),
                after.lifecycle() | {"note": {"from": ids.make("evt", survivor_key), "merge": int(row["id"]),
                                              "sources_removed": removed}})
    if survivor is not None and survivor.status == "superseded" and survivor.successor_id is not None:
        # What the survivor said was replaced since the merge (npm → pnpm): so is the duplicate, after the undo.
        successor = await events.get_event(conn, survivor.successor_id)
        if successor is not None and successor.status in ("active", "disputed"):
            await events.supersede(conn, after, successor, actor)
            after = await events.get_event(conn, merged.id) or after
    return {
        "event": after.public(),
        "survivor": ids.make("evt", survivor_key),
        "sources_removed": removed,
        "fact_links_removed": len(before.get("graph_links", [])),
    }


async def merged_into(conn: Connection, event_id: int) -> int | None:
    """The survivor this event is merged into (an open merge), if it is a merged duplicate."""
    row = await store.open_merge_of(conn, event_id)
    return None if row is None else int(row["survivor_id"])


async def unmerge_event(db: Database, event_ref: str, namespace: str | None, actor: Actor) -> dict[str, Any]:
    """``events.unmerge``: the merged duplicate ``evt_N`` (of ``namespace`` when given) back as it was."""
    key = ids.parse(event_ref, "evt")
    if key is None:
        raise Invalid(f"id must look like 'evt_12' (got {event_ref!r})")
    async with db.transaction() as conn:
        ev = await events.get_event(conn, key)
        if ev is None or (namespace is not None and await namespace_name(conn, ev.namespace_id) != namespace):
            raise NotFound(f"unknown event {event_ref}")
        return await unmerge(conn, ev, actor)
