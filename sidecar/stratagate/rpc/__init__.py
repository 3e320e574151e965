"""JSON-RPC 2.0 over stdio, both directions: the host calls us, we call the host (host.llm.complete)."""
