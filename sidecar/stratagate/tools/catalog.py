"""Every agent tool the sidecar offers, in tools.list order.

`stratagate tools` prints these specs; `plugin/tools.json` is that output, so the DSH shim can register the
tools before the sidecar has started (a test keeps the file and this list identical).
"""

from __future__ import annotations

from typing import Any

from stratagate.tools import block_tools, event_tools, graph_tools, raw_search
from stratagate.tools.registry import ToolRegistry

ALL_TOOLS = (*block_tools.TOOLS, *raw_search.TOOLS, *event_tools.TOOLS, *graph_tools.TOOLS)


def build_registry() -> ToolRegistry:
    registry = ToolRegistry()
    for tool in ALL_TOOLS:
        registry.add(tool)
    return registry


def tool_specs() -> list[dict[str, Any]]:
    return build_registry().specs()
