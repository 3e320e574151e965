"""The JSON-RPC methods: handlers registered with ``@method`` (protocol/registry.py) and the dispatch table built
from them. The methods of this module are always there; the other handler modules (rpc/context.py, rpc/dsh.py, ...,
the Memory page's ``page.*``) are imported with the first call of one of their methods (``ON_DEMAND``,
``load_methods``): a sidecar pays at start only for what its first answers use. ``load_all_methods`` fills the
protocol table with every method. Params are validated and results typed by protocol/adapter.py."""

from __future__ import annotations

import importlib
import inspect
from collections.abc import Awaitable, Callable
from typing import Any

from jsonrpcserver import Success

from stratagate import __version__, ids
from stratagate.activation.render import ActivationParams, render_activation
from stratagate.app import App
from stratagate.capture.models import CaptureParams, CaptureResult
from stratagate.capture.store import capture_turn
from stratagate.context import queries as context_queries
from stratagate.erase import erase_subject
from stratagate.errors import invalid_params, not_found
from stratagate.jobs import queue
from stratagate.namespaces import ResolveParams, resolve
from stratagate.protocol import METHOD_TABLE, Entry, ToolContext, adapter, method
from stratagate.protocol.params import Empty, EraseParams, JobsListParams, JobsRetryParams, ToolsCallParams
from stratagate.protocol.results import (
    ActivationResult,
    EraseResult,
    InfoResult,
    JobsListResult,
    JobsRetryResult,
    OkResult,
    PingResult,
    ResolveResult,
    ToolsCallResult,
    ToolsListResult,
)
from stratagate.tokens import count_tokens


def _jsonrpc(entry: Entry) -> Callable[..., Awaitable[Any]]:
    """An entry as jsonrpcserver calls it: params by name only, then the one adapter (protocol/adapter.py)."""

    async def method(app: App, *args: Any, **params: Any) -> Any:
        if args:
            raise invalid_params("params must be an object (named parameters), not an array")
        return Success(await adapter.call(entry, app, params))

    # jsonrpcserver binds the arguments to ``inspect.signature(method)`` on every call: computed once here.
    method.__signature__ = inspect.signature(method)  # type: ignore[attr-defined]
    return method


@method("system.ping", params=Empty, result=PingResult)
async def ping(app: App, _: Empty) -> dict[str, Any]:
    return {"pong": True, "version": __version__}


@method("system.info", params=Empty, result=InfoResult)
async def info(app: App, _: Empty) -> dict[str, Any]:
    return await app.info()


@method("system.shutdown", params=Empty, result=OkResult)
async def shutdown(app: App, _: Empty) -> dict[str, Any]:
    app.shutdown_requested.set()
    return {"ok": True}


@method("turn.capture", params=CaptureParams, result=CaptureResult)
async def capture(app: App, params: CaptureParams) -> CaptureResult:
    if app.tokens_ready is not None:
        await app.tokens_ready
    # Its commit wakes the runner (sealed blocks) and queues embeddings (new messages): storage/db.py on_commit.
    # The model itself: the adapter serialises it once (a dict would be validated into the model again).
    return await capture_turn(app.db, app.settings, params, count_tokens)


@method("namespace.resolve", params=ResolveParams, result=ResolveResult)
async def namespace_resolve(app: App, p: ResolveParams) -> dict[str, str]:
    return resolve(p)


@method("activation.render", params=ActivationParams, result=ActivationResult)
async def activation_render(app: App, p: ActivationParams) -> dict[str, Any]:
    async def tokenizer_ready() -> None:
        if app.tokens_ready is not None:
            await app.tokens_ready

    # Once the context engine manages the session, its blocks sit in the history itself: not repeated in recall.
    managed = await context_queries.is_managed(app.db.reader, p.namespace, p.session)
    return await render_activation(app.db, app.settings, p, count_tokens, tokenizer_ready, own_blocks=not managed)


@method("tools.list", params=Empty, result=ToolsListResult)
async def tools_list(app: App, _: Empty) -> list[dict[str, Any]]:
    return (await app.tools()).specs()


@method("tools.call", params=ToolsCallParams, result=ToolsCallResult)
async def tools_call(app: App, p: ToolsCallParams) -> Any:
    ctx = ToolContext(app.db, app.settings, p.namespace, p.session, p.call_id, dense=app.dense)
    if p.name == "memory_forget" and app.tokens_ready is not None:
        await app.tokens_ready  # erase=true re-renders and re-counts blocks
    return await (await app.tools()).call(ctx, p.name, p.arguments)


@method("jobs.list", params=JobsListParams, result=JobsListResult)
async def jobs_list(app: App, p: JobsListParams) -> dict[str, Any]:
    rows = await queue.list_jobs(app.db, p.namespace, p.status, p.limit)
    return {"jobs": [r.public() for r in rows]}


@method("jobs.retry", params=JobsRetryParams, result=JobsRetryResult)
async def jobs_retry(app: App, p: JobsRetryParams) -> dict[str, Any]:
    job_key = None
    if p.id is not None:
        job_key = ids.parse(p.id, "job")
        if job_key is None:
            raise invalid_params(f"id must look like 'job_7' (got {p.id!r})")
        job = await queue.get_job(app.db, job_key)
        if job is None or (p.namespace is not None and job.namespace != p.namespace):
            raise not_found(f"unknown job {p.id}")
        if job.status in ("running", "done"):
            raise invalid_params(f"job {p.id} is {job.status}; only failed or queued jobs can be retried")
    retried = await queue.retry(app.db, job_key, p.namespace, "user")
    return {"retried": [ids.make("job", j) for j in retried]}


@method("memory.erase", params=EraseParams, result=EraseResult)
async def memory_erase(app: App, p: EraseParams) -> dict[str, Any]:
    """Erase an event (evt_N) or a captured message (msg_N) for good; see stratagate/erase/."""
    if app.tokens_ready is not None:
        await app.tokens_ready  # blocks are re-rendered and re-counted
    return await erase_subject(app.db, p.namespace, p.id, "user", max_attempts=app.settings.job_max_attempts)


METHODS: dict[str, Callable[..., Awaitable[Any]]] = {entry.name: _jsonrpc(entry) for entry in METHOD_TABLE}
"""What jsonrpcserver dispatches: every method of the table; ``load_methods`` adds the others as they are imported."""

PAGE_MODULE = "stratagate.page.routes"
"""The Memory page's methods (``page.request``, its DSH route, included) are all named ``page.*``."""
ON_DEMAND: dict[str, str] = {
    name: module
    for module, names in {
        "stratagate.rpc.context": ("context.plan", "context.landed", "context.settings.get", "context.settings.set"),
        "stratagate.rpc.context_views": ("context.status", "context.command"),
        "stratagate.rpc.dsh": ("turn.capture_raw", "activation.render_step", "namespace.for_session", "system.status",
                               "host.check"),
        "stratagate.rpc.evidence": ("memory.weights", "evidence.open_batches"),
        "stratagate.rpc.imports": ("import.run", "import.remove", "import.list", "import.get"),
        "stratagate.rpc.maintenance": ("system.stats", "maintenance.run", "events.unmerge"),
        "stratagate.rpc.namespace_settings": ("namespace.settings.get", "namespace.settings.set"),
        "stratagate.rpc.sessions": ("session.close", "session.seal_idle"),
        "stratagate.rpc.service": (
            "service.search", "service.recall", "service.store", "service.get", "service.stats",
            "service.maintenance", "service.scheduler", "service.similar", "service.consolidation_log",
        ),
    }.items()
    for name in names
}
"""Method name → the handler module that registers it (a test keeps this in step with the modules)."""


def module_to_load(method_name: object) -> str | None:
    """The module to import before ``method_name`` can be dispatched (None: nothing to import, or an unknown name)."""
    if not isinstance(method_name, str) or method_name in METHODS:
        return None
    if method_name.startswith("page."):
        return None if PAGE_MODULE in _loaded else PAGE_MODULE
    return ON_DEMAND.get(method_name)


_loaded: set[str] = set()


def load_methods(module: str) -> None:
    """Import a handler module (its methods register themselves) and add its methods to ``METHODS``. Idempotent and
    thread-safe (the server runs it in a thread, off the event loop)."""
    importlib.import_module(module)
    METHODS.update({entry.name: _jsonrpc(entry) for entry in METHOD_TABLE if entry.name not in METHODS})
    _loaded.add(module)


def load_all_methods() -> None:
    """Every method in the protocol table and in ``METHODS`` (the docs, `stratagate` inspectors, tests)."""
    for module in [*dict.fromkeys(ON_DEMAND.values()), PAGE_MODULE]:
        load_methods(module)
