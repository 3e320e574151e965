"""JSON-RPC handlers of import.run, import.remove, import.list and import.get (registered in rpc/methods.py).

They live in the RPC layer, above ``stratagate.imports``, because they take its params (rpc/params.py)."""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, Any

from stratagate.errors import invalid_params
from stratagate.imports import store
from stratagate.imports.parsers import ImportBatch, ImportFormatError, parse_file, parse_text
from stratagate.imports.store import parse_import_id
from stratagate.rpc.params import ImportIdParams, ImportListParams, ImportRunParams

if TYPE_CHECKING:
    from stratagate.app import App


async def load_batch(path: str | None, text: str | None, fmt: str | None, source_name: str | None) -> ImportBatch:
    """Parse a file or a text; a parser refusal (missing file, empty, wrong format …) is invalid params."""
    try:
        if path is not None:
            # Reading and parsing up to 20 MiB is blocking work: keep the event loop serving other calls.
            batch = await asyncio.to_thread(parse_file, path, fmt)
        else:
            assert text is not None
            batch = await asyncio.to_thread(parse_text, text, fmt, source_name or "<text>")
    except ImportFormatError as exc:
        raise invalid_params(str(exc)) from exc
    if source_name is not None and source_name != batch.source_name:
        batch = batch.model_copy(update={"source_name": source_name})
    return batch


async def import_run(app: App, p: ImportRunParams) -> dict[str, Any]:
    store.check_scope(p.scope)  # refused before reading anything
    batch = await load_batch(p.path, p.text, p.format, p.source_name)
    return await store.run_import(app.db, p.namespace, batch, scope=p.scope, allow_duplicate=p.allow_duplicate)


async def import_remove(app: App, p: ImportIdParams) -> dict[str, Any]:
    return await store.remove_import(app.db, parse_import_id(p.id), p.namespace)


async def import_list(app: App, p: ImportListParams) -> dict[str, Any]:
    return {"imports": await store.list_imports(app.db.reader, p.namespace)}


async def import_get(app: App, p: ImportIdParams) -> dict[str, Any]:
    return await store.get_import(app.db.reader, parse_import_id(p.id), p.namespace)
