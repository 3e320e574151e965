"""Typed parameters of the JSON-RPC methods. turn.capture's (capture/models.py), activation.render's
(activation/render.py) and namespace.resolve's (namespaces.py) live with the feature that reads them; all are bound
in the method table (rpc/methods.py)."""

from __future__ import annotations

import os
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, StringConstraints, model_validator

from stratagate.protocol.types import Empty, Name, Origin

__all__ = [
    "Empty",
    "EraseParams",
    "ImportIdParams",
    "ImportListParams",
    "ImportRunParams",
    "JobsListParams",
    "JobsRetryParams",
    "MaintenanceRunParams",
    "OpenBatchesParams",
    "ToolsCallParams",
    "UnmergeParams",
    "WeightsParams",
]

_PARAMS = ConfigDict(extra="forbid", defer_build=True)
"""Unknown params are refused; each validator is built with the method's first call (start-up pays for none)."""


class ToolsCallParams(BaseModel):
    model_config = _PARAMS

    namespace: Name
    session: Name
    name: Annotated[str, StringConstraints(min_length=1, max_length=128)]
    arguments: dict[str, Any] = Field(default_factory=dict)
    call_id: Annotated[str, StringConstraints(max_length=256)] | None = None


class JobsListParams(BaseModel):
    model_config = _PARAMS

    namespace: Name | None = None
    status: Literal["queued", "running", "done", "failed"] | None = None
    limit: int = Field(100, ge=1, le=1000)


class JobsRetryParams(BaseModel):
    model_config = _PARAMS

    id: str | None = Field(None, description="A job id such as 'job_7'; omit to retry every failed job.")
    namespace: Name | None = None


class MaintenanceRunParams(BaseModel):
    model_config = _PARAMS

    dry_run: bool = Field(False, description="Report what a pass would do and write nothing.")


class UnmergeParams(BaseModel):
    model_config = _PARAMS

    id: Annotated[str, StringConstraints(min_length=1, max_length=64)] = Field(
        description="The merged duplicate, an event id such as 'evt_12'."
    )
    namespace: Name | None = Field(None, description="The event's namespace; omit for an admin call.")


ImportId = Annotated[str, StringConstraints(min_length=1, max_length=64)]


class ImportRunParams(BaseModel):
    model_config = _PARAMS

    namespace: Name
    path: Annotated[str, StringConstraints(min_length=1, max_length=4096)] | None = Field(
        None, description="Absolute path of the export file, read by the sidecar."
    )
    text: str | None = Field(None, description="The export's text itself (any format but dsh-memory-connect).")
    format: str | None = Field(
        None, description="mem0, chatgpt, markdown, text or dsh-memory-connect (default: detect)."
    )
    source_name: Name | None = Field(None, description="Name recorded for the source; default: the file's name.")
    scope: Literal["user", "project", "session"] = "user"
    allow_duplicate: bool = False

    @model_validator(mode="after")
    def _one_source(self) -> ImportRunParams:
        if (self.path is None) == (self.text is None):
            raise ValueError("give exactly one of path (a file the sidecar reads) or text (the export itself)")
        if self.path is not None and "\x00" in self.path:
            raise ValueError("path holds a NUL character; no file name can")
        if self.path is not None and not os.path.isabs(self.path):
            raise ValueError(f"path must be absolute (got {self.path!r}); the sidecar's working directory is not yours")
        return self


class ImportIdParams(BaseModel):
    model_config = _PARAMS

    namespace: Name = Field(description="The namespace the import belongs to; other namespaces' ids are unknown.")
    id: ImportId = Field(description="An import id such as 'imp_3'.")


class ImportListParams(BaseModel):
    model_config = _PARAMS

    namespace: Name = Field(description="The namespace whose imports are listed (never another's).")


class EraseParams(BaseModel):
    model_config = _PARAMS

    namespace: Name
    id: Annotated[str, StringConstraints(min_length=1, max_length=64)]


RefText = Annotated[str, StringConstraints(strip_whitespace=True, min_length=1, max_length=64)]


class WeightsParams(BaseModel):
    model_config = _PARAMS

    namespace: Name
    session: Name = Field(description="The session whose turn clock measures the distance.")
    refs: list[RefText] = Field(min_length=1, max_length=200, description="evt_N, nod_N or fct_N ids.")


class OpenBatchesParams(BaseModel):
    model_config = _PARAMS

    namespace: Name
    session: Name
    origin: Origin | None = Field(None, description="The session's origin; a subagent session is never nudged.")
