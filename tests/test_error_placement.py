"""Feature modules raise domain exceptions (``stratagate.errors.DomainError``: ``Invalid``, ``NotFound`` …) and know
nothing of JSON-RPC; the protocol layer maps them (``protocol/errors.as_rpc_error``, the one mapping) and the Memory
page's HTTP boundary maps the resulting JSON-RPC error to an HTTP status (``page/dispatch.py``)."""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "sidecar" / "stratagate"
RPC_NAMES = {"RpcError", "JsonRpcError", "invalid_params", "not_found"}
ALLOWED = ("rpc/", "protocol/", "errors.py", "page/dispatch.py", "embedded/", "mcp_server/")
"""The JSON-RPC layer, the protocol layer with the one mapping, the module that defines them, the page's HTTP
boundary (it turns the protocol's error into an HTTP status), and the two other clients of the protocol table at the
top: the Python API (its errors are the protocol's, by design) and the MCP server (it answers protocol errors)."""


def rpc_imports(source: str) -> list[tuple[int, str]]:
    """(line, name) of every import of a JSON-RPC error name (from stratagate.errors, jsonrpcserver or anywhere)."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.ImportFrom):
            found += [(node.lineno, alias.name) for alias in node.names if alias.name in RPC_NAMES]
            if node.module and node.module.startswith("jsonrpcserver"):
                found += [(node.lineno, f"{node.module}.{alias.name}") for alias in node.names]
        elif isinstance(node, ast.Import):
            found += [(node.lineno, alias.name) for alias in node.names if alias.name.startswith("jsonrpcserver")]
        elif isinstance(node, ast.Attribute) and node.attr in RPC_NAMES:
            found.append((node.lineno, node.attr))  # errors.invalid_params(...) through a module import
    return found


def test_the_scan_sees_every_spelling():
    assert rpc_imports("from stratagate.errors import NOT_FOUND, not_found")
    assert rpc_imports("from stratagate.errors import RpcError as E")
    assert rpc_imports("from stratagate import errors\nraise errors.invalid_params('x')")
    assert rpc_imports("import jsonrpcserver.exceptions")
    assert not rpc_imports("from stratagate.errors import NotFound, Invalid, DomainError, NOT_FOUND")


def test_no_json_rpc_error_below_the_protocol_layer():
    offenders = [
        f"{rel}:{line}: {name}"
        for path in sorted(PACKAGE.rglob("*.py"))
        if not (rel := path.relative_to(PACKAGE).as_posix()).startswith(ALLOWED)
        for line, name in rpc_imports(path.read_text(encoding="utf-8"))
    ]
    assert not offenders, (
        "JSON-RPC errors outside rpc/ and protocol/ (raise stratagate.errors.Invalid, NotFound or another DomainError; "
        "protocol/errors.as_rpc_error maps them):\n" + "\n".join(offenders)
    )
