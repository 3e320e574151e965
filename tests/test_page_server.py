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
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

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
    assert status == 411 and "Content-Length" in json.loads(raw)["error"]
    status, _, raw = probe.raw((head + "\r\n").encode())
    assert status == 411
    status, _, raw = probe.raw((head + "Content-Length: -1\r\n\r\n").encode())
    assert status == 400


def test_the_findings_of_fuzzing_are_4xx(probe: Server) -> None:
    head = f"POST /api/stratagate/memory/probe/echo HTTP/1.1\r\nHost: 127.0.0.1:{probe.port}\r\n"
    for length in ("\xb2", "\xb9\xb2", "1e3", "+1", " 1 1", "0x10", "9" * 40):  # superscripts pass str.isdigit()
        status, _, raw = probe.raw((head + f"Content-Length: {length}\r\n\r\n").encode("latin-1"))
        assert status == 400 and "Content-Length" in json.loads(raw)["error"], length
    status, _, raw = probe.raw(b"GET / HTTP/2.0\r\nHost: 127.0.0.1\r\n\r\n")
    assert status == 400 and "HTTP/1.1" in json.loads(raw)["error"]
    json_type = {"Content-Type": "application/json"}
    deep = b'{"n":' + b"[" * 50_000 + b"]" * 50_000 + b"}"
    status, _, raw = probe.request("POST", "/api/stratagate/memory/probe/echo", deep, json_type)
    assert status == 400 and "50001 deep" in json.loads(raw)["error"]
    for body in (b'{"\\ud800": 1}', b'{"text": "a\\udfffb"}', b'{"n": 1, "x": {"\\udc00k": []}}'):
        status, _, raw = probe.request("POST", "/api/stratagate/memory/probe/echo", body, json_type)
        assert status == 400 and "surrogate" in json.loads(raw)["error"], body
    for body in (b"NaN", b'{"n": Infinity}'):
        status, _, raw = probe.request("POST", "/api/stratagate/memory/probe/echo", body, json_type)
        assert status == 400 and "not valid JSON" in json.loads(raw)["error"], body


def test_a_write_takes_its_params_only_from_a_json_object_body(probe: Server) -> None:
    json_type = {"Content-Type": "application/json"}
    status, _, raw = probe.request("POST", "/api/stratagate/memory/probe/echo?n=3&text=q", b"", json_type)
    assert status == 400 and "JSON object body" in json.loads(raw)["error"]
    status, _, raw = probe.request("POST", "/api/stratagate/memory/probe/echo?n=3", b"{}", json_type)
    assert status == 400 and "query string" in json.loads(raw)["error"]
    status, _, raw = probe.request("POST", "/api/stratagate/memory/probe/echo?n=3", b"")
    assert status == 415
    for body in (b"null", b'"n=3"', b"3"):
        status, _, raw = probe.request("POST", "/api/stratagate/memory/probe/echo", body, json_type)
        assert status == 400 and "must be a JSON object" in json.loads(raw)["error"], body


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


# --- fuzzing: any head or body over a real socket is a 2xx/4xx, never a 5xx or a traceback ---------------------------

_HEAD_TEXT = st.text(st.characters(min_codepoint=0x20, max_codepoint=0xFF), max_size=30)
_PATHS = st.sampled_from([
    "/", "/index.html", "/api/stratagate/memory/probe/echo", "/api/stratagate/memory/probe/read",
    "/api/stratagate/memory/assets/memory-page.js", "/api/stratagate/memory/", "/api/stratagate/memory/overview",
    "/api/stratagate/memory/events", "/api/stratagate/memory/no-such", "*", "http://127.0.0.1/",
])
_QUERIES = st.sampled_from(["", "?n=3", "?n=%ff%fe", "?text=%ud800&n=-1", "?flag=maybe&&=", "?n=3&n=4;x"])
_KEYS = st.text(max_size=6) | st.sampled_from(["\ud800", "a\udfff", "n", "text", "flag", "namespace"])
_JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | _KEYS,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(_KEYS, inner, max_size=4), max_leaves=10,
)


@st.composite
def _heads(draw: st.DrawFn) -> bytes:
    """A request head with any request line, version, Host, Content-Length or other header; no body."""
    verb = draw(st.sampled_from(["GET", "HEAD", "POST", "PUT", "DELETE", "get", ""]) | _HEAD_TEXT)
    target = draw(_PATHS | _HEAD_TEXT) + draw(_QUERIES)
    version = draw(st.sampled_from(["HTTP/1.1", "HTTP/1.0", "HTTP/2.0", "HTTP/1.1 x", ""]) | _HEAD_TEXT)
    lines = [draw(st.sampled_from([f"{verb} {target} {version}", f"{verb} {target}", f"{verb}  {target} {version}"]))]
    if draw(st.integers(0, 5)):
        hosts = st.sampled_from(["127.0.0.1", "localhost:1", "[::1]", "evil.example"])
        lines.append("Host: " + draw(hosts | _HEAD_TEXT))
    if draw(st.booleans()):
        numbers = st.sampled_from(["0", "\xb2", "\xb9\xb2", "-1", "1e3", "0x1", str(2 << 20), "9" * 30, " 7 "])
        lines.append("Content-Length: " + draw(numbers | _HEAD_TEXT))
    for _ in range(draw(st.integers(0, 3))):
        name = draw(st.sampled_from(["Content-Type", "Origin", "Transfer-Encoding", "Sec-Fetch-Site", "Host", " X"])
                    | _HEAD_TEXT)
        lines.append(f"{name}: {draw(_HEAD_TEXT)}" if draw(st.integers(0, 4)) else name)
    return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1")


@st.composite
def _bodies(draw: st.DrawFn) -> tuple[str, str, str, bytes]:
    """(verb, target, content type, body): a well-formed head around any body (JSON of any shape, nested deep, with
    lone surrogates, or raw bytes)."""
    verb = draw(st.sampled_from(["POST", "POST", "POST", "GET", "HEAD"]))
    target = draw(_PATHS) + draw(_QUERIES)
    kind = draw(st.sampled_from(["application/json", "application/json", "application/json; charset=utf-8",
                                 "text/plain", ""]))
    shape = draw(st.sampled_from(["json", "json", "object", "deep", "bytes"]))
    if shape == "deep":
        n = draw(st.integers(60, 60_000))
        body = b'{"n":' + b"[" * n + b"]" * n + b"}"
    elif shape == "bytes":
        body = draw(st.binary(max_size=300))
    elif shape == "object":
        body = json.dumps(draw(st.dictionaries(_KEYS, _JSON, max_size=5))).encode()
    else:
        body = json.dumps(draw(_JSON)).encode()
    return verb, target, kind, body


def test_fuzzed_heads_and_bodies_get_no_5xx_and_no_traceback(tmp_path: Path) -> None:
    db = _make_db(tmp_path / "memory.db")
    log_path = tmp_path / "stderr.log"
    with log_path.open("w") as log:
        server = _start([sys.executable, str(PROBE), "ui", "--db", str(db), "--port", "0"], stderr=log)
    seen: list[int] = []

    def check(status: int, headers: dict[str, str], raw: bytes, sent: bytes) -> None:
        assert 200 <= status < 500, (status, sent[:300], raw[:300])
        if headers.get("content-type", "").startswith("application/json") and raw:
            json.loads(raw.decode("utf-8"))  # strict UTF-8 JSON
        seen.append(status)

    @settings(max_examples=150, deadline=None, database=None,
              suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
    @given(_heads())
    def heads(head: bytes) -> None:
        check(*server.raw(head), head)

    @settings(max_examples=150, deadline=None, database=None,
              suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
    @given(_bodies())
    def bodies(example: tuple[str, str, str, bytes]) -> None:
        verb, target, kind, body = example
        check(*server.request(verb, target, body, {"Content-Type": kind} if kind else {}), body)

    try:
        heads()
        bodies()
    finally:
        assert _stop(server) == 0
    assert len(seen) >= 300 and any(s == 200 for s in seen) and any(s == 400 for s in seen)
    logged = log_path.read_text()
    assert "Traceback" not in logged and "page request failed" not in logged, logged[-3000:]
