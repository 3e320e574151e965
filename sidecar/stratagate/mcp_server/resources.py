"""Read-only resources: events, blocks and graph nodes by URI, and a list of the namespace's recent ones.

A read runs the matching expand tool (memory_expand_event, memory_expand_block, memory_expand_graph_node) through a
Toolbox of its own, so it shows exactly what the tool shows (visibility, the user tier, forgotten memories hidden,
the rendering rule), but records no evidence batch: a resource is attached by the user, not retrieved by the model.
"""

from __future__ import annotations

import json
import re
from typing import Any
from urllib.parse import quote, unquote

from mcp import types
from mcp.shared.exceptions import MCPError

from stratagate import ids
from stratagate.app import App
from stratagate.blocks.queries import newest_blocks_elsewhere
from stratagate.errors import INVALID_PARAMS, NOT_FOUND, RpcError
from stratagate.protocol import TOOL_TABLE, ToolContext
from stratagate.protocol.toolbox import Toolbox
from stratagate.storage import lookup

SCHEME = "stratagate"
RESOURCE_NOT_FOUND = -32002
"""MCP's error code for a resource that does not exist."""
JSON = "application/json"
RECENT_EVENTS = 20
RECENT_NODES = 20
RECENT_BLOCKS = 10

TEMPLATES = [
    types.ResourceTemplate(
        name="event", uri_template=f"{SCHEME}://events/{{id}}", mime_type=JSON,
        description="A long-term memory event in full (as memory_expand_event shows it), e.g. evt_12.",
    ),
    types.ResourceTemplate(
        name="block", uri_template=f"{SCHEME}://blocks/{{id}}", mime_type=JSON,
        description="A sealed memory block one level more detailed than its current view (as memory_expand_block).",
    ),
    types.ResourceTemplate(
        name="block-level", uri_template=f"{SCHEME}://blocks/{{id}}/levels/{{level}}", mime_type=JSON,
        description="A memory block at a chosen level: 0 title … 5 source transcript (as memory_expand_block).",
    ),
    types.ResourceTemplate(
        name="graph-node", uri_template=f"{SCHEME}://nodes/{{id}}", mime_type=JSON,
        description="A knowledge-graph node: current state and every fact (as memory_expand_graph_node), e.g. nod_3.",
    ),
]

_URI = re.compile(rf"^{SCHEME}://(events|blocks|nodes)/([^/?#]+)(?:/levels/([^/?#]+))?$")
_READERS = {"events": "memory_expand_event", "blocks": "memory_expand_block", "nodes": "memory_expand_graph_node"}
_LISTERS = ("memory_search_events", "memory_search_graph", "memory_expand_block")


def _toolbox() -> Toolbox:
    """The reading tools without evidence batching (no ``evidence_wrap``)."""
    entries = [e for e in TOOL_TABLE if e.name in {*_READERS.values(), *_LISTERS}]
    return Toolbox(entries)


class Resources:
    def __init__(self, app: App) -> None:
        self.app = app
        self.tools = _toolbox()

    def _ctx(self, namespace: str, session: str) -> ToolContext:
        return ToolContext(self.app.db, self.app.settings, namespace, session, None, dense=self.app.dense)

    async def read(self, namespace: str, session: str, uri: str) -> types.ReadResourceResult:
        found = _URI.match(uri)
        if found is None:
            raise MCPError(INVALID_PARAMS, f"not a StrataGate resource URI: {uri!r}; resources/templates/list "
                           "names the forms (stratagate://events/{id}, …)")
        kind, ref, level = found.group(1), unquote(found.group(2)), found.group(3)
        if kind == "events":
            args: dict[str, Any] = {"id": ref}
        elif kind == "nodes":
            args = {"node": ref}
        else:
            args = {"id": ref} | ({"level": int(level) if level.isdigit() else unquote(level)} if level else {})
        try:
            with self.app.maintenance.gate.busy():
                result = await self.tools.call(self._ctx(namespace, session), _READERS[kind], args)
        except RpcError as exc:
            code = RESOURCE_NOT_FOUND if exc.code == NOT_FOUND else INVALID_PARAMS
            raise MCPError(code, exc.message, {"uri": uri}) from exc
        text = json.dumps(result, indent=2, ensure_ascii=False)
        return types.ReadResourceResult(contents=[types.TextResourceContents(uri=uri, mime_type=JSON, text=text)])

    async def recent(self, namespace: str, session: str) -> list[types.Resource]:
        """The namespace's newest events (the user tier included), graph nodes and blocks."""
        ctx = self._ctx(namespace, session)
        with self.app.maintenance.gate.busy():
            events = await self.tools.call(ctx, "memory_search_events", {"limit": RECENT_EVENTS})
            nodes = await self.tools.call(ctx, "memory_search_graph", {"limit": RECENT_NODES, "expand": False})
            blocks = await self._recent_blocks(ctx)
        out = [
            types.Resource(name=hit["title"], uri=f"{SCHEME}://events/{hit['id']}", mime_type=JSON,
                           description=f"{hit['type']}, {hit['status']}: {hit['summary']}")
            for hit in events["hits"]
        ]
        out += [
            types.Resource(name=hit["name"], uri=f"{SCHEME}://nodes/{quote(hit['id'])}", mime_type=JSON,
                           description=f"graph node ({hit['kind']})")
            for hit in nodes["hits"]
        ]
        return out + blocks

    async def _recent_blocks(self, ctx: ToolContext) -> list[types.Resource]:
        ns = await lookup.namespace_key(self.app.db.reader, ctx.namespace)
        if ns is None:
            return []
        out = []
        for block_id, _session in await newest_blocks_elsewhere(self.app.db.reader, ns, None, RECENT_BLOCKS):
            public = ids.make("blk", block_id)
            title = await self.tools.call(ctx, "memory_expand_block", {"id": public, "level": 0})
            out.append(types.Resource(name=title["view"] or public, uri=f"{SCHEME}://blocks/{public}", mime_type=JSON,
                                      description=f"memory block of session {title['session']}, {title['label']}"))
        return out
