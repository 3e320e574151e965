"""Imports into long-term memory: a parsed batch becomes events (origin 'import') in one transaction, and removing
an import archives its events and undoes the supersessions they caused. The source text is kept verbatim.

Reports and audit rows name events and counts only, never memory text: a forgotten memory must not reappear
through an import report.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any, Final

import aiosqlite

import stratagate.graph  # noqa: F401  (registers the graph's status hook: facts follow events)
from stratagate import ids
from stratagate.errors import invalid_params, not_found
from stratagate.events import store
from stratagate.events.models import EventRow, EventType, NewEvent, Scope
from stratagate.events.projection_queue import enqueue_projection
from stratagate.events.temporal import build_temporal
from stratagate.imports.parsers import ImportBatch, sha256_text
from stratagate.redact import redact
from stratagate.safety.secrets import scrub_known, secrets_in
from stratagate.storage.db import Actor, Database, audit
from stratagate.storage.lookup import ensure_namespace
from stratagate.timeutil import now_iso

TITLE_CHARS: Final = 80
SUMMARY_CHARS: Final = 300

_TYPES: Final[dict[str, EventType]] = {
    "decision": "decision",
    "preference": "preference",
    "plan": "plan",
    "change": "change",
    "fact": "fact",
    "event": "event",
    "decisions": "decision",
    "preferences": "preference",
    "user_preferences": "preference",
    "pref": "preference",
    "plans": "plan",
    "goal": "plan",
    "goals": "plan",
    "todo": "plan",
    "task": "plan",
    "changes": "change",
    "facts": "fact",
    "events": "event",
}
# Source statuses that still mean "current". Anything else (archived, deleted, disabled, consolidated into a
# parent memory, paused …) is history in the source and is not imported as a current memory.
_ACTIVE_STATUSES: Final = frozenset({"active", "enabled", "decayed"})


def parse_import_id(value: str) -> int:
    """The row id of a public import id ``imp_N``; anything else is invalid params."""
    key = ids.parse(value, "imp")
    if key is None:
        raise invalid_params(f"import ids look like 'imp_3' (got {value!r})")
    return key


def event_type(kind: str | None) -> EventType:
    """The event type for a source's kind/category; 'fact' unless it is (a plain synonym of) an event type."""
    if kind is None:
        return "fact"
    return _TYPES.get(kind.strip().casefold().replace("-", "_").replace(" ", "_"), "fact")


def check_scope(scope: Scope) -> None:
    if scope == "session":
        raise invalid_params(
            "scope 'session' is not allowed for imports (an import belongs to no session); use 'user' or 'project'"
        )


def _clip(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"


async def _add_import_source(
    conn: aiosqlite.Connection, event_id: int, quote: str, import_id: int, source_ref: str
) -> None:
    # events.store.insert_sources knows only message sources; import provenance has its own two columns.
    await conn.execute(
        "INSERT INTO event_sources(event_id, message_id, call_id, quote, import_id, source_ref, created_at)"
        " VALUES (?, NULL, NULL, ?, ?, ?, ?)",
        (event_id, quote, import_id, source_ref, now_iso()),
    )


async def _active_import_with(conn: aiosqlite.Connection, namespace_id: int, sha: str) -> int | None:
    row = await (
        await conn.execute(
            "SELECT id FROM imports WHERE namespace_id = ? AND source_sha256 = ? AND status = 'active' ORDER BY id",
            (namespace_id, sha),
        )
    ).fetchone()
    return None if row is None else int(row[0])


async def run_import(
    db: Database,
    namespace: str,
    batch: ImportBatch,
    *,
    scope: Scope = "user",
    actor: Actor = "user",
    allow_duplicate: bool = False,
    allow_duplicate_name: str = "allow_duplicate",
) -> dict[str, Any]:
    """Store ``batch`` as one import in ``namespace``: all of it or nothing. Returns the report (no memory text).
    ``allow_duplicate_name`` is how the caller spells that switch in the duplicate error (the CLI: a flag)."""
    check_scope(scope)
    now = datetime.now(UTC)
    # Secrets never reach the database: the source is stored redacted, and its checksum is of what is stored
    # (the same file still redacts to the same text, so duplicate detection keeps working).
    # A secret the parser decoded from an escaped form (JSON \\u escapes) is found in the item and removed from the
    # raw text too.
    found = [f for item in batch.items for t in (item.flat_text, item.text, item.source_ref) for f in secrets_in(t)]
    source_text = redact(scrub_known(batch.source_text, found))
    source_name = redact(batch.source_name)
    source_sha256 = sha256_text(source_text)
    async with db.transaction() as conn:
        ns = await ensure_namespace(conn, namespace)
        existing = await _active_import_with(conn, ns, source_sha256)
        if existing is not None and not allow_duplicate:
            imp = ids.make("imp", existing)
            raise invalid_params(
                f"{source_name} was already imported into {namespace} as {imp} (same SHA-256); "
                f"remove {imp} first or pass {allow_duplicate_name} to import it again",
                {"import_id": imp},
            )
        cursor = await conn.execute(
            "INSERT INTO imports(namespace_id, format, source_name, source_text, source_sha256, item_count, status,"
            " created_at) VALUES (?, ?, ?, ?, ?, ?, 'active', ?)",
            (ns, batch.format, source_name, source_text, source_sha256, len(batch.items), now_iso()),
        )
        import_id = int(cursor.lastrowid or 0)
        imp = ids.make("imp", import_id)
        inserted: list[EventRow] = []
        merged: list[str] = []
        tombstones: list[str] = []
        suppressed = 0
        skipped: dict[str, int] = {}
        format_tag = f"import:{batch.format}"
        for item in batch.items:
            if item.status is not None and item.status.casefold() not in _ACTIVE_STATUSES:
                skipped[item.status] = skipped.get(item.status, 0) + 1
                continue
            text = redact(item.flat_text)
            quote = redact(item.text)
            fp = store.fingerprint(text)
            tomb = await store.tombstone_for(conn, ns, fp)
            if tomb is not None:  # forgotten on request: an import never brings it back
                suppressed += 1
                if ids.make("evt", tomb) not in tombstones:
                    tombstones.append(ids.make("evt", tomb))
                continue
            dup = await store.current_duplicate(conn, ns, None, fp)
            if dup is not None:
                await _add_import_source(conn, dup.id, quote, import_id, redact(item.source_ref))
                await audit(
                    conn,
                    ns,
                    actor,
                    "event.sources_added",
                    "event",
                    dup.public_id,
                    None,
                    {"import": imp, "source_ref": redact(item.source_ref)},
                )
                merged.append(dup.public_id)
                continue
            etype = event_type(item.kind)
            # Said when the source recorded it; an item without a date was said now (the import).
            temporal = build_temporal(None, item.created_at or now, "unknown").model_dump(mode="json")
            new = NewEvent(
                namespace_id=ns,
                session_id=None,
                origin="import",
                import_id=import_id,
                title=_clip(text, TITLE_CHARS),
                summary=_clip(text, SUMMARY_CHARS),
                narrative=text,
                tags=list(dict.fromkeys([*(redact(t) for t in item.tags), format_tag])),
                quotes=[quote],
                type=etype,
                scope=scope,
                criticality="preference" if etype == "preference" else "routine",
                confidence=1.0,
                **store.temporal_columns(temporal),
                fingerprint=fp,
            )
            event = await store.insert_event(conn, new, actor)
            await _add_import_source(conn, event.id, quote, import_id, redact(item.source_ref))
            inserted.append(event)
        report: dict[str, Any] = {
            "import_id": imp,
            "namespace": namespace,
            "format": batch.format,
            "source_name": source_name,
            "source_sha256": source_sha256,
            "items": len(batch.items),
            "inserted": [e.public_id for e in inserted],
            "merged": merged,
            "suppressed": suppressed,
            "tombstones": tombstones,
            "skipped_inactive": sum(skipped.values()),
            "skipped_statuses": skipped,
            "warnings": [redact(w) for w in batch.warnings],
        }
        # The graph is a projection of events: new events get projection jobs like any others.
        jobs = await enqueue_projection(conn, ns, [e.id for e in inserted], reason=f"import {imp}")
        report["projection_jobs"] = [ids.make("job", j) for j in jobs]
        await conn.execute(
            "UPDATE imports SET report = ? WHERE id = ?", (json.dumps(report, ensure_ascii=False), import_id)
        )
        await audit(conn, ns, actor, "import.created", "import", imp, None, report)
    return report


async def remove_import(
    db: Database, import_id: int, namespace: str | None, *, actor: Actor = "user"
) -> dict[str, Any]:
    """Mark an import removed, archive its events, and restore what they had superseded.

    ``namespace`` confines the id to that namespace (the RPC method always passes it; only the CLI, run by the
    database's owner, may pass None)."""
    imp = ids.make("imp", import_id)
    async with db.transaction() as conn:
        row = await (
            await conn.execute(
                "SELECT i.namespace_id, i.status FROM imports i JOIN namespaces n ON n.id = i.namespace_id"
                " WHERE i.id = ? AND (? IS NULL OR n.name = ?)",
                (import_id, namespace, namespace),
            )
        ).fetchone()
        if row is None:
            raise not_found(f"unknown import {imp}" + (f" in namespace {namespace!r}" if namespace else ""))
        if row["status"] != "active":
            raise invalid_params(f"{imp} was already removed")
        ns = int(row["namespace_id"])
        await conn.execute("UPDATE imports SET status = 'removed', removed_at = ? WHERE id = ?", (now_iso(), import_id))
        # A forgotten event stays forgotten: archiving it would hide the tombstone's event from memory_restore.
        rows = await conn.execute_fetchall(
            "SELECT id FROM events WHERE import_id = ? AND status NOT IN ('archived', 'forgotten') ORDER BY id",
            (import_id,),
        )
        archived: list[int] = []
        for (event_id,) in rows:
            ev = await store.get_event(conn, int(event_id))
            assert ev is not None
            await store.archive(conn, ev, actor, {"import": imp})
            archived.append(ev.id)
        restored: list[str] = []
        if archived:
            marks = ", ".join("?" for _ in archived)
            preds = await conn.execute_fetchall(
                f"SELECT id FROM events WHERE successor_id IN ({marks}) AND status = 'superseded' ORDER BY id",
                archived,
            )
            for (event_id,) in preds:
                ev = await store.get_event(conn, int(event_id))
                assert ev is not None
                after = await store.unsupersede(conn, ev, actor, {"import_removed": imp})
                restored.append(after.public_id)
        result = {"import_id": imp, "archived": [ids.make("evt", e) for e in archived], "restored": restored}
        await audit(
            conn, ns, actor, "import.removed", "import", imp, {"status": "active"}, {"status": "removed"} | result
        )
    return result


_COLUMNS = (
    "i.id, n.name AS namespace, i.format, i.source_name, i.source_sha256, i.item_count, i.report, i.status,"
    " i.created_at, i.removed_at"
)
_FROM = " FROM imports i JOIN namespaces n ON n.id = i.namespace_id"


async def _counts(conn: aiosqlite.Connection, import_id: int) -> dict[str, Any]:
    """Current state of an import's events by status, and how many other events it added sources to."""
    by_status = {
        r["status"]: int(r["n"])
        for r in await conn.execute_fetchall(
            "SELECT status, count(*) AS n FROM events WHERE import_id = ? GROUP BY status", (import_id,)
        )
    }
    merged = await (
        await conn.execute(
            "SELECT count(*) FROM event_sources s JOIN events e ON e.id = s.event_id"
            " WHERE s.import_id = ? AND e.import_id IS NOT ?",
            (import_id, import_id),
        )
    ).fetchone()
    return {"events": by_status, "merged_sources": int(merged[0])}


async def _public(conn: aiosqlite.Connection, row: Any) -> dict[str, Any]:
    report = json.loads(row["report"])
    return {
        "id": ids.make("imp", row["id"]),
        "namespace": row["namespace"],
        "format": row["format"],
        "source_name": row["source_name"],
        "source_sha256": row["source_sha256"],
        "item_count": row["item_count"],
        "status": row["status"],
        "created_at": row["created_at"],
        "removed_at": row["removed_at"],
        "counts": await _counts(conn, int(row["id"]))
        | {k: report.get(k) for k in ("suppressed", "skipped_inactive") if k in report},
    }


async def list_imports(conn: aiosqlite.Connection, namespace: str | None) -> list[dict[str, Any]]:
    """Imports newest first, of one namespace or of all."""
    where, params = ("", ()) if namespace is None else (" WHERE n.name = ?", (namespace,))
    rows = await conn.execute_fetchall(f"SELECT {_COLUMNS}{_FROM}{where} ORDER BY i.id DESC", params)
    return [await _public(conn, r) for r in rows]


async def get_import(conn: aiosqlite.Connection, import_id: int, namespace: str | None) -> dict[str, Any]:
    """One import with its stored report and its source text verbatim (traceability of every imported event);
    ``namespace`` confines the id as in remove_import."""
    row = await (
        await conn.execute(
            f"SELECT {_COLUMNS}, i.source_text{_FROM} WHERE i.id = ? AND (? IS NULL OR n.name = ?)",
            (import_id, namespace, namespace),
        )
    ).fetchone()
    if row is None:
        raise not_found(f"unknown import {ids.make('imp', import_id)}" + (f" in namespace {namespace!r}" if namespace
                                                                           else ""))
    return await _public(conn, row) | {"report": json.loads(row["report"]), "source_text": row["source_text"]}
