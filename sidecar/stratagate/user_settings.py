"""The plugin's user-editable settings (the Memory page's Settings tab): stored in the database, applied to the
running sidecar without a restart, and re-applied at every start over the environment.

Precedence, lowest first: the field's default ← the environment (``STRATAGATE_*``) and command-line flags ← what the
page stored. A stored value is assigned in place to the App's ``Settings`` object, which every stage reads at use
(capture reads ``block_turns`` per capture, activation its budgets per render, the summary and extraction jobs
``model_route`` per job, ``namespace.for_session`` ``namespace_mode`` per call). Resetting a key (``null``) drops the
stored value: the environment's (or the default) applies again. ``context_mode`` is the context engine's preset and
lives in its own store (``context_settings``, context/settings.py): plugin config ← stored, read at every plan.

Stored as one JSON object in the ``meta`` row ``page_settings``. Another process on the same database (a
``stratagate ui`` next to the DSH sidecar) applies a change only to itself; the other picks it up when it starts.
"""

from __future__ import annotations

import json
import typing
from dataclasses import dataclass, field
from typing import Any, Literal

from annotated_types import Ge, Le
from pydantic import BaseModel, ValidationError

from stratagate.config import Settings
from stratagate.context import settings as context_settings
from stratagate.errors import explain_validation, invalid_params
from stratagate.storage.db import Database
from stratagate.storage.sqlconn import Connection

META_KEY = "page_settings"
APP_FIELDS = (
    "namespace_mode",
    "block_turns",
    "model_route",
    "activation_recent_tokens",
    "activation_session_tokens",
    "activation_longterm_tokens",
)
"""Settings fields the page may change (their bounds are the ``Settings`` field's own)."""
CONTEXT_MODE = "context_mode"
NAMES = (*APP_FIELDS, CONTEXT_MODE)
NAMESPACE_MODE_DEFAULT = "project"  # the shim's own default when the plugin config names none

Source = Literal["default", "env", "page"]


class FieldSpec(BaseModel):
    """How the page renders and checks one setting."""

    name: str
    type: Literal["int", "choice"]
    min: int | None = None
    max: int | None = None
    choices: list[str] | None = None
    default: Any
    source: Source


@dataclass
class Applied:
    """What start-up found: the values before the stored ones were applied (the environment's and the flags'),
    and what is stored now."""

    baseline: dict[str, Any]
    stored: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def of(cls, settings: Settings) -> Applied:
        return cls(baseline={name: getattr(settings, name) for name in APP_FIELDS})


def _choices(annotation: Any) -> list[str]:
    """The values of a Literal field (an optional one too: ``Literal[...] | None``)."""
    if typing.get_origin(annotation) is Literal:
        return [str(a) for a in typing.get_args(annotation)]
    return [c for arg in typing.get_args(annotation) if typing.get_origin(arg) is Literal for c in _choices(arg)]


def _spec(name: str, source: Source) -> FieldSpec:
    info = Settings.model_fields[name]
    if name == "namespace_mode":
        return FieldSpec(name=name, type="choice", choices=_choices(info.annotation), default=NAMESPACE_MODE_DEFAULT,
                         source=source)
    choices = _choices(info.annotation)
    if choices:
        return FieldSpec(name=name, type="choice", choices=choices, default=info.default, source=source)
    low = next((m.ge for m in info.metadata if isinstance(m, Ge)), None)
    high = next((m.le for m in info.metadata if isinstance(m, Le)), None)
    return FieldSpec(name=name, type="int", min=low, max=high, default=info.default, source=source)


async def load(conn: Connection) -> dict[str, Any]:
    row = await (await conn.execute("SELECT value FROM meta WHERE key = ?", (META_KEY,))).fetchone()
    if row is None:
        return {}
    try:
        value = json.loads(row[0])
    except json.JSONDecodeError:
        return {}
    return {k: v for k, v in value.items() if k in APP_FIELDS} if isinstance(value, dict) else {}


async def _save(conn: Connection, stored: dict[str, Any]) -> None:
    await conn.execute(
        "INSERT INTO meta(key, value) VALUES (?, ?) ON CONFLICT(key) DO UPDATE SET value = excluded.value",
        (META_KEY, json.dumps(stored, sort_keys=True)),
    )


def check(settings: Settings, name: str, value: Any) -> Any:
    """``value`` validated as the ``Settings`` field ``name`` (its type and bounds); a 400 naming the field."""
    probe = settings.model_copy()
    try:
        Settings.__pydantic_validator__.validate_assignment(probe, name, value)
    except ValidationError as exc:
        raise invalid_params(f"settings.{explain_validation(exc)}", {"setting": name}) from None
    return getattr(probe, name)


async def apply_at_start(db: Database, settings: Settings) -> Applied:
    """Apply what the page stored over the environment (called once the database is open). A stored value that no
    longer validates (a bound tightened by an upgrade) is skipped, not fatal."""
    applied = Applied.of(settings)
    stored = await load(db.reader)
    for name, value in stored.items():
        try:
            setattr(settings, name, check(settings, name, value))
        except Exception:  # never keep the sidecar from starting over a stale stored setting
            continue
        applied.stored[name] = value
    return applied


async def _context_mode(db: Database, settings: Settings) -> tuple[str, Source]:
    config = context_settings.parse_config(settings.context_config)
    stored = await context_settings.load_stored(db)
    mode = context_settings.effective(config, stored).mode
    return mode, "page" if "mode" in stored else "env" if "mode" in config else "default"


async def snapshot(db: Database, settings: Settings, applied: Applied) -> dict[str, Any]:
    """``{settings, fields}``: the values in effect and how each is edited and where it comes from."""
    values: dict[str, Any] = {}
    specs: list[FieldSpec] = []
    for name in APP_FIELDS:
        value = getattr(settings, name)
        default = Settings.model_fields[name].default
        source: Source = "page" if name in applied.stored else "env" if applied.baseline[name] != default else "default"
        values[name] = NAMESPACE_MODE_DEFAULT if name == "namespace_mode" and value is None else value
        specs.append(_spec(name, source))
    mode, mode_source = await _context_mode(db, settings)
    values[CONTEXT_MODE] = mode
    specs.append(FieldSpec(name=CONTEXT_MODE, type="choice", choices=list(typing.get_args(context_settings.Mode)),
                           default=context_settings.ContextSettings.model_fields["mode"].default, source=mode_source))
    return {"settings": values, "fields": [s.model_dump(exclude_none=True) for s in specs]}


def validate_changes(settings: Settings, changes: dict[str, Any]) -> dict[str, Any]:
    """The changes checked: known names only, each value within its field's bounds (None: reset)."""
    unknown = sorted(k for k in changes if k not in NAMES)
    if unknown:
        raise invalid_params(f"unknown setting {unknown[0]!r} (known: {', '.join(NAMES)})", {"unknown": unknown})
    out: dict[str, Any] = {}
    for name, value in changes.items():
        if value is None:
            out[name] = None
        elif name == CONTEXT_MODE:
            allowed = typing.get_args(context_settings.Mode)
            if value not in allowed:
                raise invalid_params(f"settings.{name}: must be one of {', '.join(allowed)} (got {value!r})",
                                     {"setting": name})
            out[name] = value
        else:
            out[name] = check(settings, name, value)
    return out


async def write(
    conn: Connection, settings: Settings, applied: Applied, changes: dict[str, Any]
) -> tuple[dict[str, Any], dict[str, Any]]:
    """Store validated ``changes`` inside the caller's transaction; ``(before, after)`` of what changed, each
    ``{"settings": {name: value}, "stored": {name: stored value or None}}`` (the undo puts ``before.stored`` back).
    The running settings are assigned by :func:`assign` once the transaction committed."""
    stored = dict(applied.stored)
    before: dict[str, Any] = {"settings": {}, "stored": {}}
    after: dict[str, Any] = {"settings": {}, "stored": {}}
    context_stored = await context_settings.queries.stored_settings(conn)
    for name, value in changes.items():
        if name == CONTEXT_MODE:
            old_stored = context_stored.get("mode")
            if old_stored == value:
                continue
            config = context_settings.parse_config(settings.context_config)
            old_mode = context_settings.effective(config, context_stored).mode
            new_stored = await context_settings.update_stored_in(conn, {"mode": value})
            before["settings"][name], before["stored"][name] = old_mode, old_stored
            after["settings"][name] = context_settings.effective(config, new_stored).mode
            after["stored"][name] = value
            continue
        new = applied.baseline[name] if value is None else value
        old_stored = stored.get(name)
        if old_stored == value and getattr(settings, name) == new:
            continue
        before["settings"][name], before["stored"][name] = getattr(settings, name), old_stored
        after["settings"][name], after["stored"][name] = new, value
        if value is None:
            stored.pop(name, None)
        else:
            stored[name] = value
    await _save(conn, stored)
    return before, after


async def stored_now(conn: Connection, applied: Applied) -> dict[str, Any]:
    """What the page stored for each setting (a key that is not stored is absent)."""
    mode = (await context_settings.queries.stored_settings(conn)).get("mode")
    return {**applied.stored, **({CONTEXT_MODE: mode} if mode is not None else {})}


def assign(settings: Settings, applied: Applied, after: dict[str, Any]) -> None:
    """Apply what :func:`write` stored to the running sidecar: in place, so every stage sees it at its next use."""
    for name, value in after["settings"].items():
        if name in APP_FIELDS:
            setattr(settings, name, value)
    for name, value in after["stored"].items():
        if name not in APP_FIELDS:
            continue
        if value is None:
            applied.stored.pop(name, None)
        else:
            applied.stored[name] = value
