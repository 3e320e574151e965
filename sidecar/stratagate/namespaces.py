"""Which memory space a DSH session writes to and reads from.

project (default): one space per working directory, derived from its resolved path. The path is hashed
as-is (case preserved: /Repo and /repo are different folders on case-sensitive filesystems).
session: one space per session. global: one named space shared everywhere.

Each namespace also has settings of its own (``namespaces`` columns): ``user_tier``, whether it shares its
user-scope events with the other namespaces of the database and sees theirs (events/visibility.py).
"""

from __future__ import annotations

import hashlib
import os
import re
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, model_validator

from stratagate.capture.models import Name
from stratagate.storage import lookup
from stratagate.storage.db import Actor, Database, audit

_UNSAFE = re.compile(r"[\x00-\x1f\x7f:]+")


class ResolveParams(BaseModel):
    model_config = ConfigDict(extra="forbid")

    mode: Literal["project", "session", "global"] = "project"
    cwd: str | None = None
    session: Name | None = None
    name: Name | None = None

    @model_validator(mode="after")
    def _needs(self) -> ResolveParams:
        if self.mode == "project" and not (self.cwd and os.path.isabs(self.cwd)):
            raise ValueError("mode 'project' needs cwd, an absolute path")
        if self.mode == "session" and not self.session:
            raise ValueError("mode 'session' needs session")
        return self


def resolve(p: ResolveParams) -> dict[str, str]:
    if p.mode == "project":
        assert p.cwd is not None
        real = os.path.realpath(p.cwd)
        digest = hashlib.sha256(real.encode("utf-8", "surrogateescape")).hexdigest()[:16]
        base = _UNSAFE.sub("_", os.path.basename(real.rstrip(os.sep)) or os.sep)[:64]
        return {"namespace": f"project:{base}:{digest}", "mode": "project", "label": real}
    if p.mode == "session":
        assert p.session is not None
        return {"namespace": f"session:{p.session}", "mode": "session", "label": p.session}
    name = p.name or "default"
    return {"namespace": f"global:{name}", "mode": "global", "label": name}


# --- a namespace's own settings -----------------------------------------------------------------------------------


async def settings_of(db: Database, name: str) -> dict[str, Any]:
    """``{namespace, user_tier, exists}``: a namespace without a row has the defaults (user tier on)."""
    ns = await lookup.namespace_key(db.reader, name)
    tier = await lookup.namespace_user_tier(db.reader, ns) if ns is not None else None
    return {"namespace": name, "user_tier": True if tier is None else tier, "exists": ns is not None}


async def set_user_tier(db: Database, name: str, on: bool, actor: Actor) -> dict[str, Any]:
    """Opt the namespace in or out of the user tier (events/visibility.py); creates its row if it has none yet, so
    a project can opt out before its first turn. The change is audited."""
    async with db.transaction() as conn:
        ns = await lookup.ensure_namespace(conn, name)
        changed = await lookup.set_namespace_user_tier(conn, ns, on)
        if changed:
            await audit(conn, ns, actor, "namespace.settings_changed", "namespace", name,
                        {"user_tier": not on}, {"user_tier": on})
    return {"namespace": name, "user_tier": on, "exists": True, "changed": changed}
