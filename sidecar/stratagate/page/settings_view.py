"""The Memory page's Settings tab: ``page.settings.get`` / ``page.settings.set`` over user_settings.py (stored in the
database, applied to the running sidecar at once, re-applied at start over the environment)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from pydantic import create_model

from stratagate import user_settings
from stratagate.app import App
from stratagate.page.writes import ACTOR, Params, Written
from stratagate.protocol import method
from stratagate.protocol.types import Empty, Result
from stratagate.settings_table import without_none
from stratagate.storage.db import audit, collect_audit_ids
from stratagate.storage.sqlite import Connection


class SettingField(user_settings.FieldSpec, Result):
    """user_settings' description of one setting, as a reply (no undeclared key)."""


def values_model(settings_cls: type[user_settings.Settings] = user_settings.Settings) -> type[Result]:
    """The reply's ``settings``: one key per page row of the settings table, typed as the row (never null: an unset
    value reads as the plugin option's default)."""
    rows = user_settings.page_rows(settings_cls)
    fields: dict[str, Any] = {r.name: (without_none(r.annotation)[0], ...) for r in rows}
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
    await audit(conn, None, ACTOR, "settings.changed", "settings", "page", before, after)
    return after


@method("page.settings.set", params=SettingsSetParams, result=SettingsSetResult, http="POST /settings")
async def settings_set(app: App, p: SettingsSetParams) -> dict[str, Any]:
    """Change any subset of the settings (``null`` resets one); applied without a restart."""
    with collect_audit_ids() as audit_ids:
        async with app.db.transaction() as conn:
            after = await change_settings(conn, app, p.settings)
        if after is not None:
            user_settings.assign(app.settings, app.user_settings, after)
    return await user_settings.snapshot(app.db, app.settings, app.user_settings) | {"audit_ids": audit_ids}
