"""Scripted OpenAI-compatible chat-completions server for tests (stdlib only, real HTTP on 127.0.0.1).

In-process use::

    with ScriptedModelServer() as server:
        server.push(tool_call("stratagate_summarize_block", {"l1_summary": "..."}))
        route = OpenAIRoute(server.base_url, None, "scripted-model", timeout=5)
        ...
        body = server.wait_for_requests(1, timeout=5)[0]

Standalone (for subprocess tests and demos)::

    python tests/support/model_server.py --port 0

prints ``listening <base_url>`` on stdout and answers every tool-offering request with a call whose
arguments are generated from the offered tool's JSON schema (see ``example_from_schema``).

Behaviours are consumed one per POST /chat/completions (FIFO); when the queue is empty ``server.default``
decides.

Usage: every reply reports the prompt's size and its prefix-cache hit the way DeepSeek's API does
(``prompt_cache_hit_tokens`` / ``prompt_cache_miss_tokens``) and OpenAI's does
(``prompt_tokens_details.cached_tokens``): the prompt (tools + messages, serialized canonically) is counted in
tokens, and the hit is its longest common token prefix with the previous request of the same conversation — keyed
by system prompt + first user message, so DSH's title request and a plugin's own summary calls are conversations of
their own (``PrefixCache``).
``server.usages[i]`` is the usage reported for ``server.requests[i]``.

Each behaviour renders itself through ``respond(exchange)`` rather than being dispatched by
isinstance, so behaviours created from a second import of this module (``support.model_server`` vs
``tests.support.model_server``) still work.
"""

from __future__ import annotations

import argparse
import contextlib
import copy
import json
import signal
import sys
import threading
import time
import traceback
import uuid
from collections import deque
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Protocol

DEFAULT_MODEL = "scripted-model"
USAGE = {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15}  # reported when no prompt was accounted


class Behaviour(Protocol):
    def respond(self, ex: Exchange) -> None: ...


# ----------------------------------------------------------------------------------------- wire layer


class Exchange:
    """One request being answered: the parsed body plus helpers to emit OpenAI wire format."""

    def __init__(self, handler: _Handler, body: dict[str, Any], server: ScriptedModelServer) -> None:
        self.handler = handler
        self.body = body
        self.server = server
        self.stream = bool(body.get("stream"))
        self.model = str(body.get("model") or DEFAULT_MODEL)
        self.id = "chatcmpl-" + uuid.uuid4().hex[:12]
        self.created = int(time.time())
        self.headers_sent = False
        self.prompt_usage: PromptUsage | None = None  # set by the server before the behaviour answers

    def usage(self, completion: str = "") -> dict[str, Any]:
        """The usage object of this reply: the prompt's accounting plus the completion's size."""
        if self.prompt_usage is None:
            return dict(USAGE)
        return self.prompt_usage.wire(count_tokens(completion) if completion else 0)

    # -- request introspection

    def offered_tools(self) -> list[dict[str, Any]]:
        return [t.get("function", {}) for t in self.body.get("tools") or [] if isinstance(t, dict)]

    def target_tool(self) -> str | None:
        """The forced tool if tool_choice names one, else the first offered tool."""
        choice = self.body.get("tool_choice")
        if isinstance(choice, dict):
            name = (choice.get("function") or {}).get("name")
            if name:
                return str(name)
        tools = self.offered_tools()
        return str(tools[0].get("name")) if tools else None

    # -- plain JSON

    def send_json(self, status: int, obj: Any) -> None:
        data = json.dumps(obj).encode()
        h = self.handler
        self.headers_sent = True
        h.send_response(status)
        h.send_header("Content-Type", "application/json")
        h.send_header("Content-Length", str(len(data)))
        h.send_header("Connection", "close")
        h.end_headers()
        h.wfile.write(data)
        h.wfile.flush()

    def send_error(self, status: int, message: str) -> None:
        self.send_json(status, {"error": {"message": message, "type": "scripted_error", "code": status}})

    def send_completion(self, message: dict[str, Any], finish_reason: str | None) -> None:
        self.send_json(
            200,
            {
                "id": self.id,
                "object": "chat.completion",
                "created": self.created,
                "model": self.model,
                "choices": [{"index": 0, "message": message, "finish_reason": finish_reason}],
                "usage": self.usage(_completion_text(message)),
            },
        )

    # -- SSE stream (chunked transfer encoding, like real servers; lets stream_break look like a real break)

    def start_stream(self) -> None:
        h = self.handler
        h.send_response(200)
        h.send_header("Content-Type", "text/event-stream")
        h.send_header("Cache-Control", "no-cache")
        h.send_header("Transfer-Encoding", "chunked")
        h.send_header("Connection", "close")
        h.end_headers()
        self.headers_sent = True

    def _write_chunked(self, data: bytes) -> None:
        w = self.handler.wfile
        w.write(f"{len(data):x}\r\n".encode() + data + b"\r\n")
        w.flush()

    def chunk(self, choices: list[dict[str, Any]], **extra: Any) -> None:
        obj: dict[str, Any] = {
            "id": self.id,
            "object": "chat.completion.chunk",
            "created": self.created,
            "model": self.model,
            "choices": choices,
        }
        obj.update(extra)
        self._write_chunked(b"data: " + json.dumps(obj).encode() + b"\n\n")

    def delta(self, delta: dict[str, Any], finish_reason: str | None = None) -> None:
        self.chunk([{"index": 0, "delta": delta, "finish_reason": finish_reason}])

    def finish_stream(self, finish_reason: str, completion: str = "") -> None:
        self.delta({}, finish_reason)
        self.chunk([], usage=self.usage(completion))
        self._write_chunked(b"data: [DONE]\n\n")
        self.handler.wfile.write(b"0\r\n\r\n")
        self.handler.wfile.flush()

    def abort(self) -> None:
        """Drop the connection without completing the chunked body: the client sees a broken stream."""
        self.handler.close_connection = True
        self.handler.wfile.flush()

    # -- composite replies used by the behaviours

    def reply_tool_call(self, name: str, arguments: str, content: str, finish_reason: str) -> None:
        call_id = "call_" + uuid.uuid4().hex[:8]
        if not self.stream:
            msg: dict[str, Any] = {
                "role": "assistant",
                "content": content or None,
                "tool_calls": [{"id": call_id, "type": "function", "function": {"name": name, "arguments": arguments}}],
            }
            self.send_completion(msg, finish_reason)
            return
        self.start_stream()
        self.delta({"role": "assistant", "content": content or None})
        self.delta(
            {
                "tool_calls": [
                    {
                        "index": 0,
                        "id": call_id,
                        "type": "function",
                        "function": {"name": name, "arguments": ""},
                    }
                ]
            }
        )
        # Split the arguments over several deltas so the client really has to reassemble them.
        step = max(1, len(arguments) // 3)
        for i in range(0, len(arguments), step):
            self.delta({"tool_calls": [{"index": 0, "function": {"arguments": arguments[i : i + step]}}]})
        self.finish_stream(finish_reason, content + name + arguments)

    def reply_text(self, content: str, finish_reason: str) -> None:
        if not self.stream:
            self.send_completion({"role": "assistant", "content": content}, finish_reason)
            return
        self.start_stream()
        self.delta({"role": "assistant", "content": ""})
        step = max(1, len(content) // 3)
        for i in range(0, len(content), step):
            self.delta({"content": content[i : i + step]})
        self.finish_stream(finish_reason, content)


def _completion_text(message: dict[str, Any]) -> str:
    parts = [str(message.get("content") or "")]
    for call in message.get("tool_calls") or []:
        fn = call.get("function") or {}
        parts += [str(fn.get("name") or ""), str(fn.get("arguments") or "")]
    return "".join(parts)


# ----------------------------------------------------------------------------------------- prefix cache


def count_tokens(text: str) -> int:
    return len(encode(text))


def encode(text: str) -> list[int]:
    """DeepSeek token ids (stratagate.tokens, exact and offline); ~4 chars per token where it is not importable
    (the standalone server without the sidecar on the path)."""
    try:
        from stratagate.tokens import encode as ds_encode
    except ImportError:
        data = text.encode()
        return [hash(data[i : i + 4]) for i in range(0, len(data), 4)]
    return list(ds_encode(text))


def serialize_prompt(body: dict[str, Any]) -> str:
    """The prompt as a provider would feed it, canonically: the tool schemas, then each message in order.

    One JSON line per item (sorted keys), so equal prefixes of the item list give equal text prefixes.
    """
    lines = [json.dumps(t, sort_keys=True, ensure_ascii=False) for t in body.get("tools") or []]
    lines += [json.dumps(m, sort_keys=True, ensure_ascii=False) for m in body.get("messages") or []]
    return "\n".join(lines)


def conversation_key(body: dict[str, Any]) -> str:
    """System prompt + first user message: the same for every step of one DSH session, different for its title
    request and for a plugin's own model calls (their system prompts differ)."""
    system, first_user = "", ""
    for m in body.get("messages") or []:
        if not isinstance(m, dict):
            continue
        if m.get("role") in ("system", "developer") and not system:
            system = json.dumps(m.get("content"), sort_keys=True, ensure_ascii=False)
        if m.get("role") == "user":
            first_user = json.dumps(m.get("content"), sort_keys=True, ensure_ascii=False)
            break
    return f"{system}\x00{first_user}"


def common_prefix(a: list[int], b: list[int]) -> int:
    """Length of the longest common prefix of two token lists (halving search over slices: C-speed compares)."""
    n = min(len(a), len(b))
    if a[:n] == b[:n]:
        return n
    lo, hi = 0, n  # a[:lo] == b[:lo] and a[:hi] != b[:hi]
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if a[:mid] == b[:mid]:
            lo = mid
        else:
            hi = mid
    return lo


@dataclass(frozen=True)
class PromptUsage:
    """One request's prompt accounting: its size and how much of it the previous request already had cached."""

    prompt_tokens: int
    cache_hit_tokens: int
    conversation: str = ""  # a short digest of the conversation key

    @property
    def cache_miss_tokens(self) -> int:
        return self.prompt_tokens - self.cache_hit_tokens

    def wire(self, completion_tokens: int = 0) -> dict[str, Any]:
        return {
            "prompt_tokens": self.prompt_tokens,
            "completion_tokens": completion_tokens,
            "total_tokens": self.prompt_tokens + completion_tokens,
            "prompt_cache_hit_tokens": self.cache_hit_tokens,
            "prompt_cache_miss_tokens": self.cache_miss_tokens,
            "prompt_tokens_details": {"cached_tokens": self.cache_hit_tokens},
        }


class PrefixCache:
    """DeepSeek-style context cache: a request hits on its longest common token prefix with the previous request
    of the same conversation (a real cache would also keep older prefixes; the previous one is what a prompt that
    only ever grows or changes at one point needs)."""

    def __init__(self) -> None:
        self._last: dict[str, list[int]] = {}

    def account(self, body: dict[str, Any]) -> PromptUsage:
        key = conversation_key(body)
        tokens = encode(serialize_prompt(body))
        previous = self._last.get(key)
        hit = common_prefix(previous, tokens) if previous is not None else 0
        self._last[key] = tokens
        digest = uuid.uuid5(uuid.NAMESPACE_OID, key).hex[:8]
        return PromptUsage(len(tokens), hit, digest)


# ----------------------------------------------------------------------------------------- behaviours


@dataclass(frozen=True)
class ToolCallReply:
    name: str
    arguments: str
    content: str = ""
    finish_reason: str = "tool_calls"

    def respond(self, ex: Exchange) -> None:
        ex.reply_tool_call(self.name, self.arguments, self.content, self.finish_reason)


@dataclass(frozen=True)
class TextReply:
    content: str
    finish_reason: str = "stop"

    def respond(self, ex: Exchange) -> None:
        ex.reply_text(self.content, self.finish_reason)


@dataclass(frozen=True)
class TruncatedReply:
    partial: str
    tool_name: str | None = None
    as_text: bool = False

    def respond(self, ex: Exchange) -> None:
        name = self.tool_name or ex.target_tool()
        if self.as_text or not name:
            ex.reply_text(self.partial, "length")
        else:
            ex.reply_tool_call(name, self.partial, "", "length")


@dataclass(frozen=True)
class HttpErrorReply:
    status: int = 500
    message: str = "scripted server error"

    def respond(self, ex: Exchange) -> None:
        ex.send_error(self.status, self.message)


@dataclass(frozen=True)
class DelayReply:
    """Hold the request, then answer with ``then``. Waits on Events, never a bare sleep, so server
    shutdown (or a test-controlled ``until`` event) releases it immediately."""

    seconds: float
    then: Behaviour | None = None
    until: threading.Event | None = None

    def respond(self, ex: Exchange) -> None:
        if self.until is None:
            ex.server.stopping.wait(self.seconds)
        else:
            # stop() sets registered gates too, so a closed gate never blocks shutdown.
            with ex.server.gate(self.until):
                self.until.wait(self.seconds)
        if ex.server.stopping.is_set():
            ex.abort()
            return
        follow = self.then if self.then is not None else ex.server.default(ex.body)
        follow.respond(ex)


@dataclass(frozen=True)
class StreamBreakReply:
    partial: str = '{"partial": '

    def respond(self, ex: Exchange) -> None:
        if not ex.stream:
            ex.abort()  # nothing sent at all: the client sees the connection close
            return
        ex.start_stream()
        name = ex.target_tool()
        if name:
            ex.delta(
                {
                    "role": "assistant",
                    "tool_calls": [
                        {
                            "index": 0,
                            "id": "call_broken",
                            "type": "function",
                            "function": {"name": name, "arguments": self.partial},
                        }
                    ],
                }
            )
        else:
            ex.delta({"role": "assistant", "content": self.partial})
        ex.abort()


@dataclass(frozen=True)
class NonStreamingReply:
    """Answer with a plain JSON body even if the client asked for a stream (some servers ignore stream)."""

    then: Behaviour

    def respond(self, ex: Exchange) -> None:
        ex.stream = False
        self.then.respond(ex)


def tool_call(name: str, arguments: dict[str, Any] | str, *, content: str = "") -> ToolCallReply:
    """A call to ``name``; a str ``arguments`` is sent verbatim (so it may be invalid JSON)."""
    args = arguments if isinstance(arguments, str) else json.dumps(arguments)
    return ToolCallReply(name, args, content)


def text(content: str) -> TextReply:
    return TextReply(content)


def truncated(partial: str, *, tool_name: str | None = None, as_text: bool = False) -> TruncatedReply:
    """finish_reason "length": ``partial`` becomes the tool arguments (forced/first tool) unless as_text."""
    return TruncatedReply(partial, tool_name, as_text)


def http_error(status: int = 500, message: str = "scripted server error") -> HttpErrorReply:
    return HttpErrorReply(status, message)


def delay(seconds: float, then: Behaviour | None = None, *, until: threading.Event | None = None) -> DelayReply:
    """Wait up to ``seconds`` or until ``until`` is set, then answer with ``then`` (None: server.default)."""
    return DelayReply(seconds, then, until)


def stream_break(partial: str = '{"partial": ') -> StreamBreakReply:
    return StreamBreakReply(partial)


def non_streaming(then: Behaviour) -> NonStreamingReply:
    return NonStreamingReply(then)


def _no_script(body: dict[str, Any]) -> Behaviour:
    return http_error(500, "ScriptedModelServer: no behaviour queued and no default set")


def auto_tool_call(
    builder: Callable[[str, dict[str, Any]], dict[str, Any] | str], *, fallback_text: str = "ok"
) -> Callable[[dict[str, Any]], Behaviour]:
    """Default that calls the forced (else first) offered tool with ``builder(tool_name, body)`` as
    arguments; requests without tools get ``fallback_text``."""

    def decide(body: dict[str, Any]) -> Behaviour:
        tools = [t.get("function", {}) for t in body.get("tools") or [] if isinstance(t, dict)]
        if not tools:
            return text(fallback_text)
        choice = body.get("tool_choice")
        forced = (choice.get("function") or {}).get("name") if isinstance(choice, dict) else None
        name = str(forced or tools[0].get("name"))
        return tool_call(name, builder(name, body))

    return decide


# ----------------------------------------------------------------------------------------- schema examples


def tool_schema(body: dict[str, Any], tool_name: str) -> dict[str, Any]:
    for t in body.get("tools") or []:
        fn = t.get("function", {}) if isinstance(t, dict) else {}
        if fn.get("name") == tool_name:
            return dict(fn.get("parameters") or {})
    return {}


def example_from_schema(schema: dict[str, Any], _root: dict[str, Any] | None = None, _depth: int = 0) -> Any:
    """A minimal instance satisfying ``schema``: required fields only, one item per array, enums take
    their first value, local $refs resolved. Good enough for pydantic-generated schemas."""
    root = schema if _root is None else _root
    if _depth > 32:
        return None
    if "$ref" in schema:
        target: Any = root
        for part in str(schema["$ref"]).lstrip("#/").split("/"):
            target = target.get(part, {}) if isinstance(target, dict) else {}
        return example_from_schema(target, root, _depth + 1)
    if "const" in schema:
        return copy.deepcopy(schema["const"])
    if schema.get("enum"):
        return copy.deepcopy(schema["enum"][0])
    for key in ("anyOf", "oneOf"):
        if schema.get(key):
            options = [o for o in schema[key] if o.get("type") != "null"] or schema[key]
            return example_from_schema(options[0], root, _depth + 1)
    if schema.get("allOf"):
        merged: dict[str, Any] = {}
        for part in schema["allOf"]:
            value = example_from_schema(part, root, _depth + 1)
            if isinstance(value, dict):
                merged.update(value)
            else:
                return value
        return merged
    kind = schema.get("type")
    if isinstance(kind, list):
        kind = next((k for k in kind if k != "null"), "null")
    if kind is None:
        kind = "object" if "properties" in schema else "string"
    if kind == "object":
        props = schema.get("properties") or {}
        return {
            name: example_from_schema(props.get(name, {}), root, _depth + 1) for name in schema.get("required") or []
        }
    if kind == "array":
        item_schema = schema.get("items") or {}
        count = max(1, int(schema.get("minItems") or 0))
        return [example_from_schema(item_schema, root, _depth + 1) for _ in range(count)]
    if kind == "string":
        value = "example"
        min_len = int(schema.get("minLength") or 0)
        if len(value) < min_len:
            value = value + "x" * (min_len - len(value))
        max_len = schema.get("maxLength")
        return value[: int(max_len)] if max_len is not None else value
    if kind == "boolean":
        return True
    if kind in ("integer", "number"):
        if "minimum" in schema:
            value = schema["minimum"]
        elif "exclusiveMinimum" in schema:
            value = schema["exclusiveMinimum"] + 1
        else:
            value = 0
        return int(value) if kind == "integer" else float(value)
    return None


def auto_schema_tool_call() -> Callable[[dict[str, Any]], Behaviour]:
    """Default answering any tool request with schema-valid example arguments."""
    return auto_tool_call(lambda name, body: example_from_schema(tool_schema(body, name)))


# ----------------------------------------------------------------------------------------- server


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: _HTTPServer
    timeout = 30  # a client that connects and never sends must not pin a thread forever

    def log_message(self, format: str, *args: Any) -> None:
        if self.server.owner.verbose:
            sys.stderr.write("model_server: " + (format % args) + "\n")

    def do_GET(self) -> None:
        owner = self.server.owner
        if self.path.rstrip("/").endswith("/models"):
            payload = {
                "object": "list",
                "data": [{"id": owner.model_name, "object": "model", "owned_by": "tests"}],
            }
            Exchange(self, {}, owner).send_json(200, payload)
        else:
            Exchange(self, {}, owner).send_error(404, f"no route for GET {self.path}")
        self.close_connection = True

    def do_POST(self) -> None:
        owner = self.server.owner
        self.close_connection = True  # one request per connection keeps shutdown joins instant
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        try:
            body = json.loads(raw or b"{}")
        except ValueError:
            Exchange(self, {}, owner).send_error(400, "request body is not JSON")
            return
        if not self.path.rstrip("/").endswith("/chat/completions"):
            Exchange(self, body, owner).send_error(404, f"no route for POST {self.path}")
            return
        ex = Exchange(self, body, owner)
        try:
            owner._accept(body, {k.lower(): v for k, v in self.headers.items()}, ex).respond(ex)
        except (BrokenPipeError, ConnectionResetError):
            pass  # the client gave up (timeout test): nothing to report
        except Exception as exc:
            # A broken script (e.g. a failing builder) must be loud, not a silent hang.
            traceback.print_exc(file=sys.stderr)
            if not ex.headers_sent:
                ex.send_error(500, f"ScriptedModelServer behaviour failed: {exc!r}")
        finally:
            owner._done()


class _HTTPServer(ThreadingHTTPServer):
    daemon_threads = True
    owner: ScriptedModelServer


@dataclass(eq=False)
class ScriptedModelServer:
    """Real HTTP server on 127.0.0.1:<ephemeral>; see the module docstring."""

    host: str = "127.0.0.1"
    port: int = 0
    model_name: str = DEFAULT_MODEL
    verbose: bool = False
    default: Callable[[dict[str, Any]], Behaviour] = _no_script
    stopping: threading.Event = field(default_factory=threading.Event)

    def __post_init__(self) -> None:
        self._cond = threading.Condition()
        self._queue: deque[Behaviour] = deque()
        self._requests: list[dict[str, Any]] = []
        self._headers: list[dict[str, str]] = []
        self._usages: list[PromptUsage] = []
        self.prefix_cache = PrefixCache()
        self._in_flight = 0
        self._max_in_flight = 0
        self._gates: set[threading.Event] = set()
        self._httpd: _HTTPServer | None = None
        self._thread: threading.Thread | None = None

    # -- lifecycle

    def start(self) -> ScriptedModelServer:
        if self._httpd is not None:
            return self
        self.stopping.clear()
        httpd = _HTTPServer((self.host, self.port), _Handler)
        httpd.owner = self
        self._httpd = httpd
        self._thread = threading.Thread(
            target=httpd.serve_forever,
            kwargs={"poll_interval": 0.05},
            name="scripted-model-server",
            daemon=True,
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        httpd, self._httpd = self._httpd, None
        if httpd is None:
            return
        self.stopping.set()  # releases every DelayReply before we join handler threads
        with self._cond:
            gates = list(self._gates)
        for gate in gates:
            gate.set()
        httpd.shutdown()
        httpd.server_close()
        if self._thread is not None:
            self._thread.join(timeout=5)

    def __enter__(self) -> ScriptedModelServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    @property
    def base_url(self) -> str:
        if self._httpd is None:
            raise RuntimeError("ScriptedModelServer is not running")
        return f"http://{self.host}:{self._httpd.server_address[1]}/v1"

    # -- scripting

    def push(self, *behaviours: Behaviour) -> None:
        with self._cond:
            self._queue.extend(behaviours)

    def pending(self) -> int:
        with self._cond:
            return len(self._queue)

    @property
    def requests(self) -> list[dict[str, Any]]:
        with self._cond:
            return list(self._requests)

    @property
    def usages(self) -> list[PromptUsage]:
        """The prompt accounting reported for each chat request (same indexes as ``requests``)."""
        with self._cond:
            return list(self._usages)

    @property
    def headers(self) -> list[dict[str, str]]:
        """Request headers per chat request, names lower-cased."""
        with self._cond:
            return list(self._headers)

    @property
    def in_flight(self) -> int:
        with self._cond:
            return self._in_flight

    @property
    def max_in_flight(self) -> int:
        with self._cond:
            return self._max_in_flight

    def wait_for_requests(self, n: int, timeout: float = 10.0) -> list[dict[str, Any]]:
        """Block until at least ``n`` chat requests arrived; raise TimeoutError otherwise."""
        with self._cond:
            if not self._cond.wait_for(lambda: len(self._requests) >= n, timeout):
                raise TimeoutError(f"expected {n} requests, got {len(self._requests)} within {timeout}s")
            return list(self._requests)

    def wait_for_in_flight(self, n: int, timeout: float = 10.0) -> int:
        """Block until at least ``n`` chat requests are being handled at once."""
        with self._cond:
            if not self._cond.wait_for(lambda: self._in_flight >= n, timeout):
                raise TimeoutError(f"expected {n} requests in flight, have {self._in_flight} after {timeout}s")
            return self._in_flight

    @contextlib.contextmanager
    def gate(self, event: threading.Event) -> Iterator[None]:
        """Register a test-controlled Event that a handler blocks on, so stop() can release it."""
        with self._cond:
            self._gates.add(event)
        if self.stopping.is_set():
            event.set()
        try:
            yield
        finally:
            with self._cond:
                self._gates.discard(event)

    # -- handler callbacks

    def _accept(self, body: dict[str, Any], headers: dict[str, str], ex: Exchange | None = None) -> Behaviour:
        with self._cond:
            # Accounted under the lock so "the previous request" is the previous one to arrive, deterministically.
            usage = self.prefix_cache.account(body)
            if ex is not None:
                ex.prompt_usage = usage
            self._usages.append(usage)
            self._requests.append(body)
            self._headers.append(headers)
            self._in_flight += 1
            self._max_in_flight = max(self._max_in_flight, self._in_flight)
            behaviour = self._queue.popleft() if self._queue else None
            self._cond.notify_all()
        return behaviour if behaviour is not None else self.default(body)

    def _done(self) -> None:
        with self._cond:
            self._in_flight -= 1
            self._cond.notify_all()


def _interrupt(signum: int, frame: object) -> None:
    raise KeyboardInterrupt


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Scripted OpenAI-compatible model server (schema-driven).")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--model", default=DEFAULT_MODEL)
    parser.add_argument("--verbose", action="store_true")
    args = parser.parse_args(argv)
    server = ScriptedModelServer(host=args.host, port=args.port, model_name=args.model, verbose=args.verbose)
    server.default = auto_schema_tool_call()
    server.start()
    print(f"listening {server.base_url}", flush=True)
    signal.signal(signal.SIGTERM, _interrupt)  # a subprocess parent's terminate() stops us cleanly
    try:
        threading.Event().wait()
    except KeyboardInterrupt:
        pass
    finally:
        server.stop()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
