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
from stratagate.errors import INVALID_PARAMS, RpcError
from stratagate.protocol import METHOD_TABLE, TOOL_TABLE, Entry, adapter
from stratagate.rpc import methods  # noqa: F401  (registers tools.call)
from stratagate.safety.inert import inert
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


async def call_tool(app: App, namespace: str, session: str, name: str, arguments: dict[str, Any] | None) -> Any:
    """Run one tool through the sidecar's ``tools.call``. An unknown (or unoffered) tool and arguments its params
    model refuses are MCP protocol errors (-32602, the message DSH's agent would get); a refusal while running (an
    unknown id, a forgotten event, a storage error) is a result with ``isError``, which the model reads."""
    tool = TOOL_TABLE.get(name)
    if tool is None or name not in offered_names():
        raise MCPError(INVALID_PARAMS, inert(f"unknown tool {name!r}; tools/list names the available tools"))
    try:
        adapter.parse(tool, arguments)  # the same check tools.call makes first, here to tell the two kinds apart
    except RpcError as exc:
        raise MCPError(exc.code, inert(exc.message)) from exc  # it may echo the input: the rendering rule, as for DSH
    entry = METHOD_TABLE.get("tools.call")
    assert entry is not None  # registered by rpc.methods, imported above
    params = {"namespace": namespace, "session": session, "name": name, "arguments": arguments or {}}
    try:
        with app.maintenance.gate.busy():  # a maintenance pass runs its slices between requests, as for DSH's
            result = await adapter.call(entry, app, params)
    except RpcError as exc:
        return types.CallToolResult(content=[types.TextContent(text=exc.message)], is_error=True)
    # The model reads the result as DSH's model does (the shim renders it as indented JSON).
    text = json.dumps(result, indent=2, ensure_ascii=False)
    return types.CallToolResult(content=[types.TextContent(text=text)], structured_content=result)
