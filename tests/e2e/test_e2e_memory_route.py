"""The Memory page's JSON routes through the real ``dsh web``: DSH's web server → the shim's
``/api/stratagate/memory`` prefix route → the sidecar's ``page.request``, next to the exact StrataGate routes, behind
the same Host/Origin fence as DSH's own /api (the browser smoke test of the page itself is test_e2e_memory_page.py)."""

from __future__ import annotations

import http.client
import json
import time
from pathlib import Path
from typing import Any

from support.dsh import DshHome, wait_http_json
from support.dsh_web import running_web


def _request(
    port: int, method: str, path: str, body: bytes | None = None, headers: dict[str, str] | None = None
) -> tuple[int, dict[str, str], bytes]:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    try:
        conn.request(method, path, body=body, headers=headers or {})
        resp = conn.getresponse()
        return resp.status, {k.lower(): v for k, v in resp.getheaders()}, resp.read()
    finally:
        conn.close()


def _json(port: int, method: str, path: str, value: Any = None, **headers: str) -> tuple[int, Any]:
    body = None if value is None else json.dumps(value).encode()
    sent = {"Content-Type": "application/json"} if body is not None else {}
    status, got, raw = _request(port, method, path, body, {**sent, **headers})
    assert got["content-type"].startswith("application/json"), (status, got, raw[:200])
    return status, json.loads(raw)


def test_memory_routes_answer_through_dsh_web(web_stratagate: DshHome, tmp_path: Path) -> None:
    work = tmp_path / "project"
    work.mkdir()
    with running_web(web_stratagate, work) as web:
        port = web.port
        status, body = wait_http_json(
            f"http://127.0.0.1:{port}/api/stratagate/status", time.monotonic() + 90, web.proc,
            until=lambda _, b: isinstance(b, dict) and b.get("state") == "ready",
        )
        assert status == 200 and body["install"] is None, body  # the exact route still wins over our prefix

        status, overview = _json(port, "GET", "/api/stratagate/memory/overview")
        assert status == 200, overview
        assert overview["db_path"] == str(web_stratagate.db_path), overview
        assert isinstance(overview["namespaces"], list) and "jobs" in overview, overview

        # The page's files, served by the sidecar from page/static through the same route (memory-page.js is what
        # the settings section loads; the DSH smoke test sees it mounted).
        status, headers, html = _request(port, "GET", "/api/stratagate/memory/assets/index.html")
        assert status == 200 and headers["content-type"].startswith("text/html"), (status, headers)
        assert b"/api/stratagate/memory/assets/memory-page.js" in html
        assert headers["x-content-type-options"] == "nosniff"
        status, headers, script = _request(port, "GET", "/api/stratagate/memory/assets/memory-page.js")
        assert status == 200 and headers["content-type"].startswith("text/javascript"), (status, headers)
        assert b"StrataGateMemoryPage" in script

        # Errors are the sidecar's own, passed through; framing errors are the shim's.
        status, missing = _json(port, "GET", "/api/stratagate/memory/no-such-route")
        assert status == 404 and "no route" in missing["error"], missing
        status, _, raw = _request(
            port, "POST", "/api/stratagate/memory/events/forget", b'{"id": ', {"Content-Type": "application/json"}
        )
        assert status == 400 and "not valid JSON" in json.loads(raw)["error"], raw

        # DSH's fence, which DSH itself applies only inside its own /api route: a rebound Host or a cross-site
        # Origin never reaches the sidecar.
        for foreign in ({"Host": "evil.example"}, {"Origin": "http://evil.example"}):
            status, refused = _json(port, "GET", "/api/stratagate/memory/overview", **foreign)
            assert status == 403, (foreign, refused)
            status, refused = _json(port, "GET", "/api/stratagate/status", **foreign)
            assert status == 403, (foreign, refused)

        # Nothing to retry while the sidecar is ready.
        status, retry = _json(port, "POST", "/api/stratagate/install/retry", {})
        assert status == 409 and retry["retried"] is False, retry
