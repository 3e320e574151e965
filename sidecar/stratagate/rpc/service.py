"""The DSH memory service's methods (``service.*``): what another DSH plugin calls through the shim's
``stratagateMemory`` object (also provided as ``crossSessionMemory``, dsh-memory-connect's service name), mapped
onto events, maintenance and consolidation here. The shim only forwards: the caller's memory space, every default,
every check and the ``Memory`` shape (events/memory_shape.py) are decided in this module. Results go through the
rendering rule like tool results: a plugin may hand them to a model. See docs/protocol.md."""

from __future__ import annotations

import asyncio
import os
from collections.abc import Callable
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from stratagate import ids
from stratagate.dsh.session import SessionNamespaceParams, session_namespace
from stratagate.errors import invalid_params
from stratagate.events import service_store, visibility
from stratagate.events import store as events
from stratagate.events.admit import Candidate, Options, admit
from stratagate.events.memory_shape import Memory, epoch_ms, matches_type, memory, stored_as
from stratagate.events.models import EventRow
from stratagate.events.store import Source
from stratagate.events.visibility import Viewer
from stratagate.maintenance import store as maintenance_store
from stratagate.namespaces import ResolveParams, resolve
from stratagate.protocol import method
from stratagate.rpc.service_models import (
    Caller,
    GetParams,
    LogEntry,
    LogList,
    LogParams,
    MaintenanceResult,
    MaybeMemory,
    MemoryList,
    MergeBrief,
    Params,
    RecallParams,
    SchedulerStatus,
    SearchParams,
    SessionCount,
    SimilarList,
    SimilarPair,
    SimilarParams,
    Stats,
    StoredMemory,
    StoreParams,
)
from stratagate.safety.inert import inert_tree
from stratagate.storage.lookup import ensure_namespace, ensure_session, scope_keys
from stratagate.storage.sqlite import Connection
from stratagate.tools.scope import query_match

if TYPE_CHECKING:
    from stratagate.app import App

ACTOR = "agent"  # another plugin's code, acting for the session: audited like the agent's own tools
SEARCHED = ["active", "disputed"]
POOL = 60
"""Matches read before a filter the search cannot apply itself (several types, an alias, another session's)."""


def namespace_of(app: App, caller: Caller) -> str:
    """The caller's memory space, as ``namespace.for_session`` keys a session (the page's mode wins over the
    plugin's); without a session, the working directory (project mode) or the global name."""
    mode = app.settings.namespace_mode or caller.mode
    if caller.session is not None:
        facts = SessionNamespaceParams(mode=mode, session=caller.session, cwd=caller.cwd, name=caller.name)
        return session_namespace(facts).namespace
    if mode == "global":
        return resolve(ResolveParams(mode="global", name=caller.name or "default"))["namespace"]
    if mode == "project" and caller.cwd and os.path.isabs(caller.cwd):
        return resolve(ResolveParams(mode="project", cwd=caller.cwd))["namespace"]
    raise invalid_params(
        f"this call names no session, and namespace mode {mode!r} needs one to find the memory space: pass a "
        "session id (sessionId, recallForSession's first argument) or use forSession(session)"
    )


async def _viewer(conn: Connection, namespace: str, session: str | None) -> Viewer:
    ns, sess = await scope_keys(conn, namespace, session)
    return await visibility.viewer(conn, ns, sess)


async def _shaped(conn: Connection, found: list[tuple[EventRow, float | None]]) -> list[Memory]:
    """Events as ``Memory`` objects, scores scaled so the best hit is 1.0, with their use counts."""
    used = await service_store.uses(conn, [ev.id for ev, _ in found])
    best = max((score or 0.0) for _, score in found) if found else 0.0
    return [
        memory(ev, used.get(ev.id, (0, None)), None if score is None or best <= 0 else score / best)
        for ev, score in found
    ]


def _out(value: Any) -> Any:
    """The rendering rule over a result (protocol/toolbox.py does the same for tool results)."""
    dumped = value.model_dump(mode="json", by_alias=True)
    return type(value).model_validate(inert_tree(dumped))


async def _search(
    app: App, namespace: str, session: str | None, text: str, keep: Callable[[EventRow, int | None], bool], limit: int,
    event_type: str | None = None,
) -> list[Memory]:
    """Up to ``limit`` matches of ``text`` that ``keep(event, the caller's session key)`` keeps, best first."""
    conn = app.db.reader
    match, unsearchable = query_match(text)
    if match is None or unsearchable:
        return []
    ns, sess = await scope_keys(conn, namespace, session)  # no row yet: the user tier only
    filters = events.EventFilter(statuses=SEARCHED, type=event_type)
    found = await events.search(conn, ns, sess, match, filters, limit=max(limit, POOL))
    return await _shaped(conn, [(ev, score) for ev, score in found if keep(ev, sess)][:limit])


@method("service.search", params=SearchParams, result=MemoryList)
async def search_memories(app: App, p: SearchParams) -> Any:
    namespace = namespace_of(app, p.caller)
    kinds = list(dict.fromkeys(p.types or []))
    single = stored_as(kinds[0]) if len(kinds) == 1 else None
    event_type = single[0] if single is not None and single[1] is None else None  # else filtered below
    tags = set(p.tags or [])

    def keep(ev: EventRow, _sess: int | None) -> bool:
        return (
            (not kinds or matches_type(ev, kinds))
            and tags <= set(ev.tags)
            and (p.exclude_session_id is None or ev.session_key != p.exclude_session_id)
        )

    found = await _search(app, namespace, p.caller.session, p.query, keep, p.limit, event_type)
    return _out(MemoryList(found))


@method("service.recall", params=RecallParams, result=MemoryList)
async def recall_for_session(app: App, p: RecallParams) -> Any:
    if p.caller.session is None:
        raise invalid_params("recallForSession needs a session id (its first argument)")
    namespace = namespace_of(app, p.caller)

    def keep(ev: EventRow, sess: int | None) -> bool:
        # What this session did not say itself: its own words are in its history already.
        return sess is None or ev.session_id != sess

    return _out(MemoryList(await _search(app, namespace, p.caller.session, p.context, keep, p.limit)))


@method("service.store", params=StoreParams, result=StoredMemory)
async def store_memory(app: App, p: StoreParams) -> Any:
    namespace = namespace_of(app, p.caller)
    event_type, alias_tag = stored_as(p.type)
    tags = list(dict.fromkeys([*p.tags, *([alias_tag] if alias_tag else [])]))
    if len(tags) > 12:
        raise invalid_params("tags: at most 12 (with the type's own tag)")
    candidate = Candidate(
        statement=p.content, tags=tags, type=event_type, mentioned_at=datetime.now(UTC),
        sources=[Source(source_ref="dsh service storeMemory", quote=p.content.strip())],
    )
    async with app.db.transaction() as conn:
        ns = await ensure_namespace(conn, namespace)
        sess = (await ensure_session(conn, ns, p.caller.session))[0] if p.caller.session else None
        options = Options(
            namespace_id=ns, session_id=sess, origin="remember", actor=ACTOR, on_tombstone="refuse",
            on_exact_duplicate="keep", unknown_target="error", note={"via": "dsh memory service"},
        )
        (outcome,) = (await admit(conn, [candidate], options)).outcomes
    assert outcome.event is not None
    (shaped,) = await _shaped(app.db.reader, [(outcome.event, None)])
    duplicate = outcome.result != "inserted"
    note = f"already stored as {outcome.event.public_id}; nothing new was stored" if duplicate else None
    return _out(StoredMemory(**shaped.model_dump(), duplicate=duplicate, note=note))


@method("service.get", params=GetParams, result=MaybeMemory)
async def get_memory(app: App, p: GetParams) -> Any:
    key = ids.parse(p.id, "evt")
    if key is None:
        raise invalid_params(f"memory ids look like 'evt_12' (got {p.id!r})")
    conn = app.db.reader
    viewer = await _viewer(conn, namespace_of(app, p.caller), p.caller.session)
    ev = await events.get_event(conn, key)
    if ev is None or not ev.visible_to(viewer) or ev.status == "forgotten":
        return MaybeMemory(None)  # another space's, a forgotten one and none at all look the same
    return _out(MaybeMemory((await _shaped(conn, [(ev, None)]))[0]))


@method("service.stats", params=Params, result=Stats)
async def get_stats(app: App, p: Params) -> Any:
    namespace = namespace_of(app, p.caller)
    ns, _ = await scope_keys(app.db.reader, namespace, None)
    counted = await service_store.counts(app.db.reader, ns) if ns is not None else None
    by_type = counted["by_type"] if counted else {}
    return _out(Stats(
        namespace=namespace,
        total_memories=sum(by_type.values()),
        by_type=by_type,
        by_status=counted["by_status"] if counted else {},
        top_sessions=[SessionCount(session_id=s, count=n) for s, n in (counted["top_sessions"] if counted else [])],
    ))


@method("service.maintenance", params=Params, result=MaintenanceResult)
async def trigger_maintenance(app: App, p: Params) -> Any:
    namespace = namespace_of(app, p.caller)
    report = await app.maintenance.run_pass("manual", ACTOR)
    mine = [m for m in report["merges"] if m["namespace"] == namespace]
    return _out(MaintenanceResult(
        triggered=True, run_id=report["run_id"], merged=len(mine), merged_total=int(report["merged"]),
        merges=[MergeBrief(**{k: m[k] for k in ("survivor", "merged", "similarity", "match")}) for m in mine],
    ))


@method("service.scheduler", params=Params, result=SchedulerStatus)
async def scheduler_status(app: App, p: Params) -> Any:
    # One schedule for the whole database: the caller's memory space does not change it.
    interval_ms = int(app.settings.maintenance_interval_hours * 3_600_000)
    conn = app.db.reader
    last = await maintenance_store.newest_run(conn)
    job = await maintenance_store.job_row(conn)
    return SchedulerStatus(
        enabled=interval_ms > 0,
        running=app.maintenance.lock.locked(),
        interval_ms=interval_ms,
        consolidate_interval_ms=interval_ms,
        decay_interval_ms=None,
        last_run=epoch_ms(last["started_at"]) if last is not None else None,
        last_run_status=last["status"] if last is not None else None,
        last_run_trigger=last["trigger"] if last is not None else None,
        next_run_at=int(job["next_run_at"] * 1000) if job is not None and job["status"] == "queued" else None,
    )


@method("service.similar", params=SimilarParams, result=SimilarList)
async def find_similar(app: App, p: SimilarParams) -> Any:
    # The pass's own duplicate rule for one namespace (imported when used: maintenance loads it lazily too).
    from stratagate.maintenance.consolidate import plan_namespace

    namespace = namespace_of(app, p.caller)
    conn = app.db.reader
    ns, _ = await scope_keys(conn, namespace, None)
    if ns is None:
        return SimilarList([])
    rows = [dict(r) for r in await maintenance_store.active_events(conn, ns)]
    merges = await asyncio.to_thread(plan_namespace, ns, namespace, rows)
    wanted = [m for m in merges if p.threshold is None or m.similarity >= p.threshold]
    by_id = {ev.id: ev for ev in await events.get_events(conn, sorted({k for m in wanted
                                                                         for k in (m.survivor_id, m.merged_id)}))}
    shaped = {m.id: m for m in await _shaped(conn, [(ev, None) for ev in by_id.values()])}
    pairs = [
        SimilarPair(m1=shaped[ids.make("evt", m.survivor_id)], m2=shaped[ids.make("evt", m.merged_id)],
                    score=m.similarity, match=m.match)
        for m in wanted
        if m.survivor_id in by_id and m.merged_id in by_id
    ]
    return _out(SimilarList(sorted(pairs, key=lambda pair: -pair.score)))


@method("service.consolidation_log", params=LogParams, result=LogList)
async def consolidation_log(app: App, p: LogParams) -> Any:
    namespace = namespace_of(app, p.caller)
    ns, _ = await scope_keys(app.db.reader, namespace, None)
    rows = await service_store.merge_log(app.db.reader, ns, p.limit) if ns is not None else []
    return LogList([
        LogEntry(
            id=int(r["id"]),
            source_memory_ids=[ids.make("evt", int(r["merged_id"]))],
            target_memory_id=ids.make("evt", int(r["survivor_id"])),
            merge_score=float(r["similarity"]),
            merged_at=epoch_ms(r["created_at"]) or 0,
            undone_at=epoch_ms(r["undone_at"]),
            run_id=r["run_id"],
            actor=str(r["actor"]),
        )
        for r in rows
    ])
