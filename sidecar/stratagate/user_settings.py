"""The plugin's user-editable settings (the Memory page's Settings tab): stored in the database, applied to the
running sidecar without a restart, and re-applied at every start over the environment.

Precedence, lowest first: the field's default ← the environment (``STRATAGATE_*``) and command-line flags ← what the
page stored. A stored value is assigned in place to the App's ``Settings`` object, which every stage reads at use
(capture reads ``block_turns`` per capture, activation its budgets per render, the summary and extraction jobs
``model_route`` per job, ``namespace.for_session`` ``namespace_mode`` per call). Resetting a key (``null``) drops the
stored value: the environment's (or the default) applies again. ``context_mode`` is the context engine's preset and
lives in its own store (``context_settings``, context/settings.py): plugin config ← stored, read at every plan.

Which settings the page edits, their bounds, labels and help (English and Chinese) are the rows of settings_table.py
with a page label: a ``Settings`` row is assigned in place as above; a ``ContextPage`` row (``context_<key>``) is the
context engine's ``<key>``, stored by the engine.

Stored as one JSON object in the ``meta`` row ``page_settings``. Another process on the same database (a
``stratagate ui`` next to the DSH sidecar) applies a change only to itself; the other picks it up when it starts.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any, Literal

from pydantic import BaseModel, ValidationError

from stratagate.config import Settings
from stratagate.context import settings as context_settings
from stratagate.errors import Invalid, explain_validation
from stratagate.safety.dsn import has_password, masked
from stratagate.settings_table import ContextPage, Row, Text, rows_of
from stratagate.storage.db import Database
from stratagate.storage.sqlite import Connection

META_KEY = "page_settings"
TEAM_FIELDS = ("team_dsn", "team_member")
"""The page settings that turn team memory on or off: the App restarts its sync when one changes (App.restart_team)."""
CONTEXT_PREFIX = "context_"
"""A page row of the context group names the context engine's key after this prefix (``context_mode`` → ``mode``)."""

Source = Literal["default", "env", "page"]


def page_rows(settings_cls: type[Settings] = Settings) -> list[Row]:
    """The settings the page edits, in the table's order: the rows with a page label (settings_table.py)."""
    return [r for r in rows_of(settings_cls, "sidecar") + rows_of(ContextPage, "context") if r.page is not None]


def app_fields(settings: Settings | type[Settings] = Settings) -> tuple[str, ...]:
    """The ``Settings`` fields the page may change (their bounds are the field's own)."""
    cls = settings if isinstance(settings, type) else type(settings)
    return tuple(r.name for r in page_rows(cls) if r.scope == "sidecar")


def context_fields() -> dict[str, str]:
    """Page setting → the context engine's key (stored by context/settings.py)."""
    return {r.name: r.name.removeprefix(CONTEXT_PREFIX) for r in page_rows() if r.scope == "context"}


APP_FIELDS = app_fields()


class FieldSpec(BaseModel):
    """How the page renders and checks one setting; its label and help in English and Chinese."""

    name: str
    type: Literal["int", "choice", "string"]
    min: int | None = None
    max: int | None = None
    choices: list[str] | None = None
    default: Any = None  # (absent from the reply when there is none: the team database)
    source: Source
    label: Text
    help: Text


@dataclass
class Applied:
    """What start-up found: the values before the stored ones were applied (the environment's and the flags'),
    and what is stored now."""

    baseline: dict[str, Any]
    stored: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def of(cls, settings: Settings) -> Applied:
        return cls(baseline={name: getattr(settings, name) for name in app_fields(settings)})


def _spec(r: Row, source: Source) -> FieldSpec:
    assert r.page is not None
    common: dict[str, Any] = {"name": r.name, "default": r.plugin_default, "source": source, "label": r.page,
                              "help": r.help}
    if r.choices:
        return FieldSpec(type="choice", choices=r.choices, **common)
    if r.type == "string":
        return FieldSpec(type="string", **common)
    if r.type != "int":
        raise TypeError(f"the page edits int, choice and string settings only: {r.name} is {r.type}")
    low = None if r.minimum is None else int(r.minimum) + (1 if r.exclusive_minimum else 0)
    high = None if r.maximum is None else int(r.maximum) - (1 if r.exclusive_maximum else 0)
    return FieldSpec(type="int", min=low, max=high, **common)


async def load(conn: Connection, names: tuple[str, ...] = APP_FIELDS) -> dict[str, Any]:
    row = await (await conn.execute("SELECT value FROM meta WHERE key = ?", (META_KEY,))).fetchone()
    if row is None:
        return {}
    try:
        value = json.loads(row[0])
    except json.JSONDecodeError:
        return {}
    return {k: v for k, v in value.items() if k in names} if isinstance(value, dict) else {}


async def _save(conn: Connection, stored: dict[str, Any]) -> None:
    await conn.execute(
        "INSERT INTO meta(key, value) VALUES (?, ?) ON CONFLICT(key) DO UPDATE SET value = excluded.value",
        (META_KEY, json.dumps(stored, sort_keys=True)),
    )


def check(settings: Settings, name: str, value: Any) -> Any:
    """``value`` validated as the ``Settings`` field ``name`` (its type and bounds); a 400 naming the field."""
    probe = settings.model_copy()
    try:
        type(settings).__pydantic_validator__.validate_assignment(probe, name, value)
    except ValidationError as exc:
        raise Invalid(f"settings.{explain_validation(exc)}", {"setting": name}) from None
    return getattr(probe, name)


def _check_context(name: str, key: str, value: Any) -> Any:
    """``value`` validated as the context engine's ``key`` (context/settings.py); a 400 naming the page setting."""
    try:
        context_settings.ContextSettings.__pydantic_validator__.validate_assignment(
            context_settings.ContextSettings.model_construct(), key, value)
    except ValidationError as exc:
        raise Invalid(f"settings.{name}: {exc.errors()[0]['msg']} (got {value!r})", {"setting": name}) from None
    return value


async def apply_at_start(db: Database, settings: Settings) -> Applied:
    """Apply what the page stored over the environment (called once the database is open). A stored value that no
    longer validates (a bound tightened by an upgrade) is skipped, not fatal."""
    applied = Applied.of(settings)
    stored = await load(db.reader, app_fields(settings))
    for name, value in stored.items():
        try:
            setattr(settings, name, check(settings, name, value))
        except Exception:  # never keep the sidecar from starting over a stale stored setting
            continue
        applied.stored[name] = value
    return applied


async def _context_values(db: Database, settings: Settings) -> dict[str, tuple[Any, Source]]:
    config = context_settings.parse_config(settings.context_config)
    stored = await context_settings.load_stored(db)
    current = context_settings.effective(config, stored)
    return {
        name: (getattr(current, key), "page" if key in stored else "env" if key in config else "default")
        for name, key in context_fields().items()
    }


async def snapshot(db: Database, settings: Settings, applied: Applied) -> dict[str, Any]:
    """``{settings, fields}``: the values in effect and how each is edited and where it comes from."""
    values: dict[str, Any] = {}
    specs: list[FieldSpec] = []
    context = await _context_values(db, settings)
    fields = type(settings).model_fields
    for r in page_rows(type(settings)):
        if r.scope == "context":
            values[r.name], source = context[r.name]
        else:
            value = getattr(settings, r.name)
            default = fields[r.name].default
            source = "page" if r.name in applied.stored else "env" if applied.baseline[r.name] != default else "default"
            # None: the plugin option's default applies (namespace_mode: the shim's mode, project by default).
            values[r.name] = r.plugin_default if value is None else shown_value(r.name, value)
        specs.append(_spec(r, source))
    return {"settings": values, "fields": [s.model_dump(exclude_none=True) for s in specs]}


def validate_changes(settings: Settings, changes: dict[str, Any]) -> dict[str, Any]:
    """The changes checked: known names only, each value within its field's bounds (None: reset)."""
    names = [r.name for r in page_rows(type(settings))]
    context = context_fields()
    unknown = sorted(k for k in changes if k not in names)
    if unknown:
        raise Invalid(f"unknown setting {unknown[0]!r} (known: {', '.join(names)})", {"unknown": unknown})
    out: dict[str, Any] = {}
    probe = settings.model_copy()  # one probe: settings checked together (a team database needs a member)
    for name in sorted(changes, key=lambda n: n == "team_dsn"):
        value = changes[name]
        if isinstance(value, str) and name in TEAM_FIELDS:
            value = value.strip() or None  # an emptied field resets the setting
        if name == "team_dsn" and value is not None and has_password(value):
            raise Invalid("settings.team_dsn: the page never stores a password (memory.db holds no credential): "
                          "give the DSN without it and put the password in ~/.pgpass or PGPASSWORD, or set "
                          "STRATAGATE_TEAM_DSN / the plugin's teamDsn", {"setting": name})
        if value is None:
            out[name] = None  # a reset: the environment's value (or none) applies again
        elif name in context:
            out[name] = _check_context(name, context[name], value)
        else:
            out[name] = check(probe, name, value)
            setattr(probe, name, out[name])
    return out


def shown_value(name: str, value: Any) -> Any:
    """A setting's value as the page and the audit show it: a team DSN without its password."""
    return masked(value) if name == "team_dsn" and isinstance(value, str) else value


def for_audit(change: dict[str, Any]) -> dict[str, Any]:
    """A ``{settings, stored}`` change record with every DSN shown without its password (the stored ones never
    hold one; the environment's may)."""
    return {part: {k: shown_value(k, v) for k, v in values.items()} for part, values in change.items()}


async def _write_context(
    conn: Connection, settings: Settings, changes: dict[str, Any], before: dict[str, Any],
    after: dict[str, Any]
) -> None:
    """The context engine's page settings: stored by the engine (context_settings), in the caller's transaction."""
    context_stored = await context_settings.queries.stored_settings(conn)
    config = context_settings.parse_config(settings.context_config)
    for name, key in context_fields().items():
        if name not in changes or context_stored.get(key) == changes[name]:
            continue
        old = getattr(context_settings.effective(config, context_stored), key)
        before["settings"][name], before["stored"][name] = old, context_stored.get(key)
        context_stored = await context_settings.update_stored_in(conn, {key: changes[name]})
        after["settings"][name] = getattr(context_settings.effective(config, context_stored), key)
        after["stored"][name] = changes[name]


async def write(
    conn: Connection, settings: Settings, applied: Applied, changes: dict[str, Any]
) -> tuple[dict[str, Any], dict[str, Any]]:
    """Store validated ``changes`` inside the caller's transaction; ``(before, after)`` of what changed, each
    ``{"settings": {name: value}, "stored": {name: stored value or None}}`` (the undo puts ``before.stored`` back).
    The running settings are assigned by :func:`assign` once the transaction committed."""
    stored = dict(applied.stored)
    before: dict[str, Any] = {"settings": {}, "stored": {}}
    after: dict[str, Any] = {"settings": {}, "stored": {}}
    context = context_fields()
    for name, value in changes.items():
        if name in context:
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
    await _write_context(conn, settings, changes, before, after)
    await _save(conn, stored)
    return before, after


async def stored_now(conn: Connection, applied: Applied) -> dict[str, Any]:
    """What the page stored for each setting (a key that is not stored is absent)."""
    context_stored = await context_settings.queries.stored_settings(conn)
    context = {name: context_stored[key] for name, key in context_fields().items() if key in context_stored}
    return {**applied.stored, **context}


def assign(settings: Settings, applied: Applied, after: dict[str, Any]) -> None:
    """Apply what :func:`write` stored to the running sidecar: in place, so every stage sees it at its next use."""
    fields = app_fields(settings)
    for name, value in after["settings"].items():
        if name in fields:
            setattr(settings, name, value)
    for name, value in after["stored"].items():
        if name not in fields:
            continue
        if value is None:
            applied.stored.pop(name, None)
        else:
            applied.stored[name] = value
