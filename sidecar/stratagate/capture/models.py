"""The turn.capture boundary: what the host sends, validated before anything touches the disk."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Annotated, Any

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    StringConstraints,
    field_validator,
    model_validator,
)

from stratagate.errors import has_surrogate
from stratagate.protocol.types import Name, valid_text

__all__ = ["CaptureParams", "CaptureResult", "Name", "ToolRecord"]  # Name: older callers import it from here


class ToolRecord(BaseModel):
    model_config = ConfigDict(extra="forbid")

    name: Annotated[str, StringConstraints(min_length=1, max_length=256)]
    arguments: Any = None
    result: Any = None
    is_error: bool = False
    call_id: Annotated[str, StringConstraints(max_length=256)] | None = None

    @field_validator("arguments", "result")
    @classmethod
    def _json_serialisable(cls, value: Any) -> Any:
        if value is None or isinstance(value, str):  # always JSON; a string only needs its surrogate check
            if isinstance(value, str) and has_surrogate(value):
                raise ValueError("text holds a lone UTF-16 surrogate (not valid Unicode)")
            return value
        try:
            json.dumps(value, allow_nan=False, ensure_ascii=False).encode()
        except UnicodeEncodeError as exc:
            raise ValueError("text holds a lone UTF-16 surrogate (not valid Unicode)") from exc
        except (TypeError, ValueError) as exc:
            raise ValueError(f"must be JSON-serialisable: {exc}") from exc
        return value


class CaptureParams(BaseModel):
    model_config = ConfigDict(extra="forbid")

    namespace: Name
    session: Name
    receipt: Name
    user: str = ""
    assistant: str = ""
    tools: list[ToolRecord] = Field(default_factory=list, max_length=2000)
    started_at: datetime | None = None
    ended_at: datetime | None = None
    end_reason: Annotated[str, StringConstraints(max_length=64)] | None = None

    @field_validator("user", "assistant")
    @classmethod
    def _text(cls, value: str) -> str:
        return valid_text(value)

    @field_validator("started_at", "ended_at")
    @classmethod
    def _aware(cls, value: datetime | None) -> datetime | None:
        if value is not None and value.tzinfo is None:
            raise ValueError("timestamp needs a timezone (e.g. 2026-05-01T09:30:00Z or +08:00)")
        if value is not None:
            try:  # stored in UTC: a year-1 or year-9999 time with an offset would overflow later
                value.astimezone(UTC)
            except (OverflowError, ValueError) as exc:
                raise ValueError(f"timestamp is out of range once converted to UTC ({exc})") from exc
        return value

    @model_validator(mode="after")
    def _not_empty(self) -> CaptureParams:
        if not self.user.strip() and not self.assistant.strip() and not self.tools:
            raise ValueError("a turn needs user text, assistant text or at least one tool record")
        if self.started_at and self.ended_at and self.ended_at < self.started_at:
            raise ValueError("ended_at is earlier than started_at")
        return self


class CaptureResult(BaseModel):
    turn_id: str
    duplicate: bool
    sealed_block_ids: list[str]
