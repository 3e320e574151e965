"""Imports into long-term memory: a parsed batch becomes events (origin 'import') in one transaction, and removing
an import archives its events and undoes the supersessions they caused. The source text is kept verbatim. Items
become candidates of the one admission path (events/admit.py); this module only decides which items are candidates.

Reports and audit rows name events and counts only, never memory text: a forgotten memory must not reappear
through an import report.
"""

from __future__ import annotations

import asyncio
import json
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, Final

from stratagate import ids
from stratagate.errors import Invalid, NotFound
from stratagate.events import store
from stratagate.events.admit import Candidate, Options, admit
from stratagate.events.models import EventType, Scope
from stratagate.events.store import Source
from stratagate.imports.parsers import ImportBatch, ImportItem, sha256_text
from stratagate.redact import redact
from stratagate.safety.secrets import scrub_known, secrets_in
from stratagate.storage.db import Actor, Database, audit
from stratagate.storage.lookup import ensure_namespace
from stratagate.storage.sqlite import Connection
from stratagate.timeutil import now_iso

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
        raise Invalid(f"import ids look like 'imp_3' (got {value!r})")
    return key


def event_type(kind: str | None) -> EventType:
    """The event type for a source's kind/category; 'fact' unless it is (a plain synonym of) an event type."""
    if kind is None:
        return "fact"
    return _TYPES.get(kind.strip().casefold().replace("-", "_").replace(" ", "_"), "fact")


def check_scope(scope: Scope) -> None:
    if scope == "session":
        raise Invalid(
            "scope 'session' is not allowed for imports (an import belongs to no session); use 'user' or 'project'"
        )


def _candidate(item: ImportItem, fmt: str, scope: Scope, now: datetime, import_id: int) -> Candidate:
    """One import item as an event candidate: its flattened text is the statement, its verbatim text the quote."""
    etype = event_type(item.kind)
    return Candidate(
        statement=item.current_text,  # a partly struck item states what is not struck out
        tags=[*item.tags, f"import:{fmt}"],
        quotes=[item.text],
        type=etype,
        scope=scope,
        criticality="preference" if etype == "preference" else "routine",
        mentioned_at=item.created_at or now,  # said when the source recorded it; undated: said now (the import)
        sources=[Source(import_id=import_id, source_ref=item.source_ref, quote=item.text)],
    )


async def _active_import_with(conn: Connection, namespace_id: int, sha: str) -> int | None:
    row = await (
        await conn.execute(
            "SELECT id FROM imports WHERE namespace_id = ? AND source_sha256 = ? AND status = 'active' ORDER BY id",
            (namespace_id, sha),
        )
    ).fetchone()
    return None if row is None else int(row[0])


def _stored_source(batch: ImportBatch) -> tuple[str, str, str]:
    """(source text, source name, SHA-256 of the text) as stored.

    Secrets never reach the database: the source is stored redacted, and its checksum is of what is stored (the same
    file still redacts to the same text, so duplicate detection keeps working). A secret the parser decoded from an
    escaped form (JSON \\u escapes) is found in the item and removed from the raw text too."""
    found = [f for item in batch.items for t in (item.flat_text, item.text, item.source_ref) for f in secrets_in(t)]
    source_text = redact(scrub_known(batch.source_text, found))
    return source_text, redact(batch.source_name), sha256_text(source_text)


@dataclass
class _Sorted:
    """The items of a batch: the candidates to admit, and those skipped (per inactive status; struck out)."""

    candidates: list[Candidate] = field(default_factory=list)
    skipped: dict[str, int] = field(default_factory=dict)
    struck: list[str] = field(default_factory=list)
    partly_struck: list[str] = field(default_factory=list)


def _sort_items(batch: ImportBatch, scope: Scope, now: datetime, import_id: int) -> _Sorted:
    out = _Sorted()
    for item in batch.items:
        if item.status is not None and item.status.casefold() not in _ACTIVE_STATUSES:
            out.skipped[item.status] = out.skipped.get(item.status, 0) + 1
            continue
        if item.struck_out:  # the writer struck it out: history, not a current memory (imports/strike.py)
            out.struck.append(redact(item.source_ref))
            continue
        if item.struck_spans:
            out.partly_struck.append(redact(item.source_ref))
        out.candidates.append(_candidate(item, batch.format, scope, now, import_id))
    return out


def _admission(ns: int, actor: Actor, import_id: int, imp: str) -> Options:
    """How an import's candidates are admitted."""
    return Options(
        namespace_id=ns,
        session_id=None,  # an import belongs to no session: it merges only with events every session sees
        origin="import",
        actor=actor,
        import_id=import_id,
        on_tombstone="suppress",  # forgotten on request: an import never brings it back
        on_exact_duplicate="merge",  # the item is one more source; removing the import keeps the event
        unknown_target="skip",
        projection_reason=f"import {imp}",
        note={"import": imp},
    )


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
    # Redacting a source of up to 20 MiB is blocking work: the event loop keeps serving meanwhile.
    source_text, source_name, source_sha256 = await asyncio.to_thread(_stored_source, batch)
    async with db.transaction() as conn:
        ns = await ensure_namespace(conn, namespace)
        existing = await _active_import_with(conn, ns, source_sha256)
        if existing is not None and not allow_duplicate:
            imp = ids.make("imp", existing)
            raise Invalid(
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
        sorted_items = _sort_items(batch, scope, now, import_id)
        admitted = await admit(conn, sorted_items.candidates, _admission(ns, actor, import_id, imp))
        tombstones = list(dict.fromkeys(ids.make("evt", o.tombstone) for o in admitted.outcomes if o.tombstone))
        report: dict[str, Any] = {
            "import_id": imp,
            "namespace": namespace,
            "format": batch.format,
            "source_name": source_name,
            "source_sha256": source_sha256,
            "items": len(batch.items),
            "inserted": admitted.ids_of("inserted"),
            "merged": admitted.ids_of("merged"),
            "suppressed": sum(o.result == "suppressed" for o in admitted.outcomes),
            "tombstones": tombstones,
            "skipped_inactive": sum(sorted_items.skipped.values()),
            "skipped_statuses": sorted_items.skipped,
            "skipped_struck": len(sorted_items.struck),
            "struck_refs": sorted_items.struck,
            "partly_struck_refs": sorted_items.partly_struck,
            "warnings": [redact(w) for w in batch.warnings],
        }
        # The graph is a projection of events: new events got projection jobs like any others (events/admit.py).
        report["projection_jobs"] = [ids.make("job", j) for j in admitted.projection_jobs]
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
            raise NotFound(f"unknown import {imp}" + (f" in namespace {namespace!r}" if namespace else ""))
        if row["status"] != "active":
            raise Invalid(f"{imp} was already removed")
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


async def _counts(conn: Connection, import_id: int) -> dict[str, Any]:
    """Current state of an import's events by status, and how many other events it added sources to."""
    by_status = {
        r["status"]: int(r["n"])
        for r in await conn.execute_fetchall(
            "SELECT status, count(*) AS n FROM events WHERE import_id = ? GROUP BY status", (import_id,)
        )
    }
    (merged,) = await conn.execute_fetchall(
        "SELECT count(*) FROM event_sources s JOIN events e ON e.id = s.event_id"
        " WHERE s.import_id = ? AND e.import_id IS NOT ?",
        (import_id, import_id),
    )
    return {"events": by_status, "merged_sources": int(merged[0])}


async def _public(conn: Connection, row: Any) -> dict[str, Any]:
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
        | {k: report.get(k) for k in ("suppressed", "skipped_inactive", "skipped_struck") if k in report},
    }


async def list_imports(conn: Connection, namespace: str | None) -> list[dict[str, Any]]:
    """Imports newest first, of one namespace or of all."""
    where, params = ("", ()) if namespace is None else (" WHERE n.name = ?", (namespace,))
    rows = await conn.execute_fetchall(f"SELECT {_COLUMNS}{_FROM}{where} ORDER BY i.id DESC", params)
    return [await _public(conn, r) for r in rows]


async def get_import(conn: Connection, import_id: int, namespace: str | None) -> dict[str, Any]:
    """One import with its stored report and its source text verbatim (traceability of every imported event);
    ``namespace`` confines the id as in remove_import."""
    row = await (
        await conn.execute(
            f"SELECT {_COLUMNS}, i.source_text{_FROM} WHERE i.id = ? AND (? IS NULL OR n.name = ?)",
            (import_id, namespace, namespace),
        )
    ).fetchone()
    if row is None:
        raise NotFound(f"unknown import {ids.make('imp', import_id)}" + (f" in namespace {namespace!r}" if namespace
                                                                           else ""))
    return await _public(conn, row) | {"report": json.loads(row["report"]), "source_text": row["source_text"]}
