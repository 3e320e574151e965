"""The one mapping from an exception raised while validating or running a request or a tool to its JSON-RPC error.

It sits in the protocol layer, above storage: it knows the storage layer's errors, which the leaf module
``errors.py`` must not import. Methods and tools both go through it (protocol/adapter.py); nothing else maps errors.
"""

from __future__ import annotations

import sqlite3

from stratagate.errors import INTERNAL_ERROR, STORAGE_ERROR, DomainError, RpcError, invalid_params, is_storage_full
from stratagate.storage.db import StorageError


def as_rpc_error(exc: BaseException) -> RpcError:
    """The one mapping from an exception raised while validating or running a request to its JSON-RPC error.

    - an RpcError keeps its code;
    - a DomainError (a refusal a feature module names, e.g. an import file in the wrong format) gets its own code
      and message;
    - storage failures (sqlite3 errors, failed commits; a full disk or the STRATAGATE_DB_MAX_MB cap) are -32010;
    - ValueError / OverflowError / UnicodeError come from the caller's values (a date out of range, a NUL in a
      path, a lone surrogate in text): -32602;
    - anything else is -32603.
    """
    if isinstance(exc, RpcError):
        return exc
    if isinstance(exc, DomainError):
        return RpcError(exc.code, str(exc), exc.data)
    if isinstance(exc, sqlite3.Error | StorageError) or is_storage_full(exc):
        if is_storage_full(exc):
            return RpcError(
                STORAGE_ERROR,
                f"storage full: {exc} (the disk is full or the database reached STRATAGATE_DB_MAX_MB); "
                "nothing partial was kept",
            )
        return RpcError(STORAGE_ERROR, f"storage error: {exc}")
    if isinstance(exc, UnicodeError):
        return invalid_params(f"invalid params: text cannot be encoded as UTF-8 ({exc.__class__.__name__}: {exc})")
    if isinstance(exc, ValueError | OverflowError):
        return invalid_params(f"invalid params: {exc.__class__.__name__}: {exc}")
    return RpcError(INTERNAL_ERROR, f"internal error: {exc.__class__.__name__}: {exc}")
