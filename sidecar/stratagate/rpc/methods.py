"""The JSON-RPC method table. Each method validates its params with pydantic and returns plain JSON."""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from typing import Any

from jsonrpcserver import Success
from pydantic import BaseModel, ValidationError

from stratagate import __version__, ids
from stratagate.activation.render import ActivationParams, render_activation
from stratagate.app import App
from stratagate.capture.models import CaptureParams
from stratagate.capture.store import capture_turn
from stratagate.erase import erase_subject
from stratagate.errors import (
    INTERNAL_ERROR,
    RpcError,
    explain_validation,
    has_surrogate,
    invalid_params,
    not_found,
)
from stratagate.jobs import queue
from stratagate.namespaces import ResolveParams, resolve
from stratagate.rpc import dsh
from stratagate.rpc.error_map import as_rpc_error
from stratagate.rpc.evidence import OpenBatchesParams, WeightsParams, memory_weights, open_batches
from stratagate.rpc.imports import import_get, import_list, import_remove, import_run
from stratagate.rpc.params import (
    Empty,
    EraseParams,
    ImportIdParams,
    ImportListParams,
    ImportRunParams,
    JobsListParams,
    JobsRetryParams,
    ToolsCallParams,
)
from stratagate.tokens import count_tokens
from stratagate.tool_registry import ToolContext

log = logging.getLogger("stratagate.rpc")

Handler = Callable[[App, Any], Awaitable[Any]]


MAX_PARAM_DEPTH = 64


def surrogate_path(value: Any, path: str = "params", depth: int = 0) -> str | None:
    """The dotted path of the first string (value or key) holding a lone surrogate, or None."""
    if depth > MAX_PARAM_DEPTH:
        return None  # the peer refuses deeper lines before they get here
    if isinstance(value, str):
        return path if has_surrogate(value) else None
    if isinstance(value, dict):
        for key, item in value.items():
            here = f"{path}.{key}" if path != "params" else str(key)
            if isinstance(key, str) and has_surrogate(key):
                return here
            found = surrogate_path(item, here, depth + 1)
            if found is not None:
                return found
    elif isinstance(value, list):
        for index, item in enumerate(value):
            found = surrogate_path(item, f"{path}.{index}" if path != "params" else str(index), depth + 1)
            if found is not None:
                return found
    return None


def rpc_method(model: type[BaseModel], handler: Handler) -> Callable[..., Awaitable[Any]]:
    """Adapt a typed handler to jsonrpcserver: params by name only, validated, errors made clear.

    Every exception is mapped by ``rpc/error_map.as_rpc_error``: a client mistake (bad value, a date out of range, a NUL
    in a path, a lone surrogate in text) is -32602 naming the field, a storage failure -32010, a bug -32603.
    """

    async def method(app: App, *args: Any, **params: Any) -> Any:
        if args:
            raise invalid_params("params must be an object (named parameters), not an array")
        bad = surrogate_path(params)
        if bad is not None:
            raise invalid_params(f"invalid params: {bad}: text holds a lone UTF-16 surrogate (not valid Unicode)")
        try:
            parsed = model.model_validate(params)
        except ValidationError as exc:
            raise invalid_params(
                f"invalid params: {explain_validation(exc)}", exc.errors(include_url=False, include_context=False)
            ) from exc
        except (ValueError, OverflowError, UnicodeError) as exc:
            raise as_rpc_error(exc) from exc
        try:
            return Success(await handler(app, parsed))
        except RpcError:
            raise
        except Exception as exc:
            error = as_rpc_error(exc)
            if error.code == INTERNAL_ERROR:
                log.exception("internal error")
            else:
                log.warning("%s", error.message)
            raise error from exc

    return method


async def ping(app: App, _: Empty) -> dict[str, Any]:
    return {"pong": True, "version": __version__}


async def info(app: App, _: Empty) -> dict[str, Any]:
    return await app.info()


async def shutdown(app: App, _: Empty) -> dict[str, Any]:
    app.shutdown_requested.set()
    return {"ok": True}


async def capture(app: App, params: CaptureParams) -> dict[str, Any]:
    if app.tokens_ready is not None:
        await app.tokens_ready
    # Its commit wakes the runner (sealed blocks) and queues embeddings (new messages): storage/db.py on_commit.
    result = await capture_turn(app.db, app.settings, params, count_tokens)
    return result.model_dump()


async def namespace_resolve(app: App, p: ResolveParams) -> dict[str, str]:
    return resolve(p)


async def activation_render(app: App, p: ActivationParams) -> dict[str, Any]:
    async def tokenizer_ready() -> None:
        if app.tokens_ready is not None:
            await app.tokens_ready

    return await render_activation(app.db, app.settings, p, count_tokens, tokenizer_ready)


async def tools_list(app: App, _: Empty) -> list[dict[str, Any]]:
    return app.tools.specs()


async def tools_call(app: App, p: ToolsCallParams) -> Any:
    ctx = ToolContext(app.db, app.settings, p.namespace, p.session, p.call_id)
    if p.name == "memory_forget" and app.tokens_ready is not None:
        await app.tokens_ready  # erase=true re-renders and re-counts blocks
    return await app.tools.call(ctx, p.name, p.arguments)


async def jobs_list(app: App, p: JobsListParams) -> dict[str, Any]:
    rows = await queue.list_jobs(app.db, p.namespace, p.status, p.limit)
    return {"jobs": [r.public() for r in rows]}


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


async def memory_erase(app: App, p: EraseParams) -> dict[str, Any]:
    """Erase an event (evt_N) or a captured message (msg_N) for good; see erase.py."""
    if app.tokens_ready is not None:
        await app.tokens_ready  # blocks are re-rendered and re-counted
    return await erase_subject(app.db, p.namespace, p.id, "user", max_attempts=app.settings.job_max_attempts)


METHODS: dict[str, Callable[..., Awaitable[Any]]] = {
    "system.ping": rpc_method(Empty, ping),
    "system.info": rpc_method(Empty, info),
    "system.shutdown": rpc_method(Empty, shutdown),
    "turn.capture": rpc_method(CaptureParams, capture),
    "namespace.resolve": rpc_method(ResolveParams, namespace_resolve),
    "activation.render": rpc_method(ActivationParams, activation_render),
    "tools.list": rpc_method(Empty, tools_list),
    "tools.call": rpc_method(ToolsCallParams, tools_call),
    "jobs.list": rpc_method(JobsListParams, jobs_list),
    "jobs.retry": rpc_method(JobsRetryParams, jobs_retry),
    "import.run": rpc_method(ImportRunParams, import_run),
    "import.remove": rpc_method(ImportIdParams, import_remove),
    "import.list": rpc_method(ImportListParams, import_list),
    "import.get": rpc_method(ImportIdParams, import_get),
    "memory.weights": rpc_method(WeightsParams, memory_weights),
    "evidence.open_batches": rpc_method(OpenBatchesParams, open_batches),
    "memory.erase": rpc_method(EraseParams, memory_erase),
    # The DSH adapter (rpc/dsh.py): raw host payloads in, the sidecar decides.
    "turn.capture_raw": rpc_method(dsh.RawCaptureParams, dsh.capture_raw),
    "activation.render_step": rpc_method(dsh.StepParams, dsh.render_step),
    "namespace.for_session": rpc_method(dsh.SessionNamespaceParams, dsh.namespace_for_session),
    "system.status": rpc_method(dsh.StatusParams, dsh.system_status),
}
