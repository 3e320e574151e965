"""JSON Schema for tool parameters from pydantic models, with local $refs inlined (some OpenAI-compatible servers and
their grammar engines handle $defs poorly). Used for agent tools and for forced model tool calls alike."""

from __future__ import annotations

import copy
import functools
from typing import Any

from pydantic import BaseModel


def tool_parameters(output_model: type[BaseModel]) -> dict[str, Any]:
    """JSON Schema for the tool's parameters: an object schema with local $refs inlined when possible
    (some OpenAI-compatible servers' grammar engines handle $defs poorly); recursive models keep $defs.
    Built once per model (a model job asks for its output schema on every call, ~0.25 ms each); a fresh copy each
    time, since callers adjust it."""
    return copy.deepcopy(_parameters(output_model))


@functools.cache
def _parameters(output_model: type[BaseModel]) -> dict[str, Any]:
    schema = output_model.model_json_schema()
    top_ref = schema.get("$ref")
    if isinstance(top_ref, str) and top_ref.startswith("#/$defs/") and "$defs" in schema:
        # Recursive models come out as a bare $ref; servers want the object at the top level.
        defs = schema["$defs"]
        schema = {**defs.get(top_ref.removeprefix("#/$defs/"), {}), "$defs": defs}
    if schema.get("type") != "object":
        raise TypeError(f"{output_model.__name__} must produce an object JSON schema, got {schema.get('type')!r}")
    schema = _inline_refs(schema)
    schema.setdefault("properties", {})
    return schema


class _Recursive(Exception):
    pass


def _inline_refs(schema: dict[str, Any]) -> dict[str, Any]:
    defs: dict[str, Any] = schema.get("$defs") or {}
    if not defs:
        return schema

    def resolve(node: Any, stack: frozenset[str]) -> Any:
        if isinstance(node, list):
            return [resolve(item, stack) for item in node]
        if not isinstance(node, dict):
            return node
        ref = node.get("$ref")
        if isinstance(ref, str) and ref.startswith("#/$defs/"):
            name = ref.removeprefix("#/$defs/")
            if name in stack or name not in defs:
                raise _Recursive
            target = resolve(defs[name], stack | {name})
            siblings = {k: resolve(v, stack) for k, v in node.items() if k != "$ref"}
            return {**target, **siblings}  # pydantic puts field descriptions/defaults next to $ref
        return {k: resolve(v, stack) for k, v in node.items() if k != "$defs"}

    try:
        return resolve(schema, frozenset())
    except _Recursive:
        return schema
