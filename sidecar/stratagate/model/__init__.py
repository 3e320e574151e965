"""Model gateway: one interface over the direct OpenAI-compatible route and the host route."""

from typing import Any

from stratagate.model.gateway import ModelGateway, build_gateway
from stratagate.model.host_route import HostCaller, HostRequestError, HostRoute
from stratagate.model.structured import call_structured, extract_json_candidates, tool_parameters
from stratagate.model.types import (
    ChatMessage,
    Completion,
    CompletionRequest,
    ModelError,
    ModelRoute,
    ToolCall,
    ToolSpec,
)

__all__ = [
    "ChatMessage",
    "Completion",
    "CompletionRequest",
    "HostCaller",
    "HostRequestError",
    "HostRoute",
    "ModelError",
    "ModelGateway",
    "ModelRoute",
    "OpenAIRoute",
    "ToolCall",
    "ToolSpec",
    "build_gateway",
    "call_structured",
    "extract_json_candidates",
    "tool_parameters",
]


def __getattr__(name: str) -> Any:
    # OpenAIRoute imports the openai package (~0.9 s): only on first use, never for the host route.
    if name == "OpenAIRoute":
        from stratagate.model.openai_route import OpenAIRoute

        return OpenAIRoute
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
