"""Model gateway: one interface over the direct OpenAI-compatible route and the host route."""

from stratagate.model.gateway import ModelGateway, build_gateway
from stratagate.model.host_route import HostCaller, HostRequestError, HostRoute
from stratagate.model.openai_route import OpenAIRoute
from stratagate.model.redact import redact
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
    "redact",
    "tool_parameters",
]
