"""Sidecar settings: defaults, overridden by STRATAGATE_* environment variables, overridden by flags."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, Field, ValidationError, model_validator


def default_db_path() -> Path:
    home = os.environ.get("DSH_HOME") or str(Path.home() / ".dsh")
    return Path(home) / "stratagate" / "memory.db"


class Settings(BaseModel):
    """Every knob the sidecar has. Field name ``x`` maps to env ``STRATAGATE_X``."""

    db: Path = Field(default_factory=default_db_path)
    # Which namespace a DSH session uses (namespace.for_session). None: the mode the shim passes (the plugin
    # config's namespaceMode, default project); set (env, or the Memory page's settings) it wins over the shim's.
    namespace_mode: Literal["project", "session", "global"] | None = None
    block_turns: int = Field(6, ge=1, le=1000)
    block_decay_lambda: float = Field(0.30, gt=0, le=10)

    model_base_url: str | None = None
    model_api_key: str | None = None
    model: str | None = None
    model_timeout: float = Field(120.0, gt=0)
    model_max_tokens: int = Field(4096, ge=256)
    model_concurrency: int = Field(2, ge=1, le=32)
    host_llm_timeout: float = Field(180.0, gt=0)
    # 'auto': the direct route when model_base_url is set, else the host's model; a block whose model jobs fail gets
    # rule-written views and events meanwhile (marked 'fallback', upgraded when the model answers again).
    # 'none': zero-model mode: L0–L2 and events are written by rule, no model call is ever made.
    model_route: Literal["auto", "none"] = "auto"

    job_max_attempts: int = Field(5, ge=1, le=100)
    job_backoff_base: float = Field(5.0, ge=0)
    job_backoff_cap: float = Field(600.0, ge=0)
    # How often the runner looks for jobs another process (the `stratagate import` CLI) committed: PRAGMA data_version.
    job_watch_interval: float = Field(0.5, gt=0, le=60)
    # Leases of running jobs: the owner refreshes its heartbeat this often; a job whose heartbeat is older than
    # job_lease_timeout (or whose owner's process is dead on this host) is taken back by any sidecar.
    job_heartbeat_interval: float = Field(5.0, gt=0, le=600)
    job_lease_timeout: float = Field(60.0, gt=0, le=86_400)

    # The maintenance job (stratagate/maintenance/): consolidation, graph re-projection, FTS/SQLite optimize. It runs
    # this often, and at start when the newest run is older; 0 = never scheduled (`stratagate maintain` still works).
    maintenance_interval_hours: float = Field(24.0, ge=0, le=24 * 366)

    activation_recent_tokens: int = Field(600, ge=0, le=100_000)
    activation_session_tokens: int = Field(1200, ge=0, le=100_000)
    activation_longterm_tokens: int = Field(900, ge=0, le=900)  # events + graph nodes; 900 is the ceiling

    # The plugin config's `context` object (JSON), as the shim passes it: the context engine's settings under the ones
    # stored by context.settings.set (stratagate/context/settings.py checks it at start-up).
    context_config: str | None = None

    # Optional dense retrieval channel (search/dense.py); used only when its packages are installed.
    dense: bool = True

    max_line_bytes: int = Field(8 * 1024 * 1024, ge=1024)
    # Optional cap on the database size; writes beyond it fail cleanly like a full disk.
    db_max_mb: int | None = Field(None, ge=1)
    # How long opening the database waits for another process's lock before giving up with a clear message.
    db_lock_timeout_s: float = Field(10.0, ge=0, le=3600)

    @model_validator(mode="after")
    def _direct_route_needs_a_model(self) -> Settings:
        if self.model_base_url and not self.model:
            raise ValueError("STRATAGATE_MODEL_BASE_URL is set but STRATAGATE_MODEL (the model name) is not")
        return self

    @property
    def zero_model(self) -> bool:
        """No model call at all: every model-written view and event comes from the rules."""
        return self.model_route == "none"


class SettingsError(ValueError):
    pass


def load_settings(overrides: dict[str, object] | None = None, environ: dict[str, str] | None = None) -> Settings:
    """Build settings from the environment, then apply explicit overrides (CLI flags)."""
    env = os.environ if environ is None else environ
    values: dict[str, object] = {}
    for name in Settings.model_fields:
        raw = env.get("STRATAGATE_" + name.upper())
        if raw is not None and raw != "":
            values[name] = raw
    for key, value in (overrides or {}).items():
        if value is not None:
            values[key] = value
    try:
        return Settings(**values)
    except ValidationError as exc:
        problems = "; ".join(
            (f"STRATAGATE_{'.'.join(str(p) for p in err['loc']).upper()}: " if err["loc"] else "") + err["msg"]
            for err in exc.errors()
        )
        raise SettingsError(f"invalid configuration: {problems}") from exc
