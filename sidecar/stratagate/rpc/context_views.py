"""JSON-RPC methods of the context engine's views: ``context.status`` (the composer dock and the settings page) and
``context.command`` (the ``/memory`` slash command). The planner's methods (context.plan, context.landed, settings)
live in rpc/context.py."""

from __future__ import annotations

from typing import TYPE_CHECKING

from stratagate.context.command import CommandParams, CommandResult, run_command
from stratagate.context.queries_views import session_keys
from stratagate.context.status import StatusParams, StatusResult, context_status
from stratagate.protocol import method
from stratagate.rpc.context import current_settings

if TYPE_CHECKING:
    from stratagate.app import App


@method("context.status", params=StatusParams, result=StatusResult)
async def status(app: App, p: StatusParams) -> StatusResult:
    keys = await session_keys(app.db, p.namespace, p.session)
    return await context_status(app.db, p.session, keys, await current_settings(app), detail=p.detail, lang=p.lang)


@method("context.command", params=CommandParams, result=CommandResult)
async def command(app: App, p: CommandParams) -> CommandResult:
    keys = await session_keys(app.db, p.namespace, p.session)
    settings = await current_settings(app)
    return await run_command(app.db, keys, p, settings, app.recalls, app.settings.block_decay_lambda)
