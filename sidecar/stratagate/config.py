"""Sidecar settings: defaults, overridden by STRATAGATE_* environment variables, overridden by flags. The settings
themselves (names, types, bounds, defaults, env variables) are declared once, in settings_table.py."""

from __future__ import annotations

import os

from pydantic import ValidationError

from stratagate.settings_table import Settings, default_db_path, env_names

__all__ = ["Settings", "SettingsError", "default_db_path", "load_settings"]


class SettingsError(ValueError):
    pass


def load_settings(overrides: dict[str, object] | None = None, environ: dict[str, str] | None = None) -> Settings:
    """Build settings from the environment, then apply explicit overrides (CLI flags)."""
    env = os.environ if environ is None else environ
    variables = env_names(Settings)
    values: dict[str, object] = {}
    for name, variable in variables.items():
        raw = env.get(variable)
        if raw is not None and raw != "":
            values[name] = raw
    for key, value in (overrides or {}).items():
        if value is not None:
            values[key] = value
    try:
        return Settings.model_validate(values)
    except ValidationError as exc:
        problems = "; ".join(
            (f"{variables.get(str(err['loc'][0]), str(err['loc'][0]).upper())}: " if err["loc"] else "") + err["msg"]
            for err in exc.errors()
        )
        raise SettingsError(f"invalid configuration: {problems}") from exc
