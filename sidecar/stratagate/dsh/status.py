"""``system.status``: the status the Settings page and ``GET /api/stratagate/status`` show, assembled here.

The shim reports what only it knows (its setup state, interpreter, venv, spool depth, restarts, its own last
errors); this module adds the sidecar's side (``system.info``) and decides the queue figures and which problem is
"the" last error. While the sidecar is down the shim shows its own part only (shim-js/runtime.js ``status``).
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field


class PythonInfo(BaseModel):
    model_config = ConfigDict(extra="forbid")

    command: str
    version: str | None = None
    source: str | None = None


class HostState(BaseModel):
    """The shim's half of the status."""

    model_config = ConfigDict(extra="forbid")

    state: str = "ready"
    detail: str | None = None
    shim_version: str | None = None
    bundled_sidecar: str | None = None
    python: PythonInfo | None = None
    venv: str | None = None
    db_path: str | None = Field(None, description="The shim's idea of the database path (before the sidecar ran).")
    namespace_mode: str | None = None
    spooled_turns: int = Field(0, ge=0)
    captured_this_run: int = Field(0, ge=0)
    setup_error: str | None = None
    sidecar_error: str | None = None
    capture_error: str | None = None
    hint: str | None = None
    restarts: int = Field(0, ge=0)
    pid: int | None = None


class StatusParams(BaseModel):
    model_config = ConfigDict(extra="forbid")

    host: HostState = Field(default_factory=HostState)


class Versions(BaseModel):
    shim: str | None
    sidecar: str | None
    bundled_sidecar: str | None


class Queue(BaseModel):
    depth: int
    spooled_turns: int
    jobs_queued: int
    jobs_running: int
    jobs_failed: int


class Status(BaseModel):
    state: str
    detail: str | None
    version: Versions
    python: PythonInfo | None
    venv: str | None
    db_path: str | None
    namespace_mode: str | None
    model_route: Any = None
    queue: Queue
    counts: dict[str, Any] | None
    captured_this_run: int
    last_error: str | None
    hint: str | None
    restarts: int
    pid: int | None
    dense: Any = None
    source: Literal["sidecar", "shim"] = "sidecar"


def assemble_status(host: HostState, info: dict[str, Any] | None) -> Status:
    """The full status from the shim's half and ``system.info`` (None when the sidecar could not answer)."""
    info = info or {}
    jobs = (info.get("counts") or {}).get("jobs") or {}
    queued, running, failed = (int(jobs.get(k, 0)) for k in ("queued", "running", "failed"))
    # The most relevant problem, even if it has since recovered (restarts tells how often the sidecar crashed).
    last_error = host.setup_error or host.sidecar_error or host.capture_error or info.get("last_job_error")
    return Status(
        state=host.state,
        detail=host.detail,
        version=Versions(shim=host.shim_version, sidecar=info.get("version"), bundled_sidecar=host.bundled_sidecar),
        python=host.python,
        venv=host.venv,
        db_path=info.get("db_path") or host.db_path,
        namespace_mode=host.namespace_mode,
        model_route=info.get("model_route"),
        queue=Queue(
            depth=host.spooled_turns + queued + running,
            spooled_turns=host.spooled_turns,
            jobs_queued=queued,
            jobs_running=running,
            jobs_failed=failed,
        ),
        counts=info.get("counts"),
        captured_this_run=host.captured_this_run,
        last_error=last_error,
        hint=host.hint,
        restarts=host.restarts,
        pid=host.pid if host.pid is not None else info.get("pid"),
        dense=info.get("dense"),
        source="sidecar" if info else "shim",
    )
