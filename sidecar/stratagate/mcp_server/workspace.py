"""Which namespace an MCP connection reads and writes: the folder it works in, keyed exactly as a DSH session in that
folder is (``namespaces.resolve``, mode ``project``), so one folder has one project memory whichever agent works in it.

The folder is ``--project DIR`` if given, else the first ``file://`` root the client declares (MCP ``roots/list``),
else the server's current directory. A namespace mode of ``global`` set for the database (the Memory page or
``STRATAGATE_NAMESPACE_MODE``) applies here too, as it does to DSH sessions.
"""

from __future__ import annotations

import logging
import os
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from urllib.parse import unquote, urlsplit

from stratagate.namespaces import ResolveParams, resolve

log = logging.getLogger("stratagate.mcp")

ROOTS_TIMEOUT_S = 10.0
"""How long a ``roots/list`` request to the client may take before the folder falls back."""


def root_folder(uri: str) -> str | None:
    """The absolute local path of a ``file://`` root URI (None for another scheme or a remote host)."""
    parts = urlsplit(uri)
    if parts.scheme != "file" or parts.netloc not in ("", "localhost"):
        return None
    path = unquote(parts.path)
    return path if path and os.path.isabs(path) else None


@dataclass(frozen=True)
class Workspace:
    """A connection's namespace and where it came from (said once in the log)."""

    namespace: str
    folder: str
    source: str


def workspace_of(folder: str, source: str, namespace_mode: str | None) -> Workspace:
    if namespace_mode == "global":
        return Workspace(resolve(ResolveParams(mode="global"))["namespace"], folder, "namespace mode global")
    return Workspace(resolve(ResolveParams(mode="project", cwd=os.path.abspath(folder)))["namespace"], folder, source)


@dataclass
class Connection:
    """One MCP client connection: its tool-call session (evidence batches and use receipts are per session) and its
    workspace, looked up with its first call and again after the client says its roots changed."""

    session: str = field(default_factory=lambda: f"mcp-{uuid.uuid4().hex[:12]}")
    workspace: Workspace | None = None


class Connections:
    """Per-connection state: one for stdio, one per ``Mcp-Session-Id`` over Streamable HTTP."""

    def __init__(self, project: str | None, namespace_mode: Callable[[], str | None]) -> None:
        self.project = project
        self.namespace_mode = namespace_mode
        self._by_key: dict[str, Connection] = {}

    def of(self, key: str) -> Connection:
        return self._by_key.setdefault(key, Connection())

    def roots_changed(self, key: str) -> None:
        if key in self._by_key:
            self._by_key[key].workspace = None

    def choose(self, roots: list[str] | None) -> Workspace:
        """The workspace from ``--project``, else the first usable root, else the current directory."""
        mode = self.namespace_mode()  # read at each choice: the Memory page can change it while this runs
        if self.project is not None:
            return workspace_of(self.project, "--project", mode)
        for uri in roots or []:
            folder = root_folder(uri)
            if folder is not None:
                return workspace_of(folder, "the client's first root", mode)
        return workspace_of(os.getcwd(), "the current directory (no --project, no root from the client)", mode)
