"""What ``Memory`` returns: the protocol's own result models (protocol/results.py, protocol/tool_results.py), with
the two keys evidence batching adds to a retrieval tool's result (evidence/batches.py) declared."""

from __future__ import annotations

from stratagate.protocol.tool_results import (
    ExpandBlockResult,
    ExpandEventResult,
    ExpandNodeResult,
    SearchEventsResult,
)
from stratagate.protocol.types import Result


class Evidence(Result):
    """A retrieval shows memory, so it is recorded as a retrieval batch (the same as a DSH agent's search):
    ``batch_id`` names it and ``evidence_refs`` the memories it showed (``batch_id`` is None only when storage was
    full, and then ``note`` says so)."""

    batch_id: str | None
    evidence_refs: list[str]
    note: str | None = None


class EventSearch(SearchEventsResult, Evidence):
    """``Memory.search``: memory_search_events' result."""


class EventDetail(ExpandEventResult, Evidence):
    """``Memory.expand`` of an event id: memory_expand_event's result."""


class BlockDetail(ExpandBlockResult, Evidence):
    """``Memory.expand`` of a block id: memory_expand_block's result."""


class NodeDetail(ExpandNodeResult, Evidence):
    """``Memory.expand`` of a graph node id: memory_expand_graph_node's result."""


Expanded = EventDetail | BlockDetail | NodeDetail
