"""`stratagate serve`: wire stdin/stdout to the peer, run until shutdown, EOF or a broken pipe."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import signal
import sys
import threading
from typing import Any

from jsonrpcserver.async_dispatcher import dispatch_request
from jsonrpcserver.dispatcher import create_request, to_response
from jsonrpcserver.response import ServerErrorResponse, serialize_error, to_serializable_one
from jsonrpcserver.sentinels import NOID

from stratagate import errors
from stratagate.app import App
from stratagate.capture.order import ArrivalOrder, Place, holding
from stratagate.config import Settings
from stratagate.errors import has_surrogate
from stratagate.rpc.methods import METHODS, load_methods, module_to_load
from stratagate.rpc.peer import Peer, error_response

log = logging.getLogger("stratagate.server")


class _BlockingWriter:
    """Fallback when stdout is a regular file (no pipe transport): plain blocking writes."""

    def __init__(self, file: Any):
        self._file = file

    def write(self, data: bytes) -> None:
        self._file.write(data)

    async def drain(self) -> None:
        return None


async def _stdio(in_fd: int, out_fd: int) -> tuple[asyncio.StreamReader, Any]:
    loop = asyncio.get_running_loop()
    reader = asyncio.StreamReader()
    stdin = os.fdopen(in_fd, "rb", 0)
    try:
        await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), stdin)
    except ValueError:  # stdin is a regular file: feed the reader from a thread

        def pump() -> None:
            while chunk := stdin.read(1 << 16):
                loop.call_soon_threadsafe(reader.feed_data, chunk)
            loop.call_soon_threadsafe(reader.feed_eof)

        threading.Thread(target=pump, daemon=True, name="stdin-pump").start()
    stdout = os.fdopen(out_fd, "wb", 0)
    try:
        transport, protocol = await loop.connect_write_pipe(asyncio.streams.FlowControlMixin, stdout)
        writer: Any = asyncio.StreamWriter(transport, protocol, reader, loop)
    except ValueError:
        writer = _BlockingWriter(stdout)
    return reader, writer


_MEMBERS = {"jsonrpc", "method", "params", "id"}
CAPTURE_METHODS = frozenset({"turn.capture", "turn.capture_raw"})
"""Writes of a turn: committed in arrival order, and every later request waits for them (read-your-writes)."""


def request_problem(message: Any) -> str | None:
    """What is wrong with one request object, in words (None when it is well-formed)."""
    if not isinstance(message, dict):
        return f"each request must be a JSON object, got {type(message).__name__}"
    if message.get("jsonrpc") != "2.0":
        return 'member "jsonrpc" must be exactly "2.0"'
    if not isinstance(message.get("method"), str) or not message["method"]:
        return 'member "method" must be a non-empty string'
    if "params" in message and not isinstance(message["params"], dict | list):
        return 'member "params" must be an object (or omitted)'
    if "id" in message:
        rid = message["id"]
        if isinstance(rid, bool) or not (rid is None or isinstance(rid, str | int)):
            return 'member "id" must be a string or an integer'
        if isinstance(rid, str) and has_surrogate(rid):
            return 'member "id" holds a lone UTF-16 surrogate (not valid Unicode)'
    extra = sorted(set(message) - _MEMBERS)
    if extra:
        return f"unexpected member(s) {', '.join(map(repr, extra))}"
    return None


def _is_capture(message: Any) -> bool:
    # The method may be any JSON value here (validation comes later): an array or object is not hashable.
    return isinstance(message, dict) and isinstance(message.get("method"), str) and message["method"] in CAPTURE_METHODS


def _request_id(message: Any) -> Any:
    """The id to answer with: null when the id itself is not valid (JSON-RPC 2.0, section 5)."""
    if not isinstance(message, dict):
        return None
    rid = message.get("id")
    if isinstance(rid, bool) or not isinstance(rid, str | int):
        return None
    if isinstance(rid, str) and has_surrogate(rid):
        return None
    return rid


async def _dispatch(app: App, message: dict[str, Any]) -> Any:
    """One request, already parsed and checked by ``request_problem``, through jsonrpcserver's own steps: find the
    method, bind and call it, map its result or error to the reply (None for a notification).

    ``dispatch_to_serializable`` would add what this server does already: a second validation of the request against
    its JSON Schema (jsonschema, ~0.3 ms per request; ``request_problem`` refuses all it refuses, with a message that
    names the problem) and the batch layer (batches are split in ``_Dispatcher``), whose ``gather`` costs a task and
    a loop iteration per request."""
    try:
        request = create_request(message)
        result = (await dispatch_request(METHODS, app, request))[1]
        return None if request.id is NOID else to_serializable_one(to_response(request, result))
    except Exception as exc:  # as dispatch_to_serializable answers a failure of its own steps
        log.exception(exc)
        return serialize_error(ServerErrorResponse(str(exc), None))


def _clarify(response: Any) -> Any:
    """jsonrpcserver's stock messages name the problem class only; say what exactly was wrong."""
    if isinstance(response, dict) and isinstance(response.get("error"), dict):
        err = response["error"]
        if err.get("code") == errors.METHOD_NOT_FOUND:
            err["message"] = f"unknown method {err.get('data')!r}"
    return response


class _Dispatcher:
    """A message read (a request, a notification or a batch) to its reply.

    Read-your-writes: a request waits for every capture that arrived before it, so a client that pipelines "capture,
    then search" sees its own turn. Captures never wait on model calls."""

    def __init__(self, app: App) -> None:
        self.app = app
        self.captures_in_flight: set[asyncio.Future[None]] = set()
        self.arrivals = ArrivalOrder()
        self.answered = False

    async def __call__(self, message: Any) -> Any:
        reply = await self._reply(message)
        if not self.answered:
            self.answered = True
            # Run once the reply is written (the peer writes it before the loop runs the next callback).
            asyncio.get_running_loop().call_soon(self.app.answered)
        return reply

    async def _reply(self, message: Any) -> Any:
        # Captures take their place in line now, in the order they were read, before anything awaits.
        if isinstance(message, list):
            if not message:
                return error_response(None, errors.INVALID_REQUEST, "not a valid JSON-RPC 2.0 request: empty batch")
            # Each item is one request: an item that is not a request object (a nested batch included) gets its
            # own -32600; a batch is never answered with nested arrays.
            items = [(item, self._place_of(item)) for item in message]
            replies = await asyncio.gather(*(self._item(item, place) for item, place in items))
            replies = [r for r in replies if r is not None]
            return replies or None
        return await self._item(message, self._place_of(message))

    def _place_of(self, message: Any) -> Place | None:
        return self.arrivals.take() if _is_capture(message) else None

    async def _item(self, message: Any, place: Place | None) -> Any:
        if place is not None:
            done: asyncio.Future[None] = asyncio.get_running_loop().create_future()
            self.captures_in_flight.add(done)
            try:
                with holding(place), self.app.maintenance.gate.busy():
                    return await self._one(message)
            finally:
                done.set_result(None)
                self.captures_in_flight.discard(done)
        if self.captures_in_flight:
            await asyncio.wait(list(self.captures_in_flight))
        with self.app.maintenance.gate.busy():  # a maintenance pass runs its slices between requests
            return await self._one(message)

    async def _one(self, message: Any) -> Any:
        problem = request_problem(message)
        if problem is not None:
            return error_response(
                _request_id(message), errors.INVALID_REQUEST, f"not a valid JSON-RPC 2.0 request: {problem}"
            )
        if self.app.shutdown_requested.is_set() and message["method"] != "system.shutdown":
            request_id = _request_id(message)
            if "id" not in message:
                return None
            return error_response(
                request_id, errors.SHUTTING_DOWN, "the sidecar is shutting down; retry after it restarts"
            )
        module = module_to_load(message["method"])
        if module is not None:  # its first call: imported off the loop, other requests go on meanwhile
            await asyncio.to_thread(load_methods, module)
        return _clarify(await _dispatch(self.app, message))


async def _start(app: App, peer: Peer) -> bool:
    """Start the app; on failure tell the client (``system.fatal``) and close what did open."""
    try:
        await app.start()
    except Exception as exc:
        log.error("cannot start: %s", exc)
        with contextlib.suppress(Exception):
            await peer.notify("system.fatal", {"message": str(exc)})
        with contextlib.suppress(Exception):
            await app.stop()  # close what did open, or its worker thread keeps the process alive
        return False
    return True


async def _until_stopped(app: App, peer: Peer) -> None:
    """Serve until stdin or stdout closes, ``system.shutdown`` or a signal; then finish what is in flight."""
    loop = asyncio.get_running_loop()
    stop_reason = ["system.shutdown"]

    def on_signal(name: str) -> None:
        stop_reason[0] = name
        app.shutdown_requested.set()

    for sig in (signal.SIGTERM, signal.SIGINT):
        with contextlib.suppress(NotImplementedError, RuntimeError):
            loop.add_signal_handler(sig, on_signal, sig.name)

    reading = asyncio.create_task(peer.serve(), name="stdin")
    stopping = asyncio.create_task(app.shutdown_requested.wait(), name="shutdown")
    await asyncio.wait({reading, stopping}, return_when=asyncio.FIRST_COMPLETED)
    why = "stdout closed" if peer.closed else stop_reason[0] if stopping.done() else "stdin closed"
    log.info("stopping (%s)", why)
    # Finish what is in flight (captures become durable, the shutdown reply is written).
    await peer.drain_tasks(timeout=10)
    for task in (reading, stopping):
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError, Exception):
            await task


async def serve(settings: Settings, in_fd: int | None = None, out_fd: int | None = None) -> int:
    # Keep fd 1 for protocol lines only: anything else printing to stdout lands on stderr instead.
    if out_fd is None:
        out_fd = os.dup(1)
        os.dup2(2, 1)
        sys.stdout = sys.stderr
    in_fd = 0 if in_fd is None else in_fd

    app = App(settings)
    reader, writer = await _stdio(in_fd, out_fd)
    peer = Peer(reader, writer, _Dispatcher(app), settings.max_line_bytes)
    app.peer = peer
    peer.on_output_closed = app.shutdown_requested.set  # nobody can hear us any more: stop cleanly
    app.db.on_lock_wait = log.info  # a slow start says why (the CLI stays silent: one line per outcome)
    if not await _start(app, peer):
        return 2
    await _until_stopped(app, peer)
    await app.stop()
    with contextlib.suppress(Exception):
        if hasattr(writer, "close"):
            writer.close()
    return 0
