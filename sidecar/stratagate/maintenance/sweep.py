"""Incremental consolidation: the pass's merges, found by index among the events changed since the last completed
sweep, in bounded slices.

A sweep visits the changed events (``updated_at`` at or after the watermark; every event on the first sweep or when
a full pass is asked) in the order survivors are chosen (pinned first, then the oldest). For each it refreshes the
event's shapes (shapes.py) and finds its near duplicates through the prefix index, then:

1. an unpinned event merges into the first of its duplicates that comes before it (the survivor a full pass picks);
2. an event that stays current takes the unchanged duplicates after it whose first duplicate it now is (an old
   event of the same memory, when this one was pinned or came back).

That is what the all-pairs plan (``consolidate.plan``) does, restricted to pairs with a changed event: unchanged
pairs were settled by the sweep that saw them. Every merge is re-checked in its transaction (``merge_one``).

Bounded: each slice is at most ``SLICE_S`` of work, then the loop yields; a request that arrives meanwhile ends the
slice at the next event (``waiting``), so it shares the loop with one event's examination at most, not with the rest
of the slice. In a pass of the sidecar (``hold``) slices share one transaction for up to ``HOLD_S``: a commit drops
the reader's page cache and the search memo, so a render right after one costs ~4 ms more at 10k events; without
commits between slices the renders during a sweep keep them. A write that asks for the lock (a capture) ends the
transaction at once (``WriteLock.wanted``), so it waits for one slice at most, as before. Resumable: the position is
stored with each commit (``maintenance_cursors``), so a stopped sweep goes on from there; the watermark moves to the
sweep's start only when it finishes. Memory: one slice of rows at a time (a shared transaction's pages stay in the
writer's page cache or spill to the WAL).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from stratagate.maintenance import shape_store as sql
from stratagate.maintenance.consolidate import Merge, merge_one
from stratagate.maintenance.gate import Hold, Pause, never, no_wait
from stratagate.maintenance.shapes import Shape, group_key, near, shapes
from stratagate.storage.db import Actor, Database
from stratagate.storage.lookup import namespace_name
from stratagate.storage.sqlite import Connection
from stratagate.timeutil import now_iso

STEP = "consolidate"
SLICE_S = 0.001  # work per slice: all a render answered just before shares the process with while its client reads
SLICE_ROWS = 16  # changed events read per statement
HOLD_S = 0.25  # longest a transaction stays open across slices (another process's writer, e.g. an MCP server on the
# same database, waits that long at most: a capture there is acknowledged only after its commit)
SCAN_IDS = 1024  # ids one scan statement covers (a statement never walks the whole table)


@dataclass
class Sweep:
    """What one call did: the merges made, the events examined, the slices run, whether the sweep finished."""

    merges: list[Merge] = field(default_factory=list)
    examined: int = 0
    slices: int = 0
    finished: bool = False
    full: bool = False


@dataclass
class _Ctx:
    actor: Actor
    run_id: int | None
    why: str
    since: str | None
    out: Sweep
    waiting: Callable[[], bool] = never
    names: dict[int, str] = field(default_factory=dict)


def _key(pinned: Any, event_id: int) -> tuple[int, int]:
    return -int(pinned), event_id


async def _similar(conn: Connection, row: Any, own: list[Shape]) -> dict[int, tuple[float, str, int]]:
    """The current duplicates of ``row`` by ``consolidate.similarity``'s rule: id → (score, match, pinned)."""
    out: dict[int, tuple[float, str, int]] = {}
    group = group_key(row)
    for r in await sql.exact_candidates(conn, row):
        if group_key(r) == group:
            out[int(r["id"])] = (1.0, "exact", int(r["pinned"]))
    for shape in own:
        for c in await sql.near_candidates(conn, shape, int(row["id"])):
            cid = int(c["id"])
            score = near(shape.words, frozenset(str(c["words"]).split(" ")))
            if score is None or (cid in out and (out[cid][1] == "exact" or out[cid][0] >= score)):
                continue
            out[cid] = (round(score, 4), "near", int(c["pinned"]))
    return out


async def _stored(conn: Connection, event_id: int) -> list[Shape]:
    return [Shape(int(r["field"]), str(r["bucket"]), frozenset(str(r["words"]).split(" ")),
                  await sql.prefix_of(conn, event_id, int(r["field"])))
            for r in await sql.stored_shapes(conn, event_id)]


async def _merge(conn: Connection, ctx: _Ctx, row: Any, survivor: int, score: tuple[float, str, int]) -> bool:
    ns = int(row["namespace_id"])
    if ns not in ctx.names:
        ctx.names[ns] = await namespace_name(conn, ns) or ""
    m = Merge(namespace_id=ns, namespace=ctx.names[ns], survivor_id=survivor, merged_id=int(row["id"]),
              similarity=score[0], match=score[1])
    if await merge_one(conn, m, ctx.actor, ctx.run_id, ctx.why):
        ctx.out.merges.append(m)
        return True
    return False


async def _take_later(conn: Connection, ctx: _Ctx, row: Any, found: dict[int, tuple[float, str, int]]) -> None:
    """Rule 2: unchanged duplicates after ``row`` whose first duplicate is ``row`` now merge into it."""
    mine = _key(row["pinned"], int(row["id"]))
    for other in sorted((i for i, s in found.items() if _key(s[2], i) > mine and not s[2]), key=lambda i: i):
        later = await sql.event_row(conn, other)
        if later is None or later["status"] != "active" or str(later["updated_at"]) >= str(ctx.since):
            continue  # a changed one is examined in its own turn
        theirs = await _similar(conn, later, await _stored(conn, other))
        first = min(theirs, key=lambda i: _key(theirs[i][2], i), default=None)
        if first == int(row["id"]):
            await _merge(conn, ctx, later, first, theirs[first])


async def _examine(conn: Connection, ctx: _Ctx, row: Any) -> None:
    """One changed event: its shapes refreshed, then merged into its survivor or taking its later duplicates."""
    event_id = int(row["id"])
    ctx.out.examined += 1
    if row["status"] != "active":
        await sql.drop_shapes(conn, event_id)  # only current events are candidates
        return
    own = shapes(row)
    await sql.put_shapes(conn, event_id, own)
    found = await _similar(conn, row, own)
    mine = _key(row["pinned"], event_id)
    earlier = [i for i, s in found.items() if _key(s[2], i) < mine]
    if earlier and not row["pinned"]:
        first = min(earlier, key=lambda i: _key(found[i][2], i))
        await _merge(conn, ctx, row, first, found[first])
        return  # merged, or refused (an already absorbing event stays as it is)
    # A pinned event stays current even with an earlier duplicate: it takes its later ones like any survivor.
    if ctx.since is not None:
        await _take_later(conn, ctx, row, found)


async def _slice(conn: Connection, ctx: _Ctx, pos: dict[str, Any]) -> bool:
    """Examine changed events from ``pos`` until ``SLICE_S`` is spent (one step at least); ``pos`` moves on. True
    when the sweep is done."""
    t0 = time.perf_counter()
    while pos["phase"] >= 0:
        window = min(pos["after"] + SCAN_IDS, pos["upto"])
        rows = await sql.changed_events(conn, pos["phase"], pos["after"], window, ctx.since, SLICE_ROWS)
        if not rows:
            pos["after"] = window
            if window >= pos["upto"]:
                pos["phase"], pos["after"] = pos["phase"] - 1, 0
        for row in rows:
            await _examine(conn, ctx, row)
            pos["after"] = int(row["id"])
            if time.perf_counter() - t0 >= SLICE_S or ctx.waiting():
                break
        if time.perf_counter() - t0 >= SLICE_S or ctx.waiting():
            break
    return pos["phase"] < 0


async def _slices(db: Database, conn: Connection, ctx: _Ctx, pos: dict[str, Any], hold: Hold | None,
                  max_slices: int | None) -> bool:
    """Slices in one transaction: one, or with ``hold`` as many as fit in ``HOLD_S`` while no other write asks for
    the lock, holding between them (requests in flight go first and find the reader's page cache still valid,
    since nothing was committed). True when the sweep is done."""
    opened = time.monotonic()
    while True:
        done = await _slice(conn, ctx, pos)
        ctx.out.slices += 1
        if (done or hold is None or db.write_lock.wanted() or time.monotonic() - opened >= HOLD_S
                or (max_slices is not None and ctx.out.slices >= max_slices)):
            return done
        await hold(db.write_lock)
        if db.write_lock.wanted():
            return done


async def run(db: Database, actor: Actor, run_id: int | None, why: str, *, full: bool = False,
              max_slices: int | None = None, pause: Pause = no_wait, waiting: Callable[[], bool] = never,
              hold: Hold | None = None) -> Sweep:
    """Go on with the unfinished sweep (or start one: everything when ``full`` or never swept, else what changed
    since the watermark) until it finishes, or ``max_slices`` slices ran (then it stays resumable). ``waiting``:
    whether a request is in flight (a slice then ends at its next event). ``hold``: slices may share a transaction
    (``_slices``), waiting with it between them; without it each slice commits."""
    state = await sql.cursor(db.reader, STEP)
    pos = state.get("sweep")
    if full or pos is None:
        async with db.transaction() as conn:
            since = None if full else state.get("watermark")
            pos = {"since": since, "started": now_iso(), "phase": 1, "after": 0, "upto": await sql.max_event_id(conn)}
    out = Sweep(full=pos["since"] is None)
    ctx = _Ctx(actor, run_id, why, pos["since"], out, waiting)
    while max_slices is None or out.slices < max_slices:
        async with db.transaction() as conn:
            done = await _slices(db, conn, ctx, pos, hold, max_slices)
            nxt = {"watermark": pos["started"]} if done else {"watermark": state.get("watermark"), "sweep": pos}
            await sql.set_cursor(conn, STEP, nxt)
        await pause()  # requests in flight go first
        if done:
            out.finished = True
            break
    return out
