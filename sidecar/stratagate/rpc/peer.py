"""Newline-delimited JSON-RPC peer over a pair of asyncio streams.

Incoming requests are dispatched concurrently (a slow model call never blocks a capture);
responses to our own requests resolve their futures; every outgoing message is one line.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import json
import logging
import re
from collections.abc import Awaitable, Callable
from typing import Any

from stratagate import errors
from stratagate.errors import HostRequestError

log = logging.getLogger("stratagate.rpc")

Dispatch = Callable[[Any], Awaitable[Any]]
_ID_HINT = re.compile(rb'^\s*\{[^{}\[\]]*?"id"\s*:\s*("(?:[^"\\]|\\.){0,200}"|-?\d{1,20})\s*[,}]')


def _id_from_head(head: bytes) -> Any:
    """The request id of an oversized line, if it is a top-level member before any nested value."""
    hint = _ID_HINT.match(head)
    if hint is None:
        return None
    try:
        value = json.loads(hint.group(1))
    except ValueError:
        return None
    return value if isinstance(value, str | int) else None


class PeerClosed(ConnectionError):
    pass


def error_response(request_id: Any, code: int, message: str, data: Any = None) -> dict[str, Any]:
    error: dict[str, Any] = {"code": code, "message": message}
    if data is not None:
        error["data"] = data
    return {"jsonrpc": "2.0", "error": error, "id": request_id}


class Peer:
    def __init__(self, reader: asyncio.StreamReader, writer: Any, dispatch: Dispatch, max_line_bytes: int):
        self._reader = reader
        self._writer = writer
        self._dispatch = dispatch
        self._max = max_line_bytes
        self._write_lock = asyncio.Lock()
        self._pending: dict[str, asyncio.Future[Any]] = {}
        self._ids = itertools.count(1)
        self._tasks: set[asyncio.Task[None]] = set()
        self.closed = False
        self.on_output_closed: Callable[[], None] | None = None

    # ---- outgoing -------------------------------------------------------------------------------
    async def send(self, message: Any) -> None:
        line = json.dumps(message, ensure_ascii=False, separators=(",", ":")).encode() + b"\n"
        async with self._write_lock:
            if self.closed:
                raise PeerClosed("stdout is closed")
            try:
                self._writer.write(line)
                await self._writer.drain()
            except (BrokenPipeError, ConnectionResetError) as exc:
                self.closed = True
                if self.on_output_closed is not None:
                    self.on_output_closed()
                raise PeerClosed("the host closed our stdout") from exc

    async def notify(self, method: str, params: dict[str, Any]) -> None:
        await self.send({"jsonrpc": "2.0", "method": method, "params": params})

    async def request(self, method: str, params: dict[str, Any], timeout: float) -> Any:  # noqa: ASYNC109
        """Call a method on the host and wait for its result."""
        request_id = f"sg-{next(self._ids)}"
        future: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        self._pending[request_id] = future
        try:
            await self.send({"jsonrpc": "2.0", "id": request_id, "method": method, "params": params})
            async with asyncio.timeout(timeout):
                return await future
        finally:
            self._pending.pop(request_id, None)

    # ---- incoming -------------------------------------------------------------------------------
    async def serve(self) -> None:
        """Read lines until EOF; oversized lines are answered with an error and skipped."""
        buffer = bytearray()
        discarding = False
        while True:
            chunk = await self._reader.read(1 << 16)
            if not chunk:
                if buffer and not discarding:
                    self._handle_line(bytes(buffer))
                break
            buffer += chunk
            while True:
                newline = buffer.find(b"\n")
                if newline < 0:
                    if len(buffer) > self._max and not discarding:
                        self._reject_oversized(bytes(buffer[:4096]))
                        discarding = True
                    if discarding:
                        buffer.clear()
                    break
                line = bytes(buffer[:newline])
                del buffer[: newline + 1]
                if discarding:
                    discarding = False  # the tail of an oversized line
                    continue
                if len(line) > self._max:
                    self._reject_oversized(line[:4096])
                    continue
                self._handle_line(line)
        self.closed_input()

    def closed_input(self) -> None:
        for future in self._pending.values():
            if not future.done():
                future.set_exception(PeerClosed("the host closed stdin"))

    def _reject_oversized(self, head: bytes) -> None:
        request_id = _id_from_head(head)
        self._spawn(
            self.send(
                error_response(
                    request_id,
                    errors.PAYLOAD_TOO_LARGE,
                    f"message larger than the {self._max}-byte limit (STRATAGATE_MAX_LINE_BYTES); it was not processed",
                )
            )
        )

    def _handle_line(self, raw: bytes) -> None:
        try:
            self._handle_line_unguarded(raw)
        except Exception:  # one bad line must never stop the reader
            log.exception("could not handle an incoming line")

    def _handle_line_unguarded(self, raw: bytes) -> None:
        if not raw.strip():
            return
        try:
            message = json.loads(raw.decode("utf-8"))
        except UnicodeDecodeError as exc:
            self._spawn(self.send(error_response(None, errors.PARSE_ERROR, f"line is not valid UTF-8: {exc}")))
            return
        except json.JSONDecodeError as exc:
            self._spawn(self.send(error_response(None, errors.PARSE_ERROR, f"line is not valid JSON: {exc}")))
            return
        if (
            isinstance(message, dict)
            and "method" not in message
            and "id" in message
            and ("result" in message or "error" in message)
        ):
            self._resolve(message)
            return
        self._spawn(self._answer(message))

    def _resolve(self, message: dict[str, Any]) -> None:
        future = self._pending.get(str(message.get("id")))
        if future is None or future.done():
            log.warning("response to unknown request id %r ignored", message.get("id"))
            return
        if "error" in message:
            err = message.get("error")
            code, text = -32000, str(err)
            if isinstance(err, dict):
                raw_code = err.get("code")
                code = raw_code if isinstance(raw_code, int) and not isinstance(raw_code, bool) else -32000
                text = str(err.get("message", err))
            future.set_exception(HostRequestError(code, text))
        else:
            future.set_result(message.get("result"))

    async def _answer(self, message: Any) -> None:
        response = await self._dispatch(message)
        if response is not None:
            with contextlib.suppress(PeerClosed):
                await self.send(response)

    def _spawn(self, coro: Awaitable[None]) -> None:
        task = asyncio.ensure_future(coro)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def drain_tasks(self, timeout: float) -> None:  # noqa: ASYNC109
        """Let in-flight requests finish (used on shutdown)."""
        current = asyncio.current_task()
        tasks = [t for t in self._tasks if t is not current]
        if tasks:
            await asyncio.wait(tasks, timeout=timeout)
