"""Error codes every JSON-RPC caller can rely on (documented in docs/protocol.md)."""

from __future__ import annotations

from typing import Any

from jsonrpcserver.exceptions import JsonRpcError
from pydantic import ValidationError

from stratagate.safety.secrets import redact_text, redact_value

PARSE_ERROR = -32700
INVALID_REQUEST = -32600
METHOD_NOT_FOUND = -32601
INVALID_PARAMS = -32602
INTERNAL_ERROR = -32603
NOT_FOUND = -32004
PAYLOAD_TOO_LARGE = -32005
SHUTTING_DOWN = -32006
STORAGE_ERROR = -32010


class RpcError(JsonRpcError):
    """Raised anywhere below the RPC layer; becomes a JSON-RPC error with this code and message."""

    def __init__(self, code: int, message: str, data: Any = None):
        # An error can quote what it failed on (a value, a model response): never send a secret back.
        message = redact_text(message)
        data = redact_value(data)
        if data is None:
            super().__init__(code, message)
        else:
            super().__init__(code, message, data)

    def __str__(self) -> str:
        return self.message


def explain_validation(exc: ValidationError) -> str:
    """pydantic errors as one line: ``field.path: message; other: message``."""
    return "; ".join(f"{'.'.join(str(p) for p in e['loc']) or 'params'}: {e['msg']}" for e in exc.errors())


def invalid_params(message: str, data: Any = None) -> RpcError:
    return RpcError(INVALID_PARAMS, message, data)


def not_found(message: str) -> RpcError:
    return RpcError(NOT_FOUND, message)


class HostRequestError(Exception):
    """A JSON-RPC error answer from the host to one of our requests (raised by the peer).

    Lives here, not in stratagate.model, so the RPC layer does not import the openai package at start-up.
    """

    def __init__(self, code: int, message: str) -> None:
        super().__init__(f"host error {code}: {message}")
        self.code = code
        self.message = message
