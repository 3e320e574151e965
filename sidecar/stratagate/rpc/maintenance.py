"""JSON-RPC handlers of system.stats, maintenance.run and events.unmerge (registered with ``@method``): admin views
over the whole database, like system.info; the work is in stratagate/maintenance/."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from stratagate.maintenance import consolidate, stats
from stratagate.maintenance.run import dry_run
from stratagate.protocol import method
from stratagate.protocol.params import Empty, MaintenanceRunParams, UnmergeParams
from stratagate.protocol.results import MaintenanceRunResult, StatsResult, UnmergeResult

if TYPE_CHECKING:
    from stratagate.app import App


@method("system.stats", params=Empty, result=StatsResult)
async def system_stats(app: App, _: Empty) -> dict[str, Any]:
    return await stats.report(app.db.reader, app.settings.db, app.settings.maintenance_interval_hours)


@method("maintenance.run", params=MaintenanceRunParams, result=MaintenanceRunResult)
async def maintenance_run(app: App, p: MaintenanceRunParams) -> dict[str, Any]:
    if p.dry_run:
        return await dry_run(app.db.reader, app.settings)
    return await app.maintenance.run_pass("manual", "user")


@method("events.unmerge", params=UnmergeParams, result=UnmergeResult)
async def events_unmerge(app: App, p: UnmergeParams) -> dict[str, Any]:
    return await consolidate.unmerge_event(app.db, p.id, p.namespace, "user")
