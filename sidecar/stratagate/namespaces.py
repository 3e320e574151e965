"""Which memory space a DSH session writes to and reads from.

project (default): one space per working directory, derived from its resolved path. The path is hashed
as-is (case preserved: /Repo and /repo are different folders on case-sensitive filesystems).
session: one space per session. global: one named space shared everywhere.
"""

from __future__ import annotations

import hashlib
import os
import re
from typing import Literal

from pydantic import BaseModel, ConfigDict, model_validator

from stratagate.capture.models import Name

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
