"""Agent tools: schemas for tools.list, execution for tools.call.

Importing this package registers every tool with the protocol table (``@tool``), in the order below: that is the
tools.list order (plugin/tools.json). Python runs this file before any submodule, so the order holds whichever tool
module is imported first.
"""

# isort: off
from stratagate.tools import block_tools, raw_search, event_tools, graph_tools, context_tools, evidence_tools  # noqa: F401
# isort: on
