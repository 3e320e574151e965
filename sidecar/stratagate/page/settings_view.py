"""The Memory page's Settings tab: ``page.settings.get`` / ``page.settings.set`` over user_settings.py (stored in the
database, applied to the running sidecar at once, re-applied at start over the environment)."""

from __future__ import annotations

from typing import Any, Literal

from stratagate import user_settings
from stratagate.app import App
from stratagate.page.writes import ACTOR, Params, Written
from stratagate.protocol import method
from stratagate.protocol.types import Empty, Result
from stratagate.storage.db import audit, collect_audit_ids
from stratagate.storage.sqlconn import Connection


class SettingField(user_settings.FieldSpec, Result):
    """user_settings' description of one setting, as a reply (no undeclared key)."""


class SettingsValues(Result):
    namespace_mode: Literal["project", "session", "global"]
    block_turns: int
    model_route: Literal["auto", "none"]
    activation_recent_tokens: int
    activation_session_tokens: int
    activation_longterm_tokens: int
    context_mode: Literal["cost", "quality", "custom"]


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
