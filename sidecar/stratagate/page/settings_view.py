"""The Memory page's Settings tab: ``page.settings.get`` / ``page.settings.set`` over user_settings.py (stored in the
database, applied to the running sidecar at once, re-applied at start over the environment), and the context engine's
own settings (``page.context_settings.get`` / ``.set``, the store ``context.settings.*`` uses)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from pydantic import Field, create_model

from stratagate import user_settings
from stratagate.app import App
from stratagate.context.settings import PRESETS, ContextSettings, effective, load_stored, parse_config, update_stored
from stratagate.page.writes import ACTOR, Params, Written
from stratagate.protocol import method
from stratagate.protocol.types import Empty, Result
from stratagate.settings_table import without_none
from stratagate.storage.db import audit, collect_audit_ids
from stratagate.storage.sqlite import Connection


class SettingField(user_settings.FieldSpec, Result):
    """user_settings' description of one setting, as a reply (no undeclared key)."""


def values_model(settings_cls: type[user_settings.Settings] = user_settings.Settings) -> type[Result]:
    """The reply's ``settings``: one key per page row of the settings table, typed as the row (an unset value reads
    as the plugin option's default; null only for a setting that has none)."""
    fields: dict[str, Any] = {}
    for r in user_settings.page_rows(settings_cls):
        base = without_none(r.annotation)[0]
        fields[r.name] = (base | None if r.plugin_default is None else base, ...)  # no default (the team's): null
    return create_model("SettingsValues", __base__=Result, **fields)


if TYPE_CHECKING:
    SettingsValues = Result
else:
    SettingsValues = values_model()


class SettingsResult(Result):
    settings: SettingsValues
    fields: list[SettingField]


class SettingsSetParams(Params):
    settings: dict[str, Any]


class SettingsSetResult(SettingsResult, Written):
    pass


@method("page.settings.get", params=Empty, result=SettingsResult, http="GET /settings")
async def settings_get(app: App, p: Empty) -> dict[str, Any]:
    """The plugin's user-editable settings, how each is edited and where its value comes from."""
    return await user_settings.snapshot(app.db, app.settings, app.user_settings)


async def change_settings(conn: Connection, app: App, changes: dict[str, Any]) -> dict[str, Any] | None:
    """Validate and store ``changes`` inside the caller's transaction with their ``settings.changed`` entry; what
    :func:`user_settings.assign` applies after the commit (None: nothing changed, nothing audited)."""
    valid = user_settings.validate_changes(app.settings, changes)
    before, after = await user_settings.write(conn, app.settings, app.user_settings, valid)
    if not after["settings"]:
        return None
    # (The audit shows a team DSN without its password: the environment's may hold one.)
    await audit(conn, None, ACTOR, "settings.changed", "settings", "page", user_settings.for_audit(before),
                user_settings.for_audit(after))
    return after


@method("page.settings.set", params=SettingsSetParams, result=SettingsSetResult, http="POST /settings")
async def settings_set(app: App, p: SettingsSetParams) -> dict[str, Any]:
    """Change any subset of the settings (``null`` resets one); applied without a restart."""
    with collect_audit_ids() as audit_ids:
        async with app.db.transaction() as conn:
            after = await change_settings(conn, app, p.settings)
        if after is not None:
            user_settings.assign(app.settings, app.user_settings, after)
            await app.settings_changed(after)
    return await user_settings.snapshot(app.db, app.settings, app.user_settings) | {"audit_ids": audit_ids}


# --- the context engine's settings (the page's "Context window" and "Advanced" groups) -------------------------------


class ContextSettingsResult(Result):
    settings: ContextSettings
    presets: dict[str, dict[str, Any]] = Field(description="what each mode sets over the defaults")


class ContextSettingsSetParams(Params):
    settings: dict[str, Any] = Field(description="any subset (snake_case keys); null resets a key to its default")


async def _context_snapshot(app: App) -> dict[str, Any]:
    current = effective(parse_config(app.settings.context_config), await load_stored(app.db))
    return {"settings": current.model_dump(), "presets": PRESETS}


@method("page.context_settings.get", params=Empty, result=ContextSettingsResult, http="GET /context-settings")
async def context_settings_get(app: App, p: Empty) -> dict[str, Any]:
    """The context engine's effective settings (what ``context.settings.get`` answers), for the Settings tab."""
    return await _context_snapshot(app)


@method("page.context_settings.set", params=ContextSettingsSetParams, result=ContextSettingsResult,
        http="POST /context-settings")
async def context_settings_set(app: App, p: ContextSettingsSetParams) -> dict[str, Any]:
    """Change the context engine's settings (``context.settings.set``'s store); the next plan reads them."""
    await update_stored(app.db, p.settings)
    return await _context_snapshot(app)
