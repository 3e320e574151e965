"""`stratagate mcp`: the memory as a Model Context Protocol server (stdio, or Streamable HTTP on loopback).

Built on the official ``mcp`` SDK's low-level ``Server``, over the same database and the same protocol table as the
DSH sidecar: the tools are the table's memory tools run through ``tools.call`` (catalog.py), resources read events,
blocks and graph nodes by URI (resources.py), and the namespace is the one DSH keys the client's folder with
(workspace.py). Nothing here is imported by ``stratagate serve``: the SDK is loaded only by this command.
"""
