"""Host route: ask the harness (over the sidecar's JSON-RPC peer) to run the completion with its own model."""

from __future__ import annotations

import asyncio
import json
from typing import Any, Protocol

from pydantic import ValidationError

from stratagate.errors import HostRequestError
from stratagate.model.types import Completion, CompletionRequest, ModelError

METHOD = "host.llm.complete"
__all__ = ["METHOD", "HostCaller", "HostRequestError", "HostRoute"]


def tool_instruction(name: str) -> str:
    """What the host appends to the system text when a tool must be called: a host whose model API has no
    ``tool_choice`` (DSH's GenerateOptions) can only force the call by saying so."""
    return (
        f"You must answer by calling the function `{name}` exactly once, with arguments that satisfy its JSON "
        "schema. Do not answer in plain text and do not call any other function."
    )


class HostCaller(Protocol):
    # The peer's signature takes a timeout because it owns the pending-request table and must drop the
    # entry itself when the host never answers.
    async def request(self, method: str, params: dict[str, Any], timeout: float) -> Any: ...  # noqa: ASYNC109


class HostRoute:
    def __init__(self, caller: HostCaller, timeout: float) -> None:
        self.caller = caller
        self.timeout = timeout

    def describe(self) -> str:
        return f"host:{METHOD}"

    async def complete(self, request: CompletionRequest) -> Completion:
        params = request.model_dump()
        params["purpose"] = "stratagate"
        if request.tool is not None:
            params["tool_instruction"] = tool_instruction(request.tool.name)
        try:
            # The peer enforces `timeout` itself; the outer deadline is a backstop against a peer that
            # does not, so a job can never hang on the host.
            async with asyncio.timeout(self.timeout):
                result = await self.caller.request(METHOD, params, self.timeout)
        except HostRequestError as exc:
            raise ModelError(
                "host", f"host {METHOD} failed with error {exc.code}: {exc.message}", retryable=True
            ) from exc
        except TimeoutError as exc:  # asyncio.TimeoutError is TimeoutError on 3.11+
            raise ModelError("timeout", f"host {METHOD} did not answer within {self.timeout:g}s") from exc
        try:
            return Completion.model_validate(result)
        except ValidationError as exc:
            problems = "; ".join(
                f"{'.'.join(str(p) for p in e['loc']) or 'result'}: {e['msg']}" for e in exc.errors()[:5]
            )
            raise ModelError(
                "host",
                f"host {METHOD} returned a malformed result: {problems}",
                preview=_dump(result),
                retryable=True,
            ) from exc


def _dump(value: Any) -> str:
    try:
        return json.dumps(value, ensure_ascii=False, default=str)[:2000]
    except (TypeError, ValueError):
        return repr(value)[:2000]
