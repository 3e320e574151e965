"""RPC methods of the context engine (stratagate/context/): the shim reports a session's surface and applies the
replacements the sidecar plans. ``context.plan`` / ``context.landed`` / ``context.settings.get|set`` here; the
status and ``/memory`` methods sit beside them. See docs/protocol.md."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, ConfigDict, Field

from stratagate.context import plan as planner
from stratagate.context.landing import landed
from stratagate.context.models import LandedParams, LandedResult, PlanParams, PlanResult
from stratagate.context.settings import ContextSettings, effective, load_stored, parse_config, update_stored
from stratagate.protocol import method
from stratagate.protocol.types import Empty
from stratagate.tokens import count_tokens

if TYPE_CHECKING:
    from stratagate.app import App


class SettingsSetParams(BaseModel):
    model_config = ConfigDict(extra="forbid")

    settings: dict[str, Any] = Field(
        description="Any subset of the settings (camelCase or snake_case keys); null resets a key to its default."
    )


class SettingsResult(ContextSettings):
    """The effective settings (preset ← plugin config ← stored)."""


async def current_settings(app: App) -> ContextSettings:
    """Read at every plan: a change on the settings page applies without a restart."""
    return effective(parse_config(app.settings.context_config), await load_stored(app.db))


@method("context.plan", params=PlanParams, result=PlanResult)
async def context_plan(app: App, p: PlanParams) -> PlanResult:
    if app.tokens_ready is not None:
        await app.tokens_ready
    settings = await current_settings(app)
    return await planner.plan(app.db, p, settings, count_tokens, app.settings.block_decay_lambda)


@method("context.landed", params=LandedParams, result=LandedResult)
async def context_landed(app: App, p: LandedParams) -> LandedResult:
    return await landed(app.db, p)


@method("context.settings.get", params=Empty, result=SettingsResult)
async def settings_get(app: App, p: Empty) -> dict[str, Any]:
    return (await current_settings(app)).model_dump()


@method("context.settings.set", params=SettingsSetParams, result=SettingsResult)
async def settings_set(app: App, p: SettingsSetParams) -> dict[str, Any]:
    await update_stored(app.db, p.settings)
    return (await current_settings(app)).model_dump()
