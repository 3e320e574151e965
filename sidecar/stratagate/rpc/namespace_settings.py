"""``namespace.settings.get`` / ``namespace.settings.set``: a namespace's own settings. Today one: ``user_tier``
(events/visibility.py), whether the namespace shares its user-scope events with the other namespaces of this
database and sees theirs. Setting it creates the namespace row if it has none yet (opting out before the first
turn is stored), and the change is audited (actor ``user``: the host's settings; ``stratagate tier`` is the same
for the command line). The logic is ``namespaces.py``'s."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, ConfigDict, Field

from stratagate import namespaces
from stratagate.protocol import method
from stratagate.protocol.types import Name, Result

if TYPE_CHECKING:
    from stratagate.app import App


class NamespaceSettingsGetParams(BaseModel):
    model_config = ConfigDict(extra="forbid")

    namespace: Name


class NamespaceSettingsSetParams(BaseModel):
    model_config = ConfigDict(extra="forbid")

    namespace: Name
    user_tier: bool = Field(
        description="true (default): share this namespace's user-scope events with the other namespaces of the "
        "database and see theirs; false: neither."
    )


class NamespaceSettingsResult(Result):
    namespace: str
    user_tier: bool
    exists: bool
    changed: bool | None = None


@method("namespace.settings.get", params=NamespaceSettingsGetParams, result=NamespaceSettingsResult)
async def settings_get(app: App, p: NamespaceSettingsGetParams) -> dict[str, Any]:
    return await namespaces.settings_of(app.db, p.namespace)


@method("namespace.settings.set", params=NamespaceSettingsSetParams, result=NamespaceSettingsResult)
async def settings_set(app: App, p: NamespaceSettingsSetParams) -> dict[str, Any]:
    return await namespaces.set_user_tier(app.db, p.namespace, p.user_tier, "user")
