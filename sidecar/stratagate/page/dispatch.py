"""``page.request``: one HTTP request of the Memory page in, one status and JSON body out.

The route is found by the ``http`` binding of a protocol-table method; the params are the query string (GET) or the
JSON object body (POST, which takes no query string) and go through the same validation adapter as JSON-RPC, so a bad
value is a 400 naming the field.
Every string of a reply passes the secret redactor once more (job errors or paths may carry a token that was never
stored as memory). Files of ``static/`` are served under ``/assets/``."""

from __future__ import annotations

import mimetypes
from importlib import resources
from typing import Any, Literal

from jsonrpcserver.sentinels import NODATA
from pydantic import BaseModel, Field

from stratagate.app import App
from stratagate.errors import INVALID_PARAMS, NOT_FOUND, PAYLOAD_TOO_LARGE, STORAGE_ERROR, RpcError
from stratagate.protocol import METHOD_TABLE, Entry, adapter, method
from stratagate.safety.secrets import redact_value

PREFIX = "/api/stratagate/memory"
ASSETS = "/assets/"


class PageRequest(BaseModel):
    method: Literal["GET", "HEAD", "POST"]
    path: str = Field(min_length=1, max_length=2048, description="the path under /api/stratagate/memory, e.g. /events")
    query: dict[str, str] = Field(default_factory=dict)
    body: Any = None


class PageResponse(BaseModel):
    status: int
    content_type: str = "application/json; charset=utf-8"
    body: Any = None


_STATUS = {INVALID_PARAMS: 400, NOT_FOUND: 404, PAYLOAD_TOO_LARGE: 413, STORAGE_ERROR: 503}


def routes() -> dict[tuple[str, str], Entry]:
    return {entry.http: entry for entry in METHOD_TABLE if entry.http is not None}


def _asset(path: str) -> PageResponse:
    name = path[len(ASSETS):]
    if not name or "/" in name or name.startswith("."):
        return PageResponse(status=404, body={"error": f"no asset {name!r}"})
    file = resources.files("stratagate.page").joinpath("static", name)
    if not file.is_file():
        return PageResponse(status=404, body={"error": f"no asset {name!r}"})
    kind = mimetypes.guess_type(name)[0] or "application/octet-stream"
    return PageResponse(status=200, content_type=f"{kind}; charset=utf-8", body=file.read_text("utf-8"))


async def handle(app: App, req: PageRequest) -> PageResponse:
    path = req.path.split("?", 1)[0]
    if path.startswith(PREFIX):
        path = path[len(PREFIX):] or "/"
    verb = "GET" if req.method == "HEAD" else req.method
    if verb == "GET" and path.startswith(ASSETS):
        return _asset(path)
    table = routes()
    entry = table.get((verb, path))
    if entry is None:
        allowed = sorted(v for v, p in table if p == path)
        if allowed:
            return PageResponse(status=405, body={"error": f"{path} takes {' or '.join(allowed)}", "allow": allowed})
        return PageResponse(status=404, body={"error": f"no route {verb} {path}"})
    if verb == "POST":  # a write: its params only from a JSON object body (never the query string)
        if not isinstance(req.body, dict):
            return PageResponse(status=400, body={"error": "the request body must be a JSON object"})
        if req.query:
            return PageResponse(status=400, body={"error": "a write (POST) takes no query string; send the params "
                                                           "in its JSON object body"})
        raw: dict[str, Any] = dict(req.body)
    else:
        raw = dict(req.query)
    try:
        value = await adapter.call(entry, app, raw)
    except RpcError as exc:
        body: dict[str, Any] = {"error": exc.message}
        if exc.data is not None and exc.data is not NODATA:  # an error without data carries jsonrpcserver's sentinel
            body["details"] = exc.data
        return PageResponse(status=_STATUS.get(exc.code, 500), body=redact_value(body))
    return PageResponse(status=200, body=redact_value(value))


@method("page.request", params=PageRequest, result=PageResponse)
async def page_request(app: App, p: PageRequest) -> PageResponse:
    """An HTTP request of the Memory page (the shim's ``/api/stratagate/memory/*`` route, or ``stratagate ui``)."""
    return await handle(app, p)
