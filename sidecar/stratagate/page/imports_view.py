"""``page.imports.list`` (GET /imports): the namespace's imports, newest first, in ``import.list``'s shape."""

from __future__ import annotations

from typing import Any

from stratagate.app import App
from stratagate.imports import store
from stratagate.protocol import method
from stratagate.protocol.params import ImportListParams
from stratagate.protocol.results import ImportListResult
from stratagate.storage.lookup import namespace_id


@method("page.imports.list", params=ImportListParams, result=ImportListResult, http="GET /imports")
async def page_imports(app: App, p: ImportListParams) -> dict[str, Any]:
    await namespace_id(app.db, p.namespace)  # an unknown namespace is a 404 here, not an empty list
    return {"imports": await store.list_imports(app.db.reader, p.namespace)}
