"""Error codes every JSON-RPC caller can rely on (documented in docs/protocol.md)."""

from __future__ import annotations

import re
import sqlite3
from typing import Any

from jsonrpcserver.exceptions import JsonRpcError
from pydantic import ValidationError

from stratagate.safety.secrets import RedactionFailed, redact_shown, redact_value

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
    """A JSON-RPC error with this code and message: raised by the RPC and protocol layers only (feature modules raise
    a DomainError, which ``protocol/errors.as_rpc_error`` maps to one of these)."""

    def __init__(self, code: int, message: str, data: Any = None):
        # An error can quote what it failed on (a value, a model response): never send a secret back.
        message = redact_shown(message)
        try:
            data = redact_value(data)
        except RedactionFailed:
            data = None  # (the message still says what failed)
        if data is None:
            super().__init__(code, message)
        else:
            super().__init__(code, message, data)
        self.args = (code, message) if data is None else (code, message, data)  # (else repr() shows the unredacted)

    def __str__(self) -> str:
        return self.message


class DomainError(Exception):
    """A refusal raised by a feature module that names what the caller must change. Feature modules raise it without
    knowing JSON-RPC; ``protocol/errors.as_rpc_error`` (the one mapping) sends ``str(exc)`` with ``code``."""

    code = INVALID_PARAMS

    def __init__(self, message: str, data: Any = None) -> None:
        super().__init__(message)
        self.data = data


class Invalid(DomainError):
    """The caller's request is wrong as given (a malformed id, a value out of range, a state that forbids the
    change): invalid params (-32602, HTTP 400)."""

    code = INVALID_PARAMS


class NotFound(DomainError):
    """What the request names does not exist (in this namespace or session): not found (-32004, HTTP 404)."""

    code = NOT_FOUND


def explain_validation(exc: ValidationError) -> str:
    """pydantic errors as one line: ``field.path: message; other: message``."""
    return "; ".join(f"{'.'.join(str(p) for p in e['loc']) or 'params'}: {e['msg']}" for e in exc.errors())


_SURROGATE = re.compile("[\ud800-\udfff]")


def has_surrogate(text: str) -> bool:
    """True when ``text`` holds a lone surrogate (JSON allows ``"\\ud800"``; UTF-8 cannot encode it)."""
    return not text.isascii() and _SURROGATE.search(text) is not None


def safe_text(text: str) -> str:
    """``text`` with lone surrogates replaced by U+FFFD, so it can always be encoded as UTF-8."""
    return _SURROGATE.sub("\ufffd", text) if has_surrogate(text) else text


def is_storage_full(exc: BaseException | None) -> bool:
    """SQLITE_FULL: a full disk, or the STRATAGATE_DB_MAX_MB cap (max_page_count), anywhere in the cause chain."""
    seen = 0
    while exc is not None and seen < 8:
        if isinstance(exc, sqlite3.Error):
            if getattr(exc, "sqlite_errorcode", None) == getattr(sqlite3, "SQLITE_FULL", 13):
                return True
            if "database or disk is full" in str(exc):
                return True
        elif "database or disk is full" in str(exc):
            return True
        exc = exc.__cause__ or exc.__context__
        seen += 1
    return False


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
