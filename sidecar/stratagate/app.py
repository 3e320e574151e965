"""The sidecar application: settings, database, model gateway, job runner and tools, wired together."""

from __future__ import annotations

import asyncio
import contextlib
import gc
import importlib
import logging
import os
import threading
import time
from collections.abc import Callable, Generator
from typing import TYPE_CHECKING, Any, Generic, TypeVar

from stratagate import __version__, tokens, user_settings, wiring
from stratagate.blocks.tail import TailSealer
from stratagate.config import Settings
from stratagate.context.last_recall import Recalls
from stratagate.dsh import host as dsh_host
from stratagate.events import team as team_events
from stratagate.jobs import pipeline
from stratagate.jobs.queue import JobRow, latest_failure
from stratagate.jobs.runner import JobRunner, PermanentJobError
from stratagate.maintenance.run import Maintenance
from stratagate.maintenance.store import scheduled_jobs
from stratagate.safety import secrets
from stratagate.search import dense
from stratagate.search.vectors import DenseIndex
from stratagate.stalls import StallMonitor
from stratagate.storage import counts as stored
from stratagate.storage import lookup
from stratagate.storage.db import ITEMS_ADDED, TURN_CAPTURED, Database
from stratagate.storage.schema import SCHEMA_VERSION
from stratagate.tokens import count_tokens

if TYPE_CHECKING:
    from stratagate.model import ModelGateway
    from stratagate.protocol.toolbox import Toolbox
    from stratagate.team.sync import TeamSync

log = logging.getLogger("stratagate")

QUIET_START_S = 5.0
"""How long after start the warm-ups (App.answered) and the first tail sweep wait for a first answer before they run
anyway: an App that answers through something else than `serve` (the page, the MCP server, the Python API) or a
sidecar nobody asks still gets them, and a loaded machine's first answer (1–3 s of wall) is not delayed by them."""


def _resolve(path: str) -> Any:
    """A stage function named "module:attribute" in jobs/pipeline.py (the app sits above every stage)."""
    module, _, attribute = path.partition(":")
    return getattr(importlib.import_module(module), attribute)


class _OnDemandHandler:
    """A stage's handler built with its first job: its module (the summarizer, the extractor, the projection) is
    imported then, in a thread, so that a start imports none of them and the import does not hold the loop."""

    def __init__(self, path: str, deps: pipeline.StageDeps):
        self._path, self._deps = path, deps
        self._handler: Any = None

    async def __call__(self, job: JobRow) -> Any:
        if self._handler is None:
            factory = await asyncio.to_thread(_resolve, self._path)
            self._handler = self._handler or factory(self._deps)
        return await self._handler(job)


def build_runner(db: Database, settings: Settings, deps: pipeline.StageDeps, notify: Any = None) -> JobRunner:
    """The job runner of the declared pipeline: one handler per stage, follow-up queues, recoveries, and the
    attempts, backoff, watch and lease settings."""
    stages = pipeline.STAGES
    return JobRunner(
        db,
        {stage.kind: _OnDemandHandler(stage.handler, deps) for stage in stages},
        concurrency=settings.model_concurrency,
        backoff_base=settings.job_backoff_base,
        backoff_cap=settings.job_backoff_cap,
        notify=notify,
        max_attempts=settings.job_max_attempts,
        queues={stage.kind: _resolve(stage.queue) for stage in stages if stage.queue},
        recover=[_resolve(stage.recover) for stage in stages if stage.recover],
        watch_interval=settings.job_watch_interval,
        heartbeat_interval=settings.job_heartbeat_interval,
        lease_timeout=settings.job_lease_timeout,
    )


def preload_model_route(settings: Settings) -> None:
    """Import the model gateway (and the openai package for the direct route, ~0.9 s) before the first sealed block
    needs it: an import on the event loop would stall every request behind it."""
    importlib.import_module("stratagate.model.gateway")
    if settings.model_base_url:
        importlib.import_module("stratagate.model.openai_route")


def _warm_up(fn: Any, *args: Any) -> asyncio.Future[Any]:
    """Run a cache warm-up in a daemon thread; the future resolves on the loop (if the loop still runs)."""
    loop = asyncio.get_running_loop()
    future: asyncio.Future[Any] = loop.create_future()

    def settle(outcome: Any, error: BaseException | None) -> None:
        if future.done():
            return
        if error is None:
            future.set_result(outcome)
        else:
            future.set_exception(error)

    def run() -> None:
        try:
            outcome, error = fn(*args), None
        except Exception as exc:
            outcome, error = None, exc
        with contextlib.suppress(RuntimeError):  # the loop closed first: nobody waits any more
            loop.call_soon_threadsafe(settle, outcome, error)

    threading.Thread(target=run, name=f"warm-up {getattr(fn, '__name__', 'cache')}", daemon=True).start()
    return future


T = TypeVar("T")


class OnDemand(Generic[T]):
    """A cache built in a daemon thread by its first ``await`` (never ahead: a cold start's first answer pays only for
    what it uses), shared by every later one. Awaiting it is shielded: a cancelled request does not cancel the build
    other requests wait for."""

    def __init__(self, build: Callable[..., T], *args: Any):
        self._build, self._args = build, args
        self._future: asyncio.Future[T] | None = None

    def start(self) -> asyncio.Future[T]:
        """The build's future, started now if it was not (on the event loop: two requests racing share one build)."""
        if self._future is None:
            self._future = _warm_up(self._build, *self._args)
        return self._future

    def started(self) -> bool:
        return self._future is not None

    def done(self) -> bool:
        return self._future is not None and self._future.done()

    def __await__(self) -> Generator[Any, None, T]:
        return asyncio.shield(self.start()).__await__()


def _warm_secrets_after_tokens() -> None:
    """The secret detector's warm-up, after the token encoding (a capture waits for that one: on a small machine the
    two builds would share the CPU and both finish later). Then every object alive after start-up (modules, tables,
    pydantic schemas) is moved out of the collector's generations: a full collection would otherwise walk them all,
    45-105 ms once every ~200 renders at 10k events (measured with profile_render.py)."""
    with contextlib.suppress(Exception):  # a failed encoding build is reported by what awaits it
        count_tokens("warm up")
    try:
        secrets.warm()
    finally:
        gc.freeze()


def _tool_registry() -> Toolbox:
    from stratagate.tools.catalog import build_registry

    return build_registry()


class App:
    def __init__(self, settings: Settings, *, host_model: bool = True):
        self.settings = settings
        # False: no host answers host.llm.complete (an embedded Memory), so without a direct route the app runs
        # zero-model, whatever route the Memory page stored.
        self.host_model = host_model
        wiring.register_hooks()  # the stores' hooks (the graph follows event status), before any write
        self.db = Database(
            settings.db, settings.db_max_mb * 2**20 if settings.db_max_mb else None, settings.db_lock_timeout_s
        )
        self.peer: Any = None  # set by the server once stdio is connected
        self.started = time.monotonic()
        self.host = dsh_host.STANDALONE  # the DSH the shim runs in and the verdict on it, once host.check told us
        self.shutdown_requested = asyncio.Event()
        self._tools: Toolbox | None = None
        self._gateway: ModelGateway | None = None
        self.tokens_ready: OnDemand[int] | None = None
        self.secrets_ready: asyncio.Future[None] | None = None
        self.model_ready: asyncio.Future[None] | None = None
        self._answered = asyncio.Event()
        self.stalls = StallMonitor()
        self.recalls = Recalls()  # each session's last recall (/memory recall, the chat's memory row)
        dense.configure(settings.dense)
        self.dense = DenseIndex(self.db)  # optional dense channel: loads its model on first use, in a thread
        # Rows that get vectors were committed (capture, events): queue their embedding, in the background.
        self.db.listen(ITEMS_ADDED, self.dense.notice)
        self.maintenance = Maintenance(self.db, settings)  # one pass at a time: the method and the scheduled job
        # Open session tails become short blocks when idle, closed or at shutdown (blocks/tail.py).
        self.tails = TailSealer(self.db, settings, count_tokens)
        self.db.listen(TURN_CAPTURED, self.tails.captured)
        self._sweeping: asyncio.Task[None] | None = None
        self._warming: asyncio.Task[None] | None = None
        deps = pipeline.StageDeps(
            db=self.db,
            settings=settings,
            gateway=self.gateway,
            count=count_tokens,
            dense=self.dense,
            maintenance=self.maintenance,
        )
        self.runner = build_runner(self.db, settings, deps, notify=self._notify)
        # The page's stored settings (user_settings.py): applied over the environment once the database is open.
        self.user_settings = user_settings.Applied.of(settings)
        self.team: TeamSync | None = None  # team memory's sync (team/sync.py), when a team database is configured
        self._jobs = True  # does this process run the jobs (start's ``jobs``): only then does it sync team memory

    async def tools(self) -> Toolbox:
        """The agent tools (tools.list, tools.call): their modules are imported with the first use, in a thread (a
        recall or a capture never needs them, and importing them on the loop would stall every request behind it)."""
        if self._tools is None:
            self._tools = await asyncio.to_thread(_tool_registry)
        return self._tools

    def gateway(self) -> ModelGateway:
        if self.settings.zero_model:
            # Zero-model mode makes no model call at all: a stage that still asks for the model fails at once.
            raise PermanentJobError("zero-model mode (STRATAGATE_MODEL_ROUTE=none): no model route is used")
        if self._gateway is None:
            # Imported on first use: the openai package alone costs ~0.9 s of cold start.
            from stratagate.model.gateway import build_gateway

            self._gateway = build_gateway(self.settings, self.peer)
        return self._gateway

    async def _notify(self, method: str, params: dict[str, Any]) -> None:
        if self.peer is not None and not self.peer.closed:
            await self.peer.notify(method, params)

    async def start(self, jobs: bool = True) -> None:
        """Open the database and warm the caches; ``jobs=False`` leaves the queue to another process (``stratagate
        ui`` with the host model route: only DSH's sidecar can run those jobs)."""
        self.stalls.start()
        await self.db.open()
        self.user_settings = await user_settings.apply_at_start(self.db, self.settings)
        if not self.host_model and not self.settings.model_base_url:
            self.settings.model_route = "none"
        # The token encoding (~0.14 s of CPU, ~40 MB) is built off the event loop by the first request that counts
        # tokens (they await this) or once the first answer is out (App.answered): never before the first answer
        # unless that answer needs it.
        self.tokens_ready = OnDemand(count_tokens, "warm up")
        self._jobs = jobs
        if jobs:
            await self.runner.start()
        try:  # queue the maintenance job if it is overdue; a failure here must not keep the sidecar from serving
            log.info("maintenance at start: %s", await self.maintenance.at_start())
        except Exception:
            log.exception("scheduling maintenance at start failed")
        await self.dense.start()
        await self._start_team(jobs)
        self._warming = asyncio.create_task(self._warm_when_quiet(), name="warm-ups after the first answer")
        if jobs:  # the sweep seals at once what went idle while the sidecar was down, then every minute or so
            self._sweeping = asyncio.create_task(self._sweep_tails(), name="tail sweep")
        log.info("stratagate %s ready (db=%s, pid=%d)", __version__, self.settings.db, os.getpid())

    async def settings_changed(self, after: dict[str, Any]) -> None:
        """The page changed settings (assigned in place already): what a stage cannot read at its next use is
        restarted here — team memory's sync when its database or member changed."""
        if any(name in after.get("settings", {}) for name in user_settings.TEAM_FIELDS):
            await self.restart_team()

    async def restart_team(self) -> None:
        if self.team is not None:
            await self.team.stop()
            self.team = None
        await self._start_team(self._jobs)

    async def _start_team(self, jobs: bool) -> None:
        """Team memory on when a team database is configured (and this process runs the jobs); otherwise the
        member is cleared, so a memory asked for as ``team`` is refused rather than kept unshared."""
        if self.settings.team_dsn and self.settings.team_member and jobs:
            from stratagate.team.sync import TeamSync  # (asyncpg and erase: only a sidecar with a team imports them)

            self.team = TeamSync(self.db, self.settings.team_dsn, self.settings.team_member,
                                 poll_seconds=self.settings.team_poll_seconds,
                                 max_attempts=self.settings.job_max_attempts)
            await self.team.start()
        elif jobs and (await team_events.state(self.db.reader)).member is not None:
            async with self.db.transaction() as conn:
                await team_events.configure(conn, None, None)

    async def join_team(self, namespace: str) -> None:
        """A session (or an embedded Memory) works in ``namespace``: with team memory on, the namespace takes part
        from now on (its row is made if it has none), and the sync pulls its project's team memory at once, so the
        first recall of a new project on this machine already has it."""
        if self.team is None:
            return
        if await lookup.namespace_key(self.db.reader, namespace) is None:
            async with self.db.transaction() as conn:
                await lookup.ensure_namespace(conn, namespace)
        self.team.wake()

    def answered(self) -> None:
        """Called once the first answer is written: now build, in threads, what later requests would otherwise wait
        for (the token encoding every capture counts with, the model route) or build on the event loop (the secret
        detector, ~0.1 s to import, needed by the first text with a redaction candidate). Before the first answer
        they would only delay it (unless it counts tokens: then it has started the encoding itself)."""
        if self._answered.is_set():
            return
        self._answered.set()
        if self.tokens_ready is not None:
            self.tokens_ready.start()
        self.secrets_ready = _warm_up(_warm_secrets_after_tokens)
        if not self.settings.zero_model:
            self.model_ready = _warm_up(preload_model_route, self.settings)

    async def stop(self) -> None:
        # The warm-ups only build caches in memory: a stop right after start does not wait for them (they run in
        # daemon threads, so the process exits at once instead of outliving the host's grace period).
        await self.dense.close()
        if self.team is not None:
            await self.team.stop()
        for task in (self._warming, self._sweeping):
            if task is not None:
                task.cancel()
                with contextlib.suppress(asyncio.CancelledError, Exception):
                    await task
        await self.runner.stop()
        if self.tails.touched and self.tokens_ready is not None and self.tokens_ready.done():
            await self.tails.at_shutdown()  # bounded; what is left is sealed after the next start
        await self.db.close()
        self.stalls.stop()

    async def _warm_when_quiet(self) -> None:
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self._answered.wait(), QUIET_START_S)
        self.answered()

    async def _sweep_tails(self) -> None:
        # Sealing counts tokens: the sweep at start waits for the first answer (or a quiet start) before it has the
        # encoding built, so that build never delays a first recall that does not need it.
        await self._answered.wait()
        if self.tokens_ready is not None:
            await self.tokens_ready  # sealing counts tokens (the await is shielded: stop() cancels this task)
        await self.tails.run()

    def model_route(self) -> str:
        if self.settings.zero_model:
            return "none:rules"
        if self.settings.model_base_url:
            return f"openai:{self.settings.model_base_url} model={self.settings.model}"
        return "host:host.llm.complete"

    async def info(self) -> dict[str, Any]:
        db = self.db
        counts = await stored.table_counts(db)
        # The maintenance job waiting for its next interval is not work in the queue: counted apart.
        counts["jobs"]["scheduled"] = await scheduled_jobs(db.reader)
        counts["jobs"]["queued"] -= counts["jobs"]["scheduled"]
        # A handler marks its job done in its own transaction; the runner queues the follow-ups in the next one. Until
        # then the job is still this runner's: counted as running, so "nothing queued or running" means idle.
        counts["jobs"]["running"] = max(counts["jobs"]["running"], self.runner.running)
        return {
            "version": __version__,
            "pid": os.getpid(),
            "db_path": str(self.settings.db),
            "schema_version": await stored.schema_version(db),
            "expected_schema_version": SCHEMA_VERSION,
            "uptime_s": round(time.monotonic() - self.started, 3),
            "block_turns": self.settings.block_turns,
            "block_decay_lambda": self.settings.block_decay_lambda,
            "model_mode": self.settings.model_route,
            "model_route": self.model_route(),
            "counts": counts,
            "last_job_error": await latest_failure(db) or self.runner.last_error,
            "dense": await self.dense.info(),
            "loop": self.stalls.info(),
            "tokens": tokens.status(),
            "host": self.host.model_dump(),
            "team": await self.team.status() if self.team is not None else {"enabled": False},
        }
