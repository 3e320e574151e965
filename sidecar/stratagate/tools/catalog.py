"""Every agent tool the sidecar offers, in tools.list order.

`stratagate tools` prints these specs; `plugin/tools.json` is that output, so the DSH shim can register the
tools before the sidecar has started (a test keeps the file and this list identical).
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from stratagate.evidence.batches import batched
from stratagate.tool_registry import Tool, ToolRegistry
from stratagate.tools import block_tools, event_tools, evidence_tools, graph_tools, raw_search

ALL_TOOLS = (
    *block_tools.TOOLS,
    *raw_search.TOOLS,
    *event_tools.TOOLS,
    *graph_tools.TOOLS,
    *evidence_tools.TOOLS,
)

RETRIEVAL_TOOLS = frozenset(
    {
        "memory_get_blocks",
        "memory_expand_block",
        "memory_search_raw",
        "memory_search_events",
        "memory_expand_event",
        "memory_search_graph",
        "memory_expand_graph_node",
    }
)
"""Tools whose results are evidence: each result becomes a retrieval batch (``batch_id`` + ``evidence_refs``).
A new tool that shows memory to the agent belongs here."""


def _registered(tool: Tool) -> Tool:
    return replace(tool, run=batched(tool.name, tool.run)) if tool.name in RETRIEVAL_TOOLS else tool


def build_registry() -> ToolRegistry:
    registry = ToolRegistry()
    for tool in ALL_TOOLS:
        registry.add(_registered(tool))
    return registry


def tool_specs() -> list[dict[str, Any]]:
    return build_registry().specs()
