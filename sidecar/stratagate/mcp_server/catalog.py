"""The memory tools an MCP client gets: the protocol table's tools as DSH gets them (names, JSON Schemas and
descriptions from ``Entry.spec()``, the tools.list order), without the context-window tools, which work on a DSH
session's own context archive. A call runs the sidecar's own ``tools.call`` method (rpc/methods.py): the same
validation, evidence batches, use receipts, rendering rule and redaction as a DSH tool call."""

from __future__ import annotations

import json
from typing import Any

from mcp import types
from mcp.shared.exceptions import MCPError

from stratagate.app import App
from stratagate.errors import INVALID_PARAMS, NOT_FOUND, RpcError
from stratagate.protocol import METHOD_TABLE, TOOL_TABLE, Entry, adapter
from stratagate.rpc import methods  # noqa: F401  (registers tools.call)
from stratagate.tools import context_tools

SESSION_TOOLS_MODULE = context_tools.__name__
"""The module of the context-window tools: they need DSH's session (its context archive), so MCP does not offer them."""


def offered() -> list[Entry]:
    """The table's tools minus the context-window ones, in tools.list order."""
    return [e for e in TOOL_TABLE if e.handler.__module__ != SESSION_TOOLS_MODULE]


def offered_names() -> set[str]:
    return {e.name for e in offered()}


def mcp_tools() -> list[types.Tool]:
    """The offered tools as MCP tool definitions: the spec DSH registers, field for field."""
    tools = []
    for entry in offered():
        spec = entry.spec()
        tools.append(types.Tool(name=spec["name"], description=spec["description"], input_schema=spec["parameters"]))
    return tools


PROTOCOL_CODES = frozenset({INVALID_PARAMS})
"""Tool errors that are the request's fault (bad arguments): MCP protocol errors. Others (an unknown id, a refused
change) are tool results with ``isError``, which the model reads as DSH's model does."""


async def call_tool(app: App, namespace: str, session: str, name: str, arguments: dict[str, Any] | None) -> Any:
    """Run one tool through the sidecar's ``tools.call``; an unknown or unoffered tool and bad arguments raise
    ``MCPError`` (protocol errors), another refusal comes back as an ``isError`` result."""
    if name not in offered_names():
        raise MCPError(INVALID_PARAMS, f"unknown tool {name!r}; tools/list names the available tools")
    entry = METHOD_TABLE.get("tools.call")
    assert entry is not None  # registered by rpc.methods, imported above
    params = {"namespace": namespace, "session": session, "name": name, "arguments": arguments or {}}
    try:
        with app.maintenance.gate.busy():  # a maintenance pass runs its slices between requests, as for DSH's
            result = await adapter.call(entry, app, params)
    except RpcError as exc:
        if exc.code in PROTOCOL_CODES:
            data = exc.data if isinstance(exc.data, dict | list | str) else None  # not jsonrpcserver's NODATA
            raise MCPError(exc.code, exc.message, data) from exc
        text = exc.message if exc.code != NOT_FOUND else f"not found: {exc.message}"
        return types.CallToolResult(content=[types.TextContent(text=text)], is_error=True)
    # The model reads the result as DSH's model does (the shim renders it as indented JSON).
    text = json.dumps(result, indent=2, ensure_ascii=False)
    return types.CallToolResult(content=[types.TextContent(text=text)], structured_content=result)
