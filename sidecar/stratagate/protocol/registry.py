"""The protocol table: every JSON-RPC method and every agent tool, each name bound to its params model, its result
model and its handler, registered by one mechanism (``@method`` / ``@tool``).

Handlers register where they are written (rpc/ for methods, tools/ for tools), so the table is complete once
``stratagate.rpc.methods.load_all_methods()`` has run (the server imports each handler module with its first call)
and ``stratagate.tools`` (which imports every tool module, in tools.list order) is imported.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterator
from dataclasses import dataclass
from typing import Any, Literal, TypeVar

from pydantic import BaseModel

from stratagate.tool_schema import tool_parameters

Handler = Callable[[Any, Any], Awaitable[Any]]
H = TypeVar("H", bound=Handler)


@dataclass(frozen=True)
class Entry:
    """One method or tool: ``handler(context, params)`` takes a validated ``params`` model and returns what
    ``result`` validates (a dict or the model itself). Tools flagged ``evidence`` record a retrieval batch of what
    their result shows (evidence/batches.py wraps them when the tool table is built)."""

    kind: Literal["method", "tool"]
    name: str
    params: type[BaseModel]
    result: type[BaseModel]
    handler: Handler
    description: str = ""
    evidence: bool = False
    verbatim: tuple[str, ...] = ()
    """Top-level result fields passed to the model unchanged (the rendering rule applies to every other field):
    only for text the model already saw in this very session (``decompress`` restoring its own history)."""
    http: tuple[str, str] | None = None
    """For the Memory page's methods: ``(HTTP method, path)`` under ``/api/stratagate/memory``, e.g.
    ``("GET", "/events")``. ``page.request`` (page/dispatch.py) finds the method by it: one table serves JSON-RPC,
    the DSH route and the standalone viewer alike."""

    def spec(self) -> dict[str, Any]:
        """The tool's JSON Schema spec for tools.list (its $refs inlined: some providers reject $defs)."""
        parameters = tool_parameters(self.params)
        parameters.pop("title", None)
        return {"name": self.name, "description": self.description, "parameters": parameters}


class Table:
    """Entries of one kind in registration order (for tools, the tools.list order)."""

    def __init__(self, kind: Literal["method", "tool"]) -> None:
        self.kind = kind
        self._entries: dict[str, Entry] = {}

    def add(self, entry: Entry) -> Entry:
        if entry.kind != self.kind:
            raise TypeError(f"{entry.name} is a {entry.kind}, not a {self.kind}")
        if entry.name in self._entries and self._entries[entry.name].handler is not entry.handler:
            raise ValueError(f"{self.kind} {entry.name!r} is registered twice")
        self._entries[entry.name] = entry
        return entry

    def get(self, name: str) -> Entry | None:
        return self._entries.get(name)

    def __iter__(self) -> Iterator[Entry]:
        return iter(list(self._entries.values()))

    def __contains__(self, name: object) -> bool:
        return name in self._entries

    def names(self) -> list[str]:
        return list(self._entries)


METHOD_TABLE = Table("method")
"""Every JSON-RPC method (host → sidecar)."""
TOOL_TABLE = Table("tool")
"""Every agent tool (called through ``tools.call``)."""


def method(
    name: str, *, params: type[BaseModel], result: type[BaseModel], http: str | None = None
) -> Callable[[H], H]:
    """Register ``handler(app, params)`` as the JSON-RPC method ``name``; ``http="GET /events"`` also binds it to
    that Memory page route (GET: params from the query string; POST: from the JSON body)."""
    binding: tuple[str, str] | None = None
    if http is not None:
        verb, _, path = http.partition(" ")
        if verb not in ("GET", "POST") or not path.startswith("/"):
            raise ValueError(f"{name}: http binding must read 'GET /path' or 'POST /path', got {http!r}")
        binding = (verb, path)
        if any(e.http == binding for e in METHOD_TABLE):
            raise ValueError(f"{name}: route {http!r} is bound twice")

    def register(handler: H) -> H:
        METHOD_TABLE.add(Entry("method", name, params, result, handler, http=binding))
        return handler

    return register


def tool(
    name: str,
    *,
    args: type[BaseModel],
    result: type[BaseModel],
    description: str,
    evidence: bool = False,
    verbatim: tuple[str, ...] = (),
) -> Callable[[H], H]:
    """Register ``handler(ctx, args)`` as the agent tool ``name``. ``evidence=True``: its results show memory to the
    agent, so each one becomes a retrieval batch (``batch_id`` + ``evidence_refs``). ``verbatim``: result fields
    that carry this session's own archived context back byte for byte (see ``Entry.verbatim``)."""

    def register(handler: H) -> H:
        TOOL_TABLE.add(Entry("tool", name, args, result, handler, description, evidence, verbatim))
        return handler

    return register
