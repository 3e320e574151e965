"""``stratagate ui --db PATH``: the Memory page served standalone on a loopback address (stdlib asyncio HTTP/1.1).

The page, its assets and its JSON routes come from the same dispatcher the DSH route uses (``dispatch.handle``), so
there is one implementation. This file only speaks HTTP: one request per connection (``Connection: close``), GET,
HEAD and POST, bodies of at most 1 MiB, and DSH's browser-trust fence — the Host header must name a loopback authority
(DNS rebinding cannot forge it) and an Origin, if sent, must be that same authority (a cross-site page cannot
drive the routes) — else 403. The page has no login: it listens on loopback only."""

from __future__ import annotations

import asyncio
import base64
import contextlib
import hashlib
import json
import logging
import re
import signal
import sys
from dataclasses import dataclass
from importlib import resources
from typing import Any, TextIO
from urllib.parse import parse_qsl, urlsplit

from pydantic import ValidationError

from stratagate.app import App
from stratagate.config import Settings
from stratagate.errors import has_surrogate, safe_text
from stratagate.page import routes  # noqa: F401  (registers every page route)
from stratagate.page.dispatch import PREFIX, PageRequest, PageResponse, handle
from stratagate.safety.secrets import redact_value

log = logging.getLogger("stratagate.page.server")

MAX_BODY = 1 << 20
MAX_HEAD = 32 * 1024
MAX_BODY_DEPTH = 64
"""Deepest nesting of arrays/objects accepted in a JSON body (checked before parsing: deeper is a 400)."""
_LENGTH = re.compile(r"[0-9]{1,19}")  # ASCII digits only: str.isdigit() also takes superscripts that int() refuses
_JSON_STRING = re.compile(rb'"(?:[^"\\]|\\.)*"')
_NOT_BRACKET = bytes(b for b in range(256) if b not in b"[]{}")
HEAD_TIMEOUT_S = 30.0
VERBS = ("GET", "HEAD", "POST")
LOOPBACK_HOSTS = ("127.0.0.1", "::1", "localhost")
_JSON = "application/json; charset=utf-8"
_REASONS = {
    200: "OK", 400: "Bad Request", 403: "Forbidden", 404: "Not Found", 405: "Method Not Allowed",
    408: "Request Timeout", 411: "Length Required", 413: "Payload Too Large", 415: "Unsupported Media Type",
    431: "Request Header Fields Too Large", 500: "Internal Server Error", 501: "Not Implemented",
    503: "Service Unavailable", 505: "HTTP Version Not Supported",
}


class ListenError(Exception):
    """The port cannot be bound (in use, or not allowed)."""


class HttpError(Exception):
    def __init__(self, status: int, message: str, headers: dict[str, str] | None = None):
        super().__init__(message)
        self.status = status
        self.message = message
        self.headers = headers or {}


@dataclass
class Request:
    method: str
    target: str
    headers: dict[str, str]
    body: bytes = b""


@dataclass
class Reply:
    status: int
    content_type: str
    body: bytes
    headers: dict[str, str]


def error_reply(status: int, message: str, headers: dict[str, str] | None = None) -> Reply:
    body = safe_text(json.dumps(redact_value({"error": message}), ensure_ascii=False)).encode()
    return Reply(status, _JSON, body, headers or {})


def is_loopback_hostname(hostname: str) -> bool:
    """localhost, [::1] or any 127/8 address — the same classification as DSH's /api fence."""
    if hostname in ("localhost", "[::1]"):
        return True
    parts = hostname.split(".")
    return len(parts) == 4 and parts[0] == "127" and all(p.isdigit() and len(p) <= 3 and int(p) <= 255 for p in parts)


def _authority(value: str) -> tuple[str, str] | None:
    """(hostname lowercased, port or "") of a Host header or an Origin's netloc; None when it does not parse."""
    try:
        parts = urlsplit(f"http://{value}")
        port = parts.port
    except ValueError:
        return None
    hostname = parts.hostname
    if not hostname or parts.username is not None or parts.password is not None or parts.path or parts.query:
        return None
    if ":" in hostname:  # an IPv6 literal: compare in the bracketed form the Host header carries
        hostname = f"[{hostname}]"
    return hostname, "" if port in (None, 80) else str(port)


def fence(headers: dict[str, str]) -> str | None:
    """Why a request may not reach the routes (None when it may): DSH's isTrustedApiRequest, loopback only."""
    host = _authority(headers.get("host", ""))
    if host is None:
        return "the Host header is missing or not an authority"
    if not is_loopback_hostname(host[0]):
        return "the Host header must name a loopback address (127.0.0.1, localhost or [::1])"
    if headers.get("sec-fetch-site") == "cross-site":
        return "cross-site requests are refused"
    origin = headers.get("origin")
    if origin is None:
        return None
    try:
        parts = urlsplit(origin)
    except ValueError:
        return "the Origin header does not parse"
    if parts.scheme not in ("http", "https") or _authority(parts.netloc) != host:
        return "the Origin header must be the page's own address"
    return None


async def read_request(reader: asyncio.StreamReader) -> Request:
    """One request head and its body (Content-Length only). Raises HttpError for what cannot be served."""
    try:
        head = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), HEAD_TIMEOUT_S)
    except asyncio.LimitOverrunError:
        raise HttpError(431, f"the request head is larger than {MAX_HEAD} bytes") from None
    except asyncio.IncompleteReadError:
        raise HttpError(400, "the connection closed before the request head ended") from None
    except TimeoutError:
        raise HttpError(408, "the request head did not arrive in time") from None
    lines = head[:-4].decode("latin-1").split("\r\n")
    parts = lines[0].split(" ")
    if len(parts) != 3 or not parts[1]:
        raise HttpError(400, "the request line must be 'METHOD /path HTTP/1.1'")
    method, target, version = parts
    if version not in ("HTTP/1.0", "HTTP/1.1"):  # a client mistake here: 4xx, like every malformed head
        raise HttpError(400, "only HTTP/1.0 and HTTP/1.1 are served")
    headers: dict[str, str] = {}
    for line in lines[1:]:
        name, sep, value = line.partition(":")
        if not sep or not name or name != name.strip():
            raise HttpError(400, f"malformed header line {line[:80]!r}")
        key = name.lower()
        if key in headers and key in ("host", "content-length", "origin"):
            raise HttpError(400, f"more than one {name} header")
        headers[key] = value.strip()
    request = Request(method, target, headers)
    if "transfer-encoding" in headers:
        raise HttpError(411, "chunked request bodies are not supported; send Content-Length")
    length_text = headers.get("content-length")
    if length_text is None:
        if method == "POST":
            raise HttpError(411, "a POST needs a Content-Length header")
        return request
    if _LENGTH.fullmatch(length_text) is None:
        raise HttpError(400, "the Content-Length header is not a number (ASCII digits)")
    length = int(length_text)
    if length > MAX_BODY:
        raise HttpError(413, f"the request body is larger than {MAX_BODY} bytes (1 MiB)")
    try:
        request.body = await asyncio.wait_for(reader.readexactly(length), HEAD_TIMEOUT_S)
    except asyncio.IncompleteReadError:
        raise HttpError(400, "the connection closed before the request body ended") from None
    except TimeoutError:
        raise HttpError(408, "the request body did not arrive in time") from None
    return request


def _body_depth(raw: bytes) -> int:
    """How deeply arrays and objects nest in a JSON body (brackets inside strings do not count)."""
    if raw.count(b"[") + raw.count(b"{") <= MAX_BODY_DEPTH:
        return 0  # cannot exceed the limit
    depth = deepest = 0
    for byte in _JSON_STRING.sub(b"", raw).translate(None, _NOT_BRACKET):
        depth += 1 if byte in b"[{" else -1
        deepest = max(deepest, depth)
    return deepest


def _surrogate_in(value: Any) -> bool:
    if isinstance(value, str):
        return has_surrogate(value)
    if isinstance(value, dict):
        return any(_surrogate_in(k) or _surrogate_in(v) for k, v in value.items())
    if isinstance(value, list):
        return any(_surrogate_in(v) for v in value)
    return False


def _refuse_constant(name: str) -> Any:
    raise ValueError(f"{name} is not valid JSON")


def json_body(raw: bytes) -> Any:
    """The JSON value of a request body: RFC 8259 only, at most MAX_BODY_DEPTH deep, valid Unicode; else 400."""
    depth = _body_depth(raw)
    if depth > MAX_BODY_DEPTH:
        raise HttpError(400, f"the request body nests arrays/objects {depth} deep; the limit is {MAX_BODY_DEPTH}")
    try:
        value = json.loads(raw.decode("utf-8"), parse_constant=_refuse_constant)
    except (UnicodeDecodeError, ValueError, RecursionError) as exc:
        raise HttpError(400, f"the request body is not valid JSON: {safe_text(str(exc))[:300]}") from None
    if _surrogate_in(value):
        raise HttpError(400, "the request body holds a lone UTF-16 surrogate (not valid Unicode)")
    return value


def _script_hashes(html: str) -> str:
    """CSP hashes of the page's own inline scripts: they run, nothing injected does."""
    found = re.findall(r"<script(?:\s[^>]*)?>(.*?)</script>", html, flags=re.S | re.I)
    digests = (base64.b64encode(hashlib.sha256(s.encode()).digest()).decode() for s in found if s.strip())
    return " ".join(f"'sha256-{d}'" for d in digests)


def index_reply() -> Reply:
    file = resources.files("stratagate.page").joinpath("static", "index.html")
    if not file.is_file():
        return error_reply(404, "the page's index.html is not installed")
    html = file.read_text("utf-8")
    csp = (
        f"default-src 'self'; script-src 'self' {_script_hashes(html)}; style-src 'self' 'unsafe-inline'; "
        "img-src 'self' data: blob:; connect-src 'self'; frame-ancestors 'none'; base-uri 'none'; form-action 'none'"
    )
    return Reply(200, "text/html; charset=utf-8", html.encode(), {"Content-Security-Policy": csp})


def _encode(page: PageResponse) -> Reply:
    if isinstance(page.body, str) and not page.content_type.startswith("application/json"):
        body = page.body.encode()
    else:
        body = safe_text(json.dumps(page.body, ensure_ascii=False)).encode()
    headers = {"Allow": ", ".join(page.body["allow"])} if page.status == 405 and isinstance(page.body, dict) and \
        isinstance(page.body.get("allow"), list) else {}
    return Reply(page.status, page.content_type, body, headers)


async def respond(app: App, request: Request) -> Reply:
    """The reply to one parsed request: fence, verb, the page itself, or a route of the dispatcher."""
    refused = fence(request.headers)
    if refused is not None:
        return error_reply(403, refused)
    if request.method not in VERBS:
        return error_reply(405, f"{request.method} is not served; use GET, HEAD or POST", {"Allow": ", ".join(VERBS)})
    if not request.target.startswith("/"):
        return error_reply(400, "the request target must be a path")
    url = urlsplit(request.target)
    path = url.path
    if path in ("/", "/index.html"):
        if request.method == "POST":
            return error_reply(405, "the page takes GET or HEAD", {"Allow": "GET, HEAD"})
        return index_reply()
    if path != PREFIX and not path.startswith(PREFIX + "/"):
        return error_reply(404, f"no page at {path}; the Memory page is at / and its routes under {PREFIX}/")
    body: Any = None
    if request.method == "POST":  # a write: its params are a JSON object in the body (dispatch refuses others)
        kind = request.headers.get("content-type", "").split(";", 1)[0].strip().lower()
        if kind != "application/json":
            return error_reply(415, "a POST body must be JSON (Content-Type: application/json)")
        if not request.body.strip():
            return error_reply(400, "a write (POST) takes its params as a JSON object body; the body is empty")
        body = json_body(request.body)
    query = dict(parse_qsl(url.query, keep_blank_values=True))
    try:
        page_request = PageRequest(method=request.method, path=path, query=query, body=body)
    except ValidationError as exc:
        return error_reply(400, f"bad request: {exc.errors()[0]['msg']}")
    return _encode(await handle(app, page_request))


def _wire(reply: Reply, head_only: bool) -> bytes:
    headers = {
        "Content-Type": reply.content_type,
        "Content-Length": str(len(reply.body)),
        "Cache-Control": "no-store",
        "X-Content-Type-Options": "nosniff",
        "Referrer-Policy": "no-referrer",
        "Connection": "close",
        **reply.headers,
    }
    lines = [f"HTTP/1.1 {reply.status} {_REASONS.get(reply.status, 'Status')}"]
    lines += [f"{k}: {v}" for k, v in headers.items()]
    return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1") + (b"" if head_only else reply.body)


class PageServer:
    """The listening socket and its connections; ``close`` ends the in-flight ones (a long poll included)."""

    def __init__(self, app: App):
        self.app = app
        self.server: asyncio.Server | None = None
        self._connections: set[asyncio.Task[None]] = set()

    async def start(self, host: str, port: int) -> int:
        self.server = await asyncio.start_server(self._connection, host, port, limit=MAX_HEAD)
        return int(self.server.sockets[0].getsockname()[1])

    async def _connection(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        assert task is not None
        self._connections.add(task)
        head_only = False
        try:
            try:
                request = await read_request(reader)
                head_only = request.method == "HEAD"
                reply = await respond(self.app, request)
            except HttpError as exc:
                reply = error_reply(exc.status, exc.message, exc.headers)
            except Exception as exc:  # a bug or storage trouble: one clear 500, the server keeps serving
                log.exception("page request failed")
                reply = error_reply(500, f"internal error: {type(exc).__name__}")
            writer.write(_wire(reply, head_only))
            with contextlib.suppress(ConnectionError):
                await writer.drain()
        finally:
            self._connections.discard(task)
            writer.close()
            with contextlib.suppress(Exception):
                await writer.wait_closed()

    async def close(self) -> None:
        if self.server is not None:
            self.server.close()
        for task in list(self._connections):
            task.cancel()
        for task in list(self._connections):
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task
        if self.server is not None:
            with contextlib.suppress(Exception):
                await asyncio.wait_for(self.server.wait_closed(), 5)


def runs_jobs(settings: Settings) -> bool:
    """Whether this process may run the job queue: only with a model route of its own (direct or zero-model).
    The host route needs DSH's peer; claiming jobs here would fail them against the sidecar that can run them."""
    return settings.zero_model or bool(settings.model_base_url)


async def serve_ui(settings: Settings, host: str, port: int, out: TextIO = sys.stdout) -> int:
    """Open the database, listen, print the URL line, serve until SIGINT/SIGTERM; 0 on a clean stop."""
    # The handlers first: a Ctrl-C while the app starts must stop it in order too (a KeyboardInterrupt there leaves
    # the database's worker thread waiting on a closed loop, and the process hangs).
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        with contextlib.suppress(NotImplementedError, RuntimeError):
            loop.add_signal_handler(sig, stop.set)
    app = App(settings)
    jobs = runs_jobs(settings)
    await app.start(jobs=jobs)
    if not jobs:
        log.info("the model route is the host's: jobs (and retried jobs) run in the DSH sidecar, not here")
    server = PageServer(app)
    try:
        bound = await server.start(host, port)
    except OSError as exc:
        await app.stop()
        raise ListenError(f"cannot listen on {host}:{port}: {exc.strerror or exc}") from None
    if not stop.is_set():
        shown = f"[{host}]" if ":" in host else host
        print(f"StrataGate Memory: http://{shown}:{bound}/", file=out, flush=True)
    try:
        await stop.wait()
    finally:
        log.info("stopping the Memory page server")
        await server.close()
        await app.stop()
    return 0
