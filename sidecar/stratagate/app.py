"""The sidecar application: settings, database, model gateway, job runner and tools, wired together."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import time
from typing import TYPE_CHECKING, Any

from stratagate import __version__
from stratagate.blocks.summarize import BlockSummarizer
from stratagate.config import Settings
from stratagate.events.extraction import EventExtractor
from stratagate.graph.projection import GraphProjector
from stratagate.jobs.queue import BLOCK_SUMMARY, EVENT_EXTRACTION, GRAPH_PROJECTION, latest_failure
from stratagate.jobs.runner import JobRunner
from stratagate.safety import secrets
from stratagate.search import dense
from stratagate.search.vectors import EMBEDDING, DenseIndex
from stratagate.storage.db import Database
from stratagate.storage.schema import SCHEMA_VERSION
from stratagate.tokens import count_tokens
from stratagate.tools.catalog import build_registry

if TYPE_CHECKING:
    from stratagate.model import ModelGateway

log = logging.getLogger("stratagate")


class App:
    def __init__(self, settings: Settings):
        self.settings = settings
        self.db = Database(
            settings.db, settings.db_max_mb * 2**20 if settings.db_max_mb else None, settings.db_lock_timeout_s
        )
        self.peer: Any = None  # set by the server once stdio is connected
        self.started = time.monotonic()
        self.shutdown_requested = asyncio.Event()
        self.tools = build_registry()
        self._gateway: ModelGateway | None = None
        self.tokens_ready: asyncio.Future[int] | None = None
        self.secrets_ready: asyncio.Future[None] | None = None
        dense.configure(settings.dense)
        self.dense = DenseIndex(self.db)  # optional dense channel: loads its model on first use, in a thread
        self.runner = JobRunner(
            self.db,
            {
                BLOCK_SUMMARY: BlockSummarizer(self.db, self.gateway, count_tokens),
                EVENT_EXTRACTION: EventExtractor(self.db, self.gateway, count_tokens),
                GRAPH_PROJECTION: GraphProjector(self.db),
                EMBEDDING: self.dense.run_job,
            },
            concurrency=settings.model_concurrency,
            backoff_base=settings.job_backoff_base,
            backoff_cap=settings.job_backoff_cap,
            notify=self._notify,
        )
        self.dense.wake = self.runner.wake

    def gateway(self) -> ModelGateway:
        if self._gateway is None:
            # Imported on first use: the openai package alone costs ~0.9 s of cold start.
            from stratagate.model.gateway import build_gateway

            self._gateway = build_gateway(self.settings, self.peer)
        return self._gateway

    async def _notify(self, method: str, params: dict[str, Any]) -> None:
        if method == "jobs.changed":
            self.dense.after_job(params)
        if self.peer is not None and not self.peer.closed:
            await self.peer.notify(method, params)

    async def start(self) -> None:
        await self.db.open()
        # Build the tokenizer (~1 s) off the event loop; captures await it, pings do not.
        self.tokens_ready = asyncio.ensure_future(asyncio.to_thread(count_tokens, "warm up"))
        # The secret detector (detect-secrets' patterns, ~150 ms to import) too: the first ping never waits for it.
        self.secrets_ready = asyncio.ensure_future(asyncio.to_thread(secrets.warm))
        await self.runner.start()
        await self.dense.start()
        log.info("stratagate %s ready (db=%s, pid=%d)", __version__, self.settings.db, os.getpid())

    async def stop(self) -> None:
        for ready in (self.tokens_ready, self.secrets_ready):
            if ready is not None:
                with contextlib.suppress(Exception):
                    await ready
        await self.dense.close()
        await self.runner.stop()
        await self.db.close()

    def model_route(self) -> str:
        if self.settings.model_base_url:
            return f"openai:{self.settings.model_base_url} model={self.settings.model}"
        return "host:host.llm.complete"

    async def info(self) -> dict[str, Any]:
        db = self.db
        counts: dict[str, Any] = {}
        for table in ("namespaces", "sessions", "turns", "messages"):
            counts[table] = int(await db.scalar(f"SELECT COUNT(*) FROM {table}") or 0)
        blocks = await db.fetchall("SELECT status, COUNT(*) AS n FROM blocks GROUP BY status")
        counts["blocks"] = {"pending": 0, "ready": 0} | {r["status"]: r["n"] for r in blocks}
        events = await db.fetchall("SELECT status, COUNT(*) AS n FROM events GROUP BY status")
        counts["events"] = {s: 0 for s in ("active", "superseded", "disputed", "forgotten", "archived")} | {
            r["status"]: r["n"] for r in events
        }
        counts["graph_nodes"] = int(await db.scalar("SELECT COUNT(*) FROM graph_nodes") or 0)
        facts = await db.fetchall("SELECT status, COUNT(*) AS n FROM graph_facts GROUP BY status")
        counts["graph_facts"] = {s: 0 for s in ("active", "superseded", "disputed", "archived")} | {
            r["status"]: r["n"] for r in facts
        }
        imports = await db.fetchall("SELECT status, COUNT(*) AS n FROM imports GROUP BY status")
        counts["imports"] = {"active": 0, "removed": 0} | {r["status"]: r["n"] for r in imports}
        jobs = await db.fetchall("SELECT status, COUNT(*) AS n FROM jobs GROUP BY status")
        counts["jobs"] = {"queued": 0, "running": 0, "done": 0, "failed": 0} | {r["status"]: r["n"] for r in jobs}
        return {
            "version": __version__,
            "pid": os.getpid(),
            "db_path": str(self.settings.db),
            "schema_version": int(await db.scalar("PRAGMA user_version") or 0),
            "expected_schema_version": SCHEMA_VERSION,
            "uptime_s": round(time.monotonic() - self.started, 3),
            "block_turns": self.settings.block_turns,
            "block_decay_lambda": self.settings.block_decay_lambda,
            "model_route": self.model_route(),
            "counts": counts,
            "last_job_error": await latest_failure(db) or self.runner.last_error,
            "dense": await self.dense.info(),
        }
