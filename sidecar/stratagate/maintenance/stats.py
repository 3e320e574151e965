"""The maintenance report (``system.stats``, ``stratagate stats``, and stored with every run): counts by status,
merges, sizes, job health, and the last and next maintenance. Reads only, over any connection."""

from __future__ import annotations

import os
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from stratagate.jobs.pipeline import KINDS
from stratagate.maintenance import store
from stratagate.maintenance.gate import Pause, no_wait
from stratagate.storage.sqlite import Connection
from stratagate.timeutil import now_iso, to_iso

EVENT_STATUSES = ("active", "superseded", "disputed", "forgotten", "archived")
FACT_STATUSES = ("active", "superseded", "disputed", "archived")
JOB_STATUSES = ("queued", "running", "done", "failed")


def _counts(rows: list[Any], keys: tuple[str, ...], column: str) -> dict[str, int]:
    out = dict.fromkeys(keys, 0)
    for r in rows:
        out[str(r[column]) if r[column] is not None else "none"] = int(r["n"])
    return out


def _size(path: Path) -> int:
    try:
        return os.path.getsize(path)
    except OSError:
        return 0


def _iso(seconds: float | None) -> str | None:
    return None if seconds is None else to_iso(datetime.fromtimestamp(float(seconds), UTC))


async def _table_counts(conn: Connection, names: list[str], pause: Pause) -> dict[str, int]:
    out: dict[str, int] = {}
    for name in names:
        out[name] = await store.count(conn, name)
        await pause()
    return out


async def report(conn: Connection, db_path: Path, interval_hours: float, pause: Pause = no_wait) -> dict[str, Any]:
    """The report; ``pause`` is awaited between its larger reads (a pass's report yields to requests meanwhile)."""
    events = await store.grouped(conn, "events", "status")
    scopes = await store.grouped(conn, "events", "scope")
    await pause()
    blocks = await store.grouped(conn, "blocks", "status")
    sources = await store.grouped(conn, "blocks", "summary_source")
    facts = await store.grouped(conn, "graph_facts", "status")
    await pause()
    jobs: dict[str, dict[str, int]] = {kind: dict.fromkeys(JOB_STATUSES, 0) for kind in KINDS}
    for r in await store.grouped(conn, "jobs", "kind", "status"):
        jobs.setdefault(r["kind"], dict.fromkeys(JOB_STATUSES, 0))[r["status"]] = int(r["n"])
    plain, _ = await store.tables(conn)
    counts = await _table_counts(conn, plain, pause)
    job = await store.job_row(conn)
    last = await store.newest_run(conn)
    return {
        "generated_at": now_iso(),
        "db_path": str(db_path),
        "events": {
            "by_status": _counts(events, EVENT_STATUSES, "status"),
            "by_scope": _counts(scopes, ("user", "project", "session"), "scope"),
        },
        "blocks": {
            "by_status": _counts(blocks, ("pending", "ready"), "status"),
            # 'none': a pending block (no L0–L2 yet).
            "by_summary_source": _counts(sources, ("model", "extractive", "fallback", "none"), "summary_source"),
        },
        "graph": {"nodes": await store.count(conn, "graph_nodes"),
                  "facts": _counts(facts, FACT_STATUSES, "status")},
        "jobs": jobs,
        "merges": await store.merge_counts(conn),
        "sizes": {
            "db_bytes": _size(db_path),
            "wal_bytes": _size(Path(f"{db_path}-wal")),
            "page_size": await store.pragma(conn, "page_size"),
            "page_count": await store.pragma(conn, "page_count"),
            "freelist_pages": await store.pragma(conn, "freelist_count"),
            "tables": counts,
        },
        "job_health": await store.job_health(conn),
        "schedule": {
            "interval_hours": interval_hours,
            "last_run": None if last is None else dict(last),
            "job_status": None if job is None else job["status"],
            "next_run_at": _iso(job["next_run_at"]) if job is not None and job["status"] == "queued" else None,
        },
    }
