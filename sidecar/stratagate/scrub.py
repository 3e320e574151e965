"""`stratagate redact --db PATH`: scrub the secrets out of a database written before (or without) redaction.

1. A backup next to the database through SQLite's online backup API (``<db>.pre-redact-<UTC stamp>.bak``, 0600).
2. The database is opened like the sidecar opens it (migrated to the current schema, its redaction key loaded).
3. ONE transaction rewrites every stored text that holds a secret, with the privileged-write exception of
   migration 6 (``privileged_writes`` holds ``('redact', now)`` only inside the transaction): messages and their
   FTS rows, blocks, events and their FTS rows, event sources, imports, retrieval batches, assessments, receipts,
   the audit log, graph names, aliases and fact values (graph FTS rows re-indexed), job errors. Embeddings of
   changed messages, events and nodes are deleted and the namespace's cursor set back below the smallest
   changed id, so the embedding job computes them again from the redacted text.
4. One audit row per namespace touched (``secrets.redacted``: counts per table and kind, never a secret).

Running it again changes nothing: redaction is idempotent.
"""

from __future__ import annotations

import json
import os
import sqlite3
from collections import Counter
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from stratagate.events import store as event_store
from stratagate.graph.store import reindex_node
from stratagate.safety.secrets import PLACEHOLDER_RE, redact_text, redact_value
from stratagate.storage.db import Database, audit
from stratagate.storage.sqlite import Connection
from stratagate.text.messages import search_text
from stratagate.text.terms import fts_document
from stratagate.timeutil import now_iso


class ScrubError(RuntimeError):
    """The database cannot be scrubbed (missing, not SQLite, a directory): a one-line reason."""


@dataclass(frozen=True)
class Table:
    name: str
    namespace: str  # SQL expression of the row's namespace id, over alias t
    text: tuple[str, ...] = ()
    json: tuple[str, ...] = ()
    key: str = "id"
    join: str = ""


TABLES: tuple[Table, ...] = (
    Table("messages", "t.namespace_id", ("content", "tool_name", "tool_call_id"), ("tool_arguments", "tool_result")),
    Table("blocks", "t.namespace_id", ("l4", "l3", "l1", "l0_title"), ("l2", "l0_tags")),
    Table("events", "t.namespace_id", ("title", "summary", "narrative", "time_original"),
          ("tags", "quotes", "participants", "claims")),
    Table("event_sources", "e.namespace_id", ("quote", "source_ref", "call_id"),
          join=" JOIN events e ON e.id = t.event_id"),
    Table("imports", "t.namespace_id", ("source_text", "source_name"), ("report",)),
    Table("retrieval_batches", "t.namespace_id", ("query",), ("arguments",)),
    Table("evidence_assessments", "b.namespace_id", ("fit", "missing", "reason"), ("rejected_refs",),
          join=" JOIN retrieval_batches b ON b.id = t.batch_id"),
    Table("use_receipts", "t.namespace_id", (), ("result",)),
    Table("audit_log", "t.namespace_id", ("subject_id",), ("before", "after")),
    Table("graph_nodes", "t.namespace_id", ("name",)),
    Table("graph_aliases", "t.namespace_id", ("alias",), key="rowid"),
    Table("graph_facts", "t.namespace_id", ("value",)),
    Table("jobs", "t.namespace_id", ("last_error",)),
)


@dataclass
class Report:
    backup: str
    changed: dict[str, int] = field(default_factory=dict)  # table -> rows rewritten
    kinds: dict[str, int] = field(default_factory=dict)  # kind -> placeholders added
    namespaces: list[int] = field(default_factory=list)
    embeddings_deleted: int = 0

    def as_dict(self) -> dict[str, Any]:
        return {
            "backup": self.backup,
            "rows_changed": dict(sorted(self.changed.items())),
            "secrets_by_kind": dict(sorted(self.kinds.items())),
            "namespaces": len(self.namespaces),
            "embeddings_deleted": self.embeddings_deleted,
        }


def check_database(path: Path) -> None:
    if not path.exists():
        raise ScrubError(f"no database at {path}")
    if path.is_dir():
        raise ScrubError(f"{path} is a directory, not a database file")
    try:
        with open(path, "rb") as f:
            header = f.read(16)
    except OSError as exc:
        raise ScrubError(f"cannot read {path}: {exc.strerror}") from None
    if header != b"SQLite format 3\x00":
        raise ScrubError(f"{path} is not a SQLite database")


def backup(path: Path) -> Path:
    """A consistent copy through SQLite's online backup API, created 0600 next to the database."""
    stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%S%fZ")
    target = Path(f"{path}.pre-redact-{stamp}.bak")
    fd = os.open(target, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    os.close(fd)
    src = sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro", uri=True, timeout=5)
    try:
        # Connection.backup retries a locked source forever: wait for the lock here, with a deadline, instead.
        src.execute("BEGIN")
        src.execute("SELECT COUNT(*) FROM sqlite_master").fetchone()
        dst = sqlite3.connect(target)
        try:
            src.backup(dst)
        finally:
            dst.close()
    except BaseException:
        target.unlink(missing_ok=True)
        raise
    finally:
        src.close()
    os.chmod(target, 0o600)
    return target


def _kinds(text: str | None) -> Counter[str]:
    if not text:
        return Counter()
    return Counter(m.group(0)[8:].split("#")[0] for m in PLACEHOLDER_RE.finditer(text))


def _json_text(table: str, raw: str) -> str | None:
    """The redacted JSON text, or None when nothing changes (or it is not JSON: then it is redacted as text)."""
    try:
        value = json.loads(raw)
    except ValueError:
        cleaned = redact_text(raw)
        return None if cleaned == raw else cleaned
    cleaned = redact_value(value)
    if cleaned == value:
        return None
    if table == "audit_log":
        return json.dumps(cleaned, ensure_ascii=False, sort_keys=True, default=str)
    return json.dumps(cleaned, ensure_ascii=False)


async def _scrub_table(conn: Connection, table: Table, report: Report,
                       per_ns: dict[int | None, dict[str, Counter[str]]]) -> list[tuple[int, int | None]]:
    columns = [*table.text, *table.json]
    sql = (
        f"SELECT t.{table.key} AS k, {table.namespace} AS ns, {', '.join('t.' + c for c in columns)}"
        f" FROM {table.name} t{table.join}"
    )
    changed: list[tuple[int, int | None]] = []
    for row in await conn.execute_fetchall(sql):
        updates: dict[str, str] = {}
        for col in columns:
            raw = row[col]
            if not isinstance(raw, str) or not raw:
                continue
            new = _json_text(table.name, raw) if col in table.json else redact_text(raw)
            if new is not None and new != raw:
                updates[col] = new
        if not updates:
            continue
        added: Counter[str] = Counter()
        for col, new in updates.items():
            added += _kinds(new) - _kinds(row[col])
        assignments = ", ".join(f"{c} = ?" for c in updates)
        await conn.execute(
            f"UPDATE {table.name} SET {assignments} WHERE {table.key} = ?", (*updates.values(), row["k"])
        )
        ns = row["ns"]
        changed.append((int(row["k"]), ns))
        report.changed[table.name] = report.changed.get(table.name, 0) + 1
        for kind, n in added.items():
            report.kinds[kind] = report.kinds.get(kind, 0) + n
        bucket = per_ns.setdefault(ns, {})
        bucket.setdefault(table.name, Counter()).update(added or Counter({"rewritten": 1}))
    return changed


async def _reset_embeddings(conn: Connection, kind: str, changed: list[tuple[int, int | None]]) -> int:
    deleted = 0
    lowest: dict[int, int] = {}
    for item_id, ns in changed:
        cur = await conn.execute("DELETE FROM embeddings WHERE kind = ? AND item_id = ?", (kind, item_id))
        deleted += max(cur.rowcount, 0)
        if ns is not None:
            lowest[ns] = min(lowest.get(ns, item_id), item_id)
    if kind in ("message", "event"):
        for ns, first in lowest.items():
            await conn.execute(
                "UPDATE embedding_cursors SET last_id = MIN(last_id, ?), updated_at = ?"
                " WHERE namespace_id = ? AND kind = ?",
                (first - 1, now_iso(), ns, kind),
            )
    return deleted


async def scrub_open(db: Database, backup_path: str) -> Report:
    """The scrub transaction on an open database."""
    report = Report(backup=backup_path)
    per_ns: dict[int | None, dict[str, Counter[str]]] = {}
    async with db.transaction() as conn:
        await conn.execute("PRAGMA secure_delete = ON")  # freed cells and pages are zeroed, not just unlinked
        await conn.execute("INSERT INTO privileged_writes(operation, started_at) VALUES ('redact', ?)", (now_iso(),))
        changed: dict[str, list[tuple[int, int | None]]] = {}
        for table in TABLES:
            changed[table.name] = await _scrub_table(conn, table, report, per_ns)

        for message_id, _ in changed["messages"]:
            (row,) = await conn.execute_fetchall(
                "SELECT role, content, tool_name, tool_arguments, tool_result FROM messages WHERE id = ?",
                (message_id,),
            )
            await conn.execute("DELETE FROM message_fts WHERE rowid = ?", (message_id,))
            terms = fts_document(search_text(dict(row)))
            await conn.execute("INSERT INTO message_fts(rowid, terms) VALUES (?, ?)", (message_id, terms))
        events = {i for i, _ in changed["events"]}
        for event_id in sorted(events):
            ev = await event_store.get_event(conn, event_id)
            if ev is None:
                continue
            await conn.execute("DELETE FROM event_fts WHERE rowid = ?", (event_id,))
            await conn.execute(
                "INSERT INTO event_fts(rowid, terms) VALUES (?, ?)", (event_id, event_store._fts_text(ev))
            )
        nodes = {i for i, _ in changed["graph_nodes"]}
        for alias_rowid, _ in changed["graph_aliases"]:
            (row,) = await conn.execute_fetchall("SELECT node_id FROM graph_aliases WHERE rowid = ?", (alias_rowid,))
            nodes.add(int(row[0]))
        for fact_id, _ in changed["graph_facts"]:
            fact = await (await conn.execute("SELECT node_id FROM graph_facts WHERE id = ?", (fact_id,))).fetchone()
            if fact is not None and fact[0] is not None:
                nodes.add(int(fact[0]))
        for node_id in sorted(nodes):
            await reindex_node(conn, node_id)

        report.embeddings_deleted += await _reset_embeddings(conn, "message", changed["messages"])
        report.embeddings_deleted += await _reset_embeddings(conn, "event", changed["events"])
        node_rows: list[tuple[int, int | None]] = [(n, None) for n in nodes]
        report.embeddings_deleted += await _reset_embeddings(conn, "node", node_rows)

        for ns, tables in sorted(per_ns.items(), key=lambda kv: (kv[0] is None, kv[0] or 0)):
            after = {
                "tables": {name: dict(sorted(c.items())) for name, c in sorted(tables.items())},
                "backup": Path(backup_path).name,
            }
            await audit(conn, ns, "user", "secrets.redacted", "database", None, None, after)
        report.namespaces = sorted(n for n in per_ns if n is not None)
        for fts in ("message_fts", "event_fts", "graph_fts"):  # merge segments: old ones held the secrets' terms
            await conn.execute(f"INSERT INTO {fts}({fts}) VALUES ('optimize')")
        await conn.execute("DELETE FROM privileged_writes")
    try:
        await db.compact_securely()  # the old text must not linger in free pages or the WAL either
    finally:
        async with db.exclusive() as conn:
            await conn.execute("PRAGMA secure_delete = OFF")
    return report


async def scrub(path: Path) -> Report:
    check_database(path)
    target = backup(path)
    db = Database(path)
    try:
        await db.open()
    except sqlite3.DatabaseError as exc:
        raise ScrubError(f"{path} is not a usable SQLite database ({exc.__class__.__name__})") from None
    try:
        return await scrub_open(db, str(target))
    finally:
        await db.close()
