"""Protocol types and the one registration mechanism for JSON-RPC methods and agent tools (pygls style: the types
and the table live here, apart from the feature handlers that register into it).

Layering (pyproject.toml [tool.importlinter]): this package sits low, beside ``jobs`` and ``model`` and above
``storage``, so every layer that declares a method or a tool can reach it: the tool modules (``tools/``), the
evidence gate (``evidence/``, whose batching wraps the tools flagged ``evidence=True``) and the RPC handlers
(``rpc/``). It holds only types and plumbing, never a handler: the table is filled by ``@method`` / ``@tool`` where
each handler is written (rpc/ and tools/), and it imports nothing above storage.

- ``registry.py``: ``Entry`` (name → params model, result model, handler), the two tables and the decorators.
- ``adapter.py``: the one validation adapter (params in, typed result out, errors mapped once).
- ``errors.py``: the one exception → JSON-RPC error mapping (``as_rpc_error``).
- ``context.py``: what a tool runs with (``ToolContext``).
- ``types.py``, ``params.py``, ``results.py``, ``tool_results.py``: the wire types.
"""

from stratagate.protocol.context import ToolContext
from stratagate.protocol.registry import METHOD_TABLE, TOOL_TABLE, Entry, method, tool

__all__ = ["METHOD_TABLE", "TOOL_TABLE", "Entry", "ToolContext", "method", "tool"]
