"""The agent tools as the sidecar serves them (``App.tools``): specs for tools.list, runs for tools.call."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterable
from typing import Any, cast

from stratagate.errors import RpcError, not_found
from stratagate.protocol import adapter
from stratagate.protocol.context import ToolContext
from stratagate.protocol.registry import Entry
from stratagate.safety.inert import inert, inert_tree

ToolRun = Callable[[ToolContext, Any], Awaitable[dict[str, Any]]]
EvidenceWrap = Callable[[str, ToolRun], ToolRun]


def typed_run(entry: Entry) -> ToolRun:
    """The tool's handler with its result validated and serialised by its result model."""

    async def run(ctx: ToolContext, args: Any) -> dict[str, Any]:
        # A tool's result model is an object model: its dump is a JSON object.
        return cast(dict[str, Any], await adapter.run(entry, ctx, args))

    return run


class Toolbox:
    """Tools in table order. ``evidence_wrap(name, run)`` wraps the runs of tools flagged ``evidence=True`` (the
    evidence layer records their results as retrieval batches; it sits above this package, so it is passed in)."""

    def __init__(self, entries: Iterable[Entry], evidence_wrap: EvidenceWrap | None = None) -> None:
        self._entries: dict[str, Entry] = {}
        self._runs: dict[str, ToolRun] = {}
        for entry in entries:
            run = typed_run(entry)
            if entry.evidence and evidence_wrap is not None:
                run = evidence_wrap(entry.name, run)
            self._entries[entry.name] = entry
            self._runs[entry.name] = run

    def specs(self) -> list[dict[str, Any]]:
        return [e.spec() for e in self._entries.values()]

    def names(self) -> list[str]:
        return list(self._entries)

    async def call(self, ctx: ToolContext, name: str, arguments: Any) -> dict[str, Any]:
        """Run a tool. Its result reaches the model, and so do its errors (which may echo the bad input): every
        string of either goes through the one rendering rule (safety/inert.py)."""
        try:
            entry = self._entries.get(name)
            if entry is None:
                raise not_found(f"unknown tool {name!r}; tools.list names the available tools")
            result = await adapter.call(entry, ctx, arguments, self._runs[name])
            if not entry.verbatim or not isinstance(result, dict):
                return cast(dict[str, Any], inert_tree(result))
            # The session's own history restored as it was (decompress): those fields skip the rule, the rest not.
            return {k: v if k in entry.verbatim else inert_tree(v) for k, v in result.items()}
        except RpcError as exc:
            data = exc.data if isinstance(exc.data, dict | list | str) else None
            raise RpcError(exc.code, inert(exc.message), inert_tree(data)) from exc
