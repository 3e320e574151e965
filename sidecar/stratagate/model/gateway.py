"""The one entry point the rest of the sidecar uses to talk to a model, whichever route is configured."""

from __future__ import annotations

import asyncio
import json
from typing import TYPE_CHECKING, Any, TypeVar

from pydantic import BaseModel

from stratagate.model.host_route import HostCaller, HostRoute
from stratagate.model.structured import call_structured
from stratagate.model.types import Completion, CompletionRequest, ModelRoute
from stratagate.safety.inert import inert, inert_tree

if TYPE_CHECKING:
    from stratagate.config import Settings

T = TypeVar("T", bound=BaseModel)

DEFAULT_MAX_TOKENS = 4096


class ModelGateway:
    """Bounds concurrent model calls (local servers and host harnesses both choke on bursts)."""

    def __init__(self, route: ModelRoute, concurrency: int, *, default_max_tokens: int = DEFAULT_MAX_TOKENS) -> None:
        if concurrency < 1:
            raise ValueError(f"model concurrency must be >= 1, got {concurrency}")
        self.route = route
        self.concurrency = concurrency
        self.default_max_tokens = default_max_tokens
        self._slots = asyncio.Semaphore(concurrency)

    def describe(self) -> str:
        """The route's description (recorded as provenance next to model output)."""
        return self.route.describe()

    async def complete(self, request: CompletionRequest) -> Completion:
        """Raw completion through the same concurrency bound (for callers that do their own parsing)."""
        async with self._slots:
            return await self.route.complete(request)

    async def structured(
        self,
        *,
        system: str,
        payload: str,
        output_model: type[T],
        tool_name: str,
        tool_description: str,
        max_tokens: int | None = None,
    ) -> T:
        # The slot is held across the corrective retry too: it is one logical call.
        async with self._slots:
            return await call_structured(
                self.route,
                system=system,
                payload=render_payload(payload),
                output_model=output_model,
                tool_name=tool_name,
                tool_description=tool_description,
                max_tokens=max_tokens or self.default_max_tokens,
            )

    async def aclose(self) -> None:
        close = getattr(self.route, "aclose", None)
        if close is not None:
            await close()


def render_payload(payload: str) -> str:
    """Memory sent to a model goes through the one rendering rule: every string of a JSON payload (keys included),
    or the whole text when it is not JSON. The system prompt is ours and is sent as written."""
    try:
        value = json.loads(payload)
    except ValueError:
        return inert(payload)
    return json.dumps(inert_tree(value), ensure_ascii=False)


def build_gateway(settings: Settings, host_caller: HostCaller | Any) -> ModelGateway:
    """Direct OpenAI-compatible route when STRATAGATE_MODEL_BASE_URL is set, else ask the host."""
    route: ModelRoute
    if settings.model_base_url:
        if not settings.model:
            raise ValueError(
                "STRATAGATE_MODEL must name the model when STRATAGATE_MODEL_BASE_URL is set "
                f"({settings.model_base_url})"
            )
        # Imported here: the openai package costs ~0.9 s and ~20 MB, and the host route never needs it.
        from stratagate.model.openai_route import OpenAIRoute

        route = OpenAIRoute(settings.model_base_url, settings.model_api_key, settings.model, settings.model_timeout)
    else:
        if host_caller is None:
            raise ValueError("no model route: set STRATAGATE_MODEL_BASE_URL or provide the host JSON-RPC peer")
        route = HostRoute(host_caller, settings.host_llm_timeout)
    return ModelGateway(route, settings.model_concurrency, default_max_tokens=settings.model_max_tokens)
