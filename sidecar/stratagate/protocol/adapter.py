"""The one validation adapter for methods and tools: params in (validated, errors naming the field), the handler run,
its result validated and serialised through the entry's result model, every exception mapped once
(``protocol/errors.as_rpc_error``)."""

from __future__ import annotations

import logging
from typing import Any

from pydantic import BaseModel, ValidationError

from stratagate.errors import INTERNAL_ERROR, RpcError, explain_validation, has_surrogate, invalid_params
from stratagate.protocol.errors import as_rpc_error
from stratagate.protocol.registry import Entry

log = logging.getLogger("stratagate.rpc")

MAX_PARAM_DEPTH = 64


def surrogate_path(value: Any, path: str = "params", depth: int = 0, root: str = "params") -> str | None:
    """The dotted path of the first string (value or key) holding a lone surrogate, or None."""
    if depth > MAX_PARAM_DEPTH:
        return None  # the peer refuses deeper lines before they get here
    if isinstance(value, str):
        return path if has_surrogate(value) else None
    if isinstance(value, dict):
        for key, item in value.items():
            here = f"{path}.{key}" if path != root else str(key)
            if isinstance(key, str) and has_surrogate(key):
                return here
            found = surrogate_path(item, here, depth + 1, root)
            if found is not None:
                return found
    elif isinstance(value, list):
        for index, item in enumerate(value):
            found = surrogate_path(item, f"{path}.{index}" if path != root else str(index), depth + 1, root)
            if found is not None:
                return found
    return None


def parse(entry: Entry, raw: Any) -> BaseModel:
    """``raw`` validated by the entry's params model; -32602 naming the field otherwise.

    A method's error says ``invalid params: …`` and carries pydantic's error list; a tool's says ``bad arguments for
    <tool>: …`` (the agent reads it, so it stays one line)."""
    raw = {} if raw is None else raw
    prefix = "invalid params" if entry.kind == "method" else f"bad arguments for {entry.name}"
    bad = surrogate_path(raw)
    if bad is not None:
        raise invalid_params(f"{prefix}: {bad}: text holds a lone UTF-16 surrogate (not valid Unicode)")
    try:
        return entry.params.model_validate(raw)
    except ValidationError as exc:
        data = exc.errors(include_url=False, include_context=False) if entry.kind == "method" else None
        raise invalid_params(f"{prefix}: {explain_validation(exc)}", data) from exc


def serialise(entry: Entry, value: Any) -> Any:
    """The handler's return as JSON through the result model. Keys the handler left out stay out (exclude_unset), so
    optional keys (``note``, ``score``…) appear exactly when the handler gives them."""
    model = entry.result
    try:
        typed = value if isinstance(value, model) else model.model_validate(value)
    except ValidationError as exc:
        log.error("the result of %s does not match %s: %s", entry.name, model.__name__, explain_validation(exc))
        raise RpcError(
            INTERNAL_ERROR, f"internal error: the result of {entry.name} does not match its model: "
            f"{explain_validation(exc)}"
        ) from exc
    return typed.model_dump(mode="json", exclude_unset=True, by_alias=True)


async def run(entry: Entry, context: Any, params: BaseModel) -> Any:
    """The handler on already-validated params, its result typed (what evidence batching wraps)."""
    return serialise(entry, await entry.handler(context, params))


async def call(entry: Entry, context: Any, raw: Any, runner: Any = None) -> Any:
    """Validate, run (through ``runner(context, params)`` when given, e.g. an evidence-batched run) and map every
    failure to one JSON-RPC error."""
    try:
        parsed = parse(entry, raw)
        if runner is not None:
            return await runner(context, parsed)
        return await run(entry, context, parsed)
    except RpcError:
        raise
    except Exception as exc:
        error = as_rpc_error(exc)
        if error.code == INTERNAL_ERROR:
            log.exception("internal error in %s %s", entry.kind, entry.name)
        else:
            log.warning("%s", error.message)
        raise error from exc
