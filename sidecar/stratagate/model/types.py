"""Route-neutral request/response types shared by both model routes and the structured-output layer."""

from __future__ import annotations

import json
from typing import Any, Literal, Protocol, runtime_checkable

from pydantic import BaseModel, Field, field_validator

from stratagate.redact import preview as _preview
from stratagate.redact import redact

Role = Literal["system", "user", "assistant"]
ErrorKind = Literal["http", "timeout", "transport", "truncated", "invalid_output", "unavailable", "host"]


class ChatMessage(BaseModel):
    role: Role
    content: str


class ToolSpec(BaseModel):
    name: str
    description: str
    parameters: dict[str, Any]


class CompletionRequest(BaseModel):
    messages: list[ChatMessage]
    tool: ToolSpec | None = None
    max_tokens: int = Field(gt=0)


class ToolCall(BaseModel):
    name: str
    arguments: str  # raw JSON text exactly as the model produced it (may be invalid)

    @field_validator("arguments", mode="before")
    @classmethod
    def _stringify(cls, value: Any) -> Any:
        # The host route may hand back already-decoded arguments; keep the "raw text" invariant.
        if isinstance(value, dict | list):
            return json.dumps(value, ensure_ascii=False)
        if value is None:
            return ""
        return value


class Completion(BaseModel):
    text: str = ""
    tool_calls: list[ToolCall] = Field(default_factory=list)
    finish_reason: str | None = None
    model: str | None = None

    @field_validator("text", mode="before")
    @classmethod
    def _none_text(cls, value: Any) -> Any:
        return "" if value is None else value

    @field_validator("tool_calls", mode="before")
    @classmethod
    def _none_calls(cls, value: Any) -> Any:
        return [] if value is None else value

    def raw_output(self) -> str:
        """Everything the model said, as text: used for previews and for replaying it in a retry."""
        parts = [self.text] if self.text else []
        parts.extend(f"[tool call {c.name}] {c.arguments}" for c in self.tool_calls)
        return "\n".join(parts)


_DEFAULT_RETRYABLE: dict[str, bool] = {
    "http": False,
    "timeout": True,
    "transport": True,
    "truncated": True,
    "invalid_output": True,
    "unavailable": False,
    "host": True,
}


class ModelError(Exception):
    """Any failure to obtain a usable completion. ``str(err)`` is a one-line, secrets-free message."""

    kind: ErrorKind
    message: str
    preview: str
    retryable: bool

    def __init__(self, kind: ErrorKind, message: str, *, preview: str = "", retryable: bool | None = None) -> None:
        self.kind = kind
        self.message = " ".join(redact(message).split())  # one line, no secrets
        self.preview = _preview(preview)
        self.retryable = _DEFAULT_RETRYABLE[kind] if retryable is None else retryable
        super().__init__(self.message)

    def __str__(self) -> str:
        return self.message

    def __repr__(self) -> str:
        return f"ModelError(kind={self.kind!r}, retryable={self.retryable}, message={self.message!r})"


@runtime_checkable
class ModelRoute(Protocol):
    """Anything that can complete a chat request: the direct OpenAI route, the host route, test fakes."""

    async def complete(self, request: CompletionRequest) -> Completion: ...

    def describe(self) -> str: ...
