"""`stratagate ui --db PATH`: the standalone Memory page server, tested as a real subprocess over real sockets.

Most tests run `tests/support/page_probe.py ui ...` (the real CLI with two test-only routes bound) so the HTTP layer
is checked whatever page routes exist; one runs the bare `python -m stratagate ui`."""

from __future__ import annotations

import asyncio
import json
import os
import re
import select
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from stratagate.storage.db import Database

REPO = Path(__file__).resolve().parents[1]
PROBE = REPO / "tests" / "support" / "page_probe.py"
URL_LINE = re.compile(r"^StrataGate Memory: http://127\.0\.0\.1:(\d+)/$")


def _env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("STRATAGATE_")}
    env["PYTHONPATH"] = str(REPO / "sidecar")
    env["STRATAGATE_MODEL_ROUTE"] = "none"
    env["STRATAGATE_DENSE"] = "off"
    return env


def _read_line(proc: subprocess.Popen[str], timeout: float = 60) -> str:
    """The next stdout line (the server prints exactly one, the URL, when it listens)."""
    assert proc.stdout is not None
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        ready, _, _ = select.select([proc.stdout], [], [], max(0.0, deadline - time.monotonic()))
        if ready:
            return proc.stdout.readline()
    raise AssertionError("the server printed no URL line in time")


class Server:
    def __init__(self, proc: subprocess.Popen[str], port: int):
        self.proc = proc
        self.port = port

    def raw(self, data: bytes) -> tuple[int, dict[str, str], bytes]:
        """Send bytes as they are; parse the one reply (the server closes after it)."""
        with socket.create_connection(("127.0.0.1", self.port), timeout=30) as sock:
            sock.sendall(data)
            chunks = []
            while chunk := sock.recv(65536):
                chunks.append(chunk)
        reply = b"".join(chunks)
        head, _, body = reply.partition(b"\r\n\r\n")
        lines = head.decode("latin-1").split("\r\n")
        status = int(lines[0].split(" ")[1])
        headers = {k.lower(): v.strip() for k, _, v in (line.partition(":") for line in lines[1:])}
        assert headers.get("connection") == "close"
        if "content-length" in headers and not data.startswith(b"HEAD "):
            assert len(body) == int(headers["content-length"])
        return status, headers, body

    def request(
        self, method: str, path: str, body: bytes | None = None, headers: dict[str, str] | None = None
    ) -> tuple[int, dict[str, str], bytes]:
        sent = {"Host": f"127.0.0.1:{self.port}"}
        if body is not None:
            sent["Content-Length"] = str(len(body))
        sent.update(headers or {})
        head = f"{method} {path} HTTP/1.1\r\n" + "".join(f"{k}: {v}\r\n" for k, v in sent.items()) + "\r\n"
        return self.raw(head.encode("latin-1") + (body or b""))

    def json(self, method: str, path: str, value: object = None, **kw: object) -> tuple[int, object]:
        body = None if value is None else json.dumps(value).encode()
        headers = {"Content-Type": "application/json"} if body is not None else {}
        headers.update(kw.get("headers") or {})  # type: ignore[arg-type]
        status, reply_headers, raw = self.request(method, path, body, headers)
        assert reply_headers["content-type"].startswith("application/json")
        return status, json.loads(raw)


def _make_db(path: Path) -> Path:
    async def create() -> None:
        db = Database(path)
        await db.open()
        await db.close()

    asyncio.run(create())
    return path


def _start(args: list[str], stderr: Any = subprocess.DEVNULL) -> Server:
    """Start the server; its stderr (logs) is dropped unless a test reads it (an unread pipe could fill up)."""
    proc = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=stderr, text=True, env=_env())
    line = _read_line(proc)
    match = URL_LINE.match(line.rstrip("\n"))
    if match is None:
        proc.kill()
        raise AssertionError(f"unexpected first line {line!r}; stderr: {proc.communicate()[1]}")  # when piped
    return Server(proc, int(match.group(1)))


def _stop(server: Server) -> int:
    server.proc.send_signal(signal.SIGTERM)
    try:
        return server.proc.wait(timeout=30)
    finally:
        if server.proc.poll() is None:
            server.proc.kill()
        server.proc.communicate()


@pytest.fixture(scope="module")
def probe(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    """One probe server for the module: the requests change nothing, and each start costs ~2 s."""
    db = _make_db(tmp_path_factory.mktemp("probe") / "memory.db")
    server = _start([sys.executable, str(PROBE), "ui", "--db", str(db), "--port", "0"])
    try:
        yield server
    finally:
        assert _stop(server) == 0


def test_port_0_prints_the_url_serves_the_page_and_sigterm_exits_0(tmp_path: Path) -> None:
    db = _make_db(tmp_path / "memory.db")
    server = _start([sys.executable, "-m", "stratagate", "ui", "--db", str(db), "--port", "0"])
    try:
        assert server.port > 0
        status, headers, body = server.request("GET", "/")
        assert status == 200
        assert headers["content-type"] == "text/html; charset=utf-8"
        assert b"/api/stratagate/memory/assets/memory-page.js" in body  # index.html loads the page
        assert "frame-ancestors 'none'" in headers["content-security-policy"]
        assert headers["x-content-type-options"] == "nosniff"
        # the same browser code the DSH route serves, through the same dispatcher
        status, headers, asset = server.request("GET", "/api/stratagate/memory/assets/index.html")
        assert status == 200 and asset == body
        status, headers, head = server.request("HEAD", "/")
        assert status == 200 and head == b"" and int(headers["content-length"]) == len(body)
    finally:
        code = _stop(server)
    assert code == 0
    assert server.proc.returncode == 0


def test_inline_scripts_of_the_page_are_allowed_by_hash(probe: Server) -> None:
    import base64
    import hashlib

    status, headers, body = probe.request("GET", "/index.html")
    assert status == 200
    csp = headers["content-security-policy"]
    for script in re.findall(rb"<script>(.*?)</script>", body, flags=re.S):
        digest = base64.b64encode(hashlib.sha256(script).digest()).decode()
        assert f"'sha256-{digest}'" in csp
    assert "'unsafe-inline'" not in csp.split("script-src", 1)[1].split(";", 1)[0]


def test_get_route_params_come_from_the_query_string(probe: Server) -> None:
    status, body = probe.json("GET", "/api/stratagate/memory/probe/read?n=5&text=a%20b&flag=true")
    assert status == 200
    assert body["n"] == 5 and body["text"] == "a b" and body["flag"] is True
    assert body["db_path"].endswith("memory.db")


def test_post_route_params_come_from_the_json_body(probe: Server) -> None:
    status, body = probe.json("POST", "/api/stratagate/memory/probe/echo", {"n": 3, "text": "中文"})
    assert status == 200
    assert body["n"] == 3 and body["text"] == "中文"


def test_a_bad_param_is_a_400_naming_the_field(probe: Server) -> None:
    status, body = probe.json("POST", "/api/stratagate/memory/probe/echo", {"n": 99})
    assert status == 400
    assert any("n" in detail["loc"] for detail in body["details"])


def test_bad_json_is_400(probe: Server) -> None:
    status, _, raw = probe.request(
        "POST", "/api/stratagate/memory/probe/echo", b'{"n": ', {"Content-Type": "application/json"}
    )
    assert status == 400
    assert "not valid JSON" in json.loads(raw)["error"]
    status, _headers, raw = probe.request(
        "POST", "/api/stratagate/memory/probe/echo", b"[1, 2]", {"Content-Type": "application/json"}
    )
    assert status == 400
    assert "JSON object" in json.loads(raw)["error"]


def test_a_post_body_must_be_declared_json(probe: Server) -> None:
    status, _, raw = probe.request(
        "POST", "/api/stratagate/memory/probe/echo", b'{"n": 1}', {"Content-Type": "text/plain"}
    )
    assert status == 415
    assert "application/json" in json.loads(raw)["error"]


def test_a_body_over_1_mib_is_413_without_reading_it(probe: Server) -> None:
    head = (
        f"POST /api/stratagate/memory/probe/echo HTTP/1.1\r\nHost: 127.0.0.1:{probe.port}\r\n"
        f"Content-Type: application/json\r\nContent-Length: {2 * 1024 * 1024}\r\n\r\n"
    )
    status, _, raw = probe.raw(head.encode())
    assert status == 413
    assert "1 MiB" in json.loads(raw)["error"]
    # exactly 1 MiB is still accepted (and then judged as JSON)
    body = b'{"text": "' + b"x" * (1024 * 1024 - 12) + b'"}'
    assert len(body) == 1024 * 1024
    status, reply = probe.json("POST", "/api/stratagate/memory/probe/echo", json.loads(body))
    assert status == 200 and len(reply["text"]) == 1024 * 1024 - 12


def test_unknown_paths_and_routes_are_404(probe: Server) -> None:
    status, body = probe.json("GET", "/nothing/here")
    assert status == 404 and "/api/stratagate/memory/" in body["error"]
    status, body = probe.json("GET", "/api/stratagate/memory/no-such-route")
    assert status == 404
    status, body = probe.json("GET", "/api/stratagate/memory/assets/no-such-file.js")
    assert status == 404
    status, body = probe.json("GET", "/api/stratagate/memory/assets/..%2Fdispatch.py")
    assert status == 404


def test_wrong_verbs_are_405_with_allow(probe: Server) -> None:
    status, headers, _ = probe.request("GET", "/api/stratagate/memory/probe/echo")
    assert status == 405 and headers["allow"] == "POST"
    status, headers, _ = probe.request("DELETE", "/api/stratagate/memory/probe/echo")
    assert status == 405 and headers["allow"] == "GET, HEAD, POST"
    status, headers, _ = probe.request("POST", "/", b"{}", {"Content-Type": "application/json"})
    assert status == 405 and headers["allow"] == "GET, HEAD"


@pytest.mark.parametrize(
    "headers",
    [
        {"Host": "evil.example:8080"},  # DNS rebinding: a foreign name resolving to 127.0.0.1
        {"Host": "127.0.0.1.evil.example"},
        {"Host": ""},
        {"Origin": "http://evil.example"},  # a cross-site page posting to the loopback port
        {"Origin": "http://127.0.0.1:1"},  # another local port is another origin
        {"Origin": "null"},
        {"Sec-Fetch-Site": "cross-site"},
    ],
)
def test_foreign_host_or_origin_is_403(probe: Server, headers: dict[str, str]) -> None:
    status, _body = probe.json("POST", "/api/stratagate/memory/probe/echo", {"n": 1}, headers=headers)
    assert status == 403
    status, _, _ = probe.request("GET", "/", headers=headers)
    assert status == 403


def test_loopback_names_and_the_same_origin_pass(probe: Server) -> None:
    for host in (f"localhost:{probe.port}", f"127.0.0.1:{probe.port}", f"127.1.2.3:{probe.port}"):
        origin = f"http://{host}"
        status, body = probe.json(
            "POST", "/api/stratagate/memory/probe/echo", {"n": 2}, headers={"Host": host, "Origin": origin}
        )
        assert status == 200, (host, body)


def test_a_missing_host_header_is_403(probe: Server) -> None:
    status, _, _raw = probe.raw(b"GET / HTTP/1.0\r\n\r\n")
    assert status == 403


def test_malformed_requests_are_clear_4xx(probe: Server) -> None:
    status, _, raw = probe.raw(b"NONSENSE\r\n\r\n")
    assert status == 400 and "request line" in json.loads(raw)["error"]
    head = f"POST /api/stratagate/memory/probe/echo HTTP/1.1\r\nHost: 127.0.0.1:{probe.port}\r\n"
    status, _, raw = probe.raw((head + "Transfer-Encoding: chunked\r\n\r\n0\r\n\r\n").encode())
    assert status == 501
    status, _, raw = probe.raw((head + "\r\n").encode())
    assert status == 411
    status, _, raw = probe.raw((head + "Content-Length: -1\r\n\r\n").encode())
    assert status == 400


def test_sigterm_during_a_pending_request_closes_it_and_exits_0(tmp_path: Path) -> None:
    db = _make_db(tmp_path / "memory.db")
    server = _start([sys.executable, str(PROBE), "ui", "--db", str(db), "--port", "0"], stderr=subprocess.PIPE)
    try:
        with socket.create_connection(("127.0.0.1", server.port), timeout=60) as sock:
            head = f"GET /api/stratagate/memory/probe/hang HTTP/1.1\r\nHost: 127.0.0.1:{server.port}\r\n\r\n"
            sock.sendall(head.encode())
            assert server.proc.stderr is not None
            while "probe: hang started" not in (line := server.proc.stderr.readline()):
                assert line, "the server exited before the request reached its handler"
            server.proc.send_signal(signal.SIGTERM)
            assert server.proc.wait(timeout=30) == 0
            assert sock.recv(65536) == b""  # closed without a reply: the server was stopping
    finally:
        if server.proc.poll() is None:
            server.proc.kill()
        server.proc.communicate()


def test_the_job_queue_runs_only_with_a_model_route_of_its_own() -> None:
    from stratagate.config import load_settings
    from stratagate.page.server import runs_jobs

    assert runs_jobs(load_settings({}, environ={"STRATAGATE_MODEL_ROUTE": "none"}))
    direct = {"STRATAGATE_MODEL_BASE_URL": "http://127.0.0.1:1/v1", "STRATAGATE_MODEL": "m"}
    assert runs_jobs(load_settings({}, environ=direct))
    assert not runs_jobs(load_settings({}, environ={}))  # the host route: only DSH's sidecar can run the jobs


def test_a_missing_database_is_refused_with_exit_2(tmp_path: Path) -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "stratagate", "ui", "--db", str(tmp_path / "nope.db"), "--port", "0"],
        capture_output=True, text=True, env=_env(), timeout=60,
    )
    assert proc.returncode == 2
    assert proc.stdout == ""
    assert "no database at" in proc.stderr
    assert not (tmp_path / "nope.db").exists()


def test_a_port_in_use_is_refused_with_exit_2(probe: Server, tmp_path: Path) -> None:
    db = _make_db(tmp_path / "other.db")
    proc = subprocess.run(
        [sys.executable, "-m", "stratagate", "ui", "--db", str(db), "--port", str(probe.port)],
        capture_output=True, text=True, env=_env(), timeout=60,
    )
    assert proc.returncode == 2
    assert "cannot listen on 127.0.0.1" in proc.stderr
