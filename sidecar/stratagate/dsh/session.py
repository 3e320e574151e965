"""Which namespace a DSH session uses: the plugin's mode applied to the session, with the fallback decided here.

A session without a usable working directory (none, blank, or not absolute) in ``project`` mode falls back to its
own session namespace rather than guessing a folder, so memories never leak between projects.
"""

from __future__ import annotations

import os
from typing import Literal

from pydantic import BaseModel, ConfigDict

from stratagate.capture.models import Name
from stratagate.namespaces import ResolveParams, resolve


class SessionNamespaceParams(BaseModel):
    model_config = ConfigDict(extra="forbid")

    mode: Literal["project", "session", "global"] = "project"
    session: Name
    cwd: str | None = None
    name: Name | None = None


class SessionNamespace(BaseModel):
    namespace: str
    mode: Literal["project", "session", "global"]
    label: str
    fallback: bool = False


def session_namespace(p: SessionNamespaceParams) -> SessionNamespace:
    if p.mode == "global":
        return SessionNamespace(**resolve(ResolveParams(mode="global", name=p.name or "default")))
    if p.mode == "project":
        cwd = p.cwd.strip() if isinstance(p.cwd, str) else ""
        if cwd and "\x00" not in cwd and os.path.isabs(cwd):
            return SessionNamespace(**resolve(ResolveParams(mode="project", cwd=p.cwd)))
        return SessionNamespace(**resolve(ResolveParams(mode="session", session=p.session)), fallback=True)
    return SessionNamespace(**resolve(ResolveParams(mode="session", session=p.session)))
