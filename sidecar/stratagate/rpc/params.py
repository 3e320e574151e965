"""Typed parameters of every JSON-RPC method (turn.capture's live in capture/models.py)."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, StringConstraints

from stratagate.capture.models import Name


class Empty(BaseModel):
    model_config = ConfigDict(extra="forbid")


class ToolsCallParams(BaseModel):
    model_config = ConfigDict(extra="forbid")

    namespace: Name
    session: Name
    name: Annotated[str, StringConstraints(min_length=1, max_length=128)]
    arguments: dict[str, Any] = Field(default_factory=dict)
    call_id: Annotated[str, StringConstraints(max_length=256)] | None = None


class JobsListParams(BaseModel):
    model_config = ConfigDict(extra="forbid")

    namespace: Name | None = None
    status: Literal["queued", "running", "done", "failed"] | None = None
    limit: int = Field(100, ge=1, le=1000)


class JobsRetryParams(BaseModel):
    model_config = ConfigDict(extra="forbid")

    id: str | None = Field(None, description="A job id such as 'job_7'; omit to retry every failed job.")
    namespace: Name | None = None
