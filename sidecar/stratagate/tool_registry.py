"""The agent tool table. Each tool is a pydantic argument model plus an async function.

The JSON Schema the host registers comes from the argument model, so schema and validation can never drift.
Below ``stratagate.tools`` and ``stratagate.evidence``: the tools are built on it, and evidence batching wraps tool
runs (``evidence.batches.batched``) that the catalog then registers.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel, ValidationError

from stratagate.config import Settings
from stratagate.errors import RpcError, explain_validation, invalid_params, not_found
from stratagate.jsonschema import tool_parameters
from stratagate.safety.inert import inert, inert_tree
from stratagate.storage.db import Database


@dataclass
class ToolContext:
    db: Database
    settings: Settings
    namespace: str
    session: str
    call_id: str | None


@dataclass
class Tool:
    name: str
    description: str
    args: type[BaseModel]
    run: Callable[[ToolContext, Any], Awaitable[dict[str, Any]]]

    def spec(self) -> dict[str, Any]:
        parameters = tool_parameters(self.args)  # $refs inlined: some providers reject $defs
        parameters.pop("title", None)
        return {"name": self.name, "description": self.description, "parameters": parameters}


class ToolRegistry:
    def __init__(self) -> None:
        self._tools: dict[str, Tool] = {}

    def add(self, tool: Tool) -> None:
        self._tools[tool.name] = tool

    def specs(self) -> list[dict[str, Any]]:
        return [t.spec() for t in self._tools.values()]

    async def call(self, ctx: ToolContext, name: str, arguments: Any) -> dict[str, Any]:
        """Run a tool. Its result reaches the model, and so do its errors (which may echo the bad input): every
        string of either goes through the one rendering rule (safety/inert.py)."""
        try:
            return inert_tree(await self._run(ctx, name, arguments))
        except RpcError as exc:
            data = exc.data if isinstance(exc.data, dict | list | str) else None
            raise RpcError(exc.code, inert(exc.message), inert_tree(data)) from exc

    async def _run(self, ctx: ToolContext, name: str, arguments: Any) -> dict[str, Any]:
        tool = self._tools.get(name)
        if tool is None:
            raise not_found(f"unknown tool {name!r}; tools.list names the available tools")
        try:
            args = tool.args.model_validate(arguments if arguments is not None else {})
        except ValidationError as exc:
            raise invalid_params(f"bad arguments for {name}: {explain_validation(exc)}") from exc
        return await tool.run(ctx, args)
