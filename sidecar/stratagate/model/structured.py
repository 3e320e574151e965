"""Structured output: forced tool call validated by pydantic, JSON-in-text fallback, one corrective retry."""

from __future__ import annotations

import functools
import json
import logging
import re
from dataclasses import dataclass
from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError

from stratagate.model.types import (
    ChatMessage,
    Completion,
    CompletionRequest,
    ErrorKind,
    ModelError,
    ModelRoute,
    ToolSpec,
)
from stratagate.tool_schema import tool_parameters

T = TypeVar("T", bound=BaseModel)

log = logging.getLogger(__name__)

MAX_RETRY_TOKENS = 16384
_FENCE = re.compile(r"```[ \t]*(?:json|JSON|json5)?[ \t]*\r?\n?(.*?)```", re.DOTALL)
_SCAN_BUDGET = 2_000_000  # characters; bounds the brace scan on pathological input ("{{{{...")


# ----------------------------------------------------------------------------------------- JSON salvage


def extract_json_candidates(text: str) -> list[dict[str, Any]]:
    """JSON objects found in ``text``, most plausible first.

    Order of attempts: the whole text as JSON; then the text without BOM and ```json fences; then a
    string-aware scan for balanced ``{...}`` spans, the *last* parsable top-level object first (models
    tend to think aloud before the final answer).
    """
    if not text:
        return []
    whole = _loads_object(text)
    if whole is not None:
        return [whole]
    stripped = text.lstrip("\ufeff").strip()
    whole = _loads_object(stripped)
    if whole is not None:
        return [whole]
    fenced = [obj for block in _FENCE.findall(stripped) if (obj := _loads_object(block.strip())) is not None]
    if fenced:
        return fenced[::-1]
    return _scan_objects(stripped)[::-1]


def _loads_object(text: str) -> dict[str, Any] | None:
    try:
        value = json.loads(text)
    except ValueError:
        return None
    return value if isinstance(value, dict) else None


def _scan_objects(text: str) -> list[dict[str, Any]]:
    found: list[dict[str, Any]] = []
    budget = _SCAN_BUDGET
    start = text.find("{")
    while start != -1 and budget > 0:
        end, cost = _balanced_end(text, start)
        budget -= cost
        if end is not None:
            obj = _loads_object(text[start : end + 1])
            if obj is not None:
                found.append(obj)
                start = text.find("{", end + 1)  # top-level only: skip everything nested inside
                continue
        # Not JSON (prose in braces) or unterminated: a nested object may still be valid.
        start = text.find("{", start + 1)
    return found


def _balanced_end(text: str, start: int) -> tuple[int | None, int]:
    depth = 0
    in_string = False
    escaped = False
    for i in range(start, len(text)):
        ch = text[i]
        if in_string:
            if escaped:
                escaped = False
            elif ch == "\\":
                escaped = True
            elif ch == '"':
                in_string = False
        elif ch == '"':
            in_string = True
        elif ch == "{":
            depth += 1
        elif ch == "}":
            depth -= 1
            if depth == 0:
                return i, i - start + 1
    return None, len(text) - start


# ----------------------------------------------------------------------------------------- schema


# ----------------------------------------------------------------------------------------- interpretation


@dataclass
class _Failure:
    kind: ErrorKind  # "invalid_output" or "truncated"
    problem: str


def describe_validation_error(exc: ValidationError, limit: int = 8) -> str:
    """Compact, model-readable list of what was wrong ("field l1_summary: Field required; ...")."""
    errors = exc.errors(include_url=False)
    parts: list[str] = []
    for err in errors[:limit]:
        loc = ".".join(str(p) for p in err["loc"])
        if err["type"] == "json_invalid":
            parts.append(f"arguments are not valid JSON ({err['msg']})")
        elif loc:
            parts.append(f"field {loc}: {err['msg']}")
        else:
            parts.append(str(err["msg"]))
    if len(errors) > limit:
        parts.append(f"and {len(errors) - limit} more errors")
    return "; ".join(parts)


def _is_truncated_json(exc: ValidationError) -> bool:
    return any(e["type"] == "json_invalid" and "EOF" in str(e["msg"]) for e in exc.errors(include_url=False))


def _validate_arguments(arguments: str, output_model: type[T]) -> T | _Failure:
    if not arguments.strip():
        return _Failure("invalid_output", "the tool call had empty arguments")
    try:
        return output_model.model_validate_json(arguments)
    except ValidationError as exc:
        first = exc
    # Tolerate a BOM, fences or chatter around otherwise-correct arguments.
    for candidate in extract_json_candidates(arguments):
        try:
            return output_model.model_validate(candidate)
        except ValidationError:
            continue
    kind: ErrorKind = "truncated" if _is_truncated_json(first) else "invalid_output"
    return _Failure(kind, describe_validation_error(first))


def _from_text(text: str, tool_name: str, output_model: type[T]) -> T | _Failure:
    candidates = extract_json_candidates(text)
    # A model that cannot do tool calls sometimes writes the call out: {"name": ..., "arguments": {...}}.
    expanded: list[Any] = []
    for cand in candidates:
        inner = cand.get("arguments", cand.get("parameters"))
        if cand.get("name") == tool_name and isinstance(inner, dict):
            expanded.append(inner)
        expanded.append(cand)
    first_error: ValidationError | None = None
    for cand in expanded:
        try:
            return output_model.model_validate(cand)
        except ValidationError as exc:
            first_error = first_error or exc
    if first_error is not None:
        return _Failure("invalid_output", describe_validation_error(first_error))
    if text.strip():
        return _Failure("invalid_output", f"no {tool_name} tool call and no JSON object in the reply text")
    return _Failure("invalid_output", f"empty reply: no {tool_name} tool call and no text")


def interpret(completion: Completion, tool_name: str, output_model: type[T]) -> T | _Failure:
    """Turn one completion into a validated object, or a precise description of what was wrong."""
    calls = [c for c in completion.tool_calls if c.name == tool_name]
    failure: _Failure | None = None
    if len(calls) == 1 or (calls and len({c.arguments for c in calls}) == 1):
        result = _validate_arguments(calls[0].arguments, output_model)
        if not isinstance(result, _Failure):
            return result
        failure = result
    elif calls:
        failure = _Failure("invalid_output", f"{tool_name} was called {len(calls)} times with different arguments")
    elif completion.tool_calls:
        others = ", ".join(sorted({c.name for c in completion.tool_calls}))
        failure = _Failure("invalid_output", f"called {others} instead of {tool_name}")

    fallback = _from_text(completion.text, tool_name, output_model)
    if not isinstance(fallback, _Failure):
        return fallback
    failure = failure or fallback
    if completion.finish_reason == "length":
        return _Failure("truncated", failure.problem)
    return failure


# ----------------------------------------------------------------------------------------- driver


def _correction(failure: _Failure, tool_name: str, max_tokens: int) -> str:
    if failure.kind == "truncated":
        what = f"your output was cut off at max_tokens ({max_tokens}); answer more briefly"
    else:
        what = f"your output was not a valid {tool_name} call: {failure.problem}"
    return (
        f"Correction: {what}. Call the {tool_name} tool exactly once, with complete arguments that match "
        "its JSON schema. Do not reply with plain text."
    )


@functools.lru_cache(maxsize=64)
def _tool(output_model: type[BaseModel], tool_name: str, tool_description: str) -> ToolSpec:
    """One tool spec per output model and tool: a job asks for the same one on every call, and building it copies
    the whole schema. Shared, so never changed: the routes only read it (the host route sends a dump of it)."""
    return ToolSpec(name=tool_name, description=tool_description, parameters=tool_parameters(output_model))


async def call_structured(
    route: ModelRoute,
    *,
    system: str,
    payload: str,
    output_model: type[T],
    tool_name: str,
    tool_description: str,
    max_tokens: int,
) -> T:
    """Ask ``route`` for a ``tool_name`` call whose arguments validate as ``output_model``.

    Output problems get exactly one corrective retry; route errors (HTTP, timeout, transport, host)
    propagate at once because the job queue owns retry-with-backoff for those.
    """
    tool = _tool(output_model, tool_name, tool_description)
    messages = [ChatMessage(role="system", content=system), ChatMessage(role="user", content=payload)]
    request = CompletionRequest(messages=messages, tool=tool, max_tokens=max_tokens)

    completion = await route.complete(request)
    result = interpret(completion, tool_name, output_model)
    if not isinstance(result, _Failure):
        return result

    # Not the problem text: it can quote the model's output, which can quote memory.
    log.info("model output for %s rejected (%s); retrying once", tool_name, result.kind)
    retry_tokens = request.max_tokens
    if result.kind == "truncated":
        retry_tokens = max(retry_tokens, min(retry_tokens * 2, MAX_RETRY_TOKENS))
    retry = CompletionRequest(
        messages=[
            *messages,
            ChatMessage(role="assistant", content=completion.raw_output() or "(empty reply)"),
            ChatMessage(role="user", content=_correction(result, tool_name, request.max_tokens)),
        ],
        tool=tool,
        max_tokens=retry_tokens,
    )
    completion = await route.complete(retry)
    second = interpret(completion, tool_name, output_model)
    if not isinstance(second, _Failure):
        return second

    if second.kind == "truncated":
        message = (
            f"model output for {tool_name} was cut off at max_tokens={retry_tokens}: {second.problem} "
            "(after 2 attempts)"
        )
    else:
        message = f"model output was not a valid {tool_name} call: {second.problem} (after 2 attempts)"
    raise ModelError(second.kind, message, preview=completion.raw_output(), retryable=True)
