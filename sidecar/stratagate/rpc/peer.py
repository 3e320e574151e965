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
from stratagate.errors import HostRequestError, has_surrogate, safe_text

log = logging.getLogger("stratagate.rpc")

Dispatch = Callable[[Any], Awaitable[Any]]
MAX_DEPTH = 64
"""Deepest nesting of arrays/objects accepted in one line (checked before parsing); deeper lines get -32700."""
MAX_INT_DIGITS = 100
"""Longest integer literal accepted (Python's own limit, 4,300 digits, is far beyond any meaningful value)."""
MAX_IN_FLIGHT = 64
"""Requests handled at once; when all slots are taken the peer stops reading stdin until one frees."""
_STRING = re.compile(rb'"(?:[^"\\]|\\.)*"')
_NOT_BRACKET = bytes(b for b in range(256) if b not in b"[]{}")
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
    if isinstance(value, str) and has_surrogate(value):
        return None  # not a valid id: answered with id null
    return value if isinstance(value, str | int) else None


def nesting_depth(raw: bytes) -> int:
    """How deeply arrays and objects nest in ``raw`` (brackets inside strings do not count); cheap for flat lines."""
    if raw.count(b"[") + raw.count(b"{") <= MAX_DEPTH:
        return 0  # cannot exceed the limit
    brackets = _STRING.sub(b"", raw).translate(None, _NOT_BRACKET)
    depth = deepest = 0
    for byte in brackets:
        if byte in (0x5B, 0x7B):  # [ {
            depth += 1
            deepest = max(deepest, depth)
        else:
            depth -= 1
    return deepest


def _refuse_constant(name: str) -> Any:
    raise ValueError(f"{name} is not valid JSON (numbers must be finite)")


def _finite_float(text: str) -> float:
    value = float(text)
    if value in (float("inf"), float("-inf")):
        raise ValueError(f"number {text[:40]!r} is out of range (it overflows a double)")
    return value


def _bounded_int(text: str) -> int:
    if len(text) > MAX_INT_DIGITS + 1:  # a sign may precede the digits
        raise ValueError(f"integer with {len(text.lstrip('-'))} digits; the limit is {MAX_INT_DIGITS} digits")
    return int(text)


def strict_loads(text: str) -> Any:
    """RFC 8259 JSON only: no NaN/Infinity, no number overflowing a double, no integer over MAX_INT_DIGITS digits."""
    return json.loads(text, parse_constant=_refuse_constant, parse_float=_finite_float, parse_int=_bounded_int)


def _is_response(message: Any) -> bool:
    return isinstance(message, dict) and "id" in message and ("result" in message or "error" in message)


def _encode_text(message: Any) -> str:
    if isinstance(message, list):
        return "[" + ",".join(_encode_text(item) for item in message) + "]"
    try:
        return json.dumps(message, ensure_ascii=False, allow_nan=False, separators=(",", ":"))
    except (ValueError, TypeError, RecursionError) as exc:
        if not _is_response(message):
            raise
        log.error("reply to %r cannot be encoded as JSON: %s", message.get("id"), exc)
        return json.dumps(
            error_response(
                message.get("id"),
                errors.INTERNAL_ERROR,
                f"internal error: the result cannot be encoded as JSON ({exc.__class__.__name__}: {exc})",
            ),
            ensure_ascii=False,
            separators=(",", ":"),
        )


def encode_line(message: Any) -> bytes:
    """One protocol line, always strict JSON in valid UTF-8: a reply whose result cannot be encoded (NaN, a
    non-JSON value) becomes a -32603 error for the same id; lone surrogates anywhere become U+FFFD."""
    text = _encode_text(message)
    try:
        data = text.encode()
    except UnicodeEncodeError:
        data = safe_text(text).encode()
    return data + b"\n"


class PeerClosed(ConnectionError):
    pass


def error_response(request_id: Any, code: int, message: str, data: Any = None) -> dict[str, Any]:
    error: dict[str, Any] = {"code": code, "message": message}
    if data is not None:
        error["data"] = data
    return {"jsonrpc": "2.0", "error": error, "id": request_id}


class Peer:
    def __init__(
        self,
        reader: asyncio.StreamReader,
        writer: Any,
        dispatch: Dispatch,
        max_line_bytes: int,
        max_in_flight: int = MAX_IN_FLIGHT,
    ):
        self._reader = reader
        self._writer = writer
        self._dispatch = dispatch
        self._max = max_line_bytes
        self._write_lock = asyncio.Lock()
        self._pending: dict[str, asyncio.Future[Any]] = {}
        self._ids = itertools.count(1)
        self._tasks: set[asyncio.Task[None]] = set()
        self._slots = asyncio.Semaphore(max_in_flight)
        self.closed = False
        self.on_output_closed: Callable[[], None] | None = None

    # ---- outgoing -------------------------------------------------------------------------------
    async def send(self, message: Any) -> None:
        line = encode_line(message)
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
                    await self._run(self._handle_line(bytes(buffer)))
                break
            buffer += chunk
            while True:
                newline = buffer.find(b"\n")
                if newline < 0:
                    if len(buffer) > self._max and not discarding:
                        await self._run(self._reject_oversized(bytes(buffer[:4096])))
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
                    await self._run(self._reject_oversized(line[:4096]))
                    continue
                await self._run(self._handle_line(line))
        self.closed_input()

    def closed_input(self) -> None:
        for future in self._pending.values():
            if not future.done():
                future.set_exception(PeerClosed("the host closed stdin"))

    async def _run(self, work: Awaitable[None] | None) -> None:
        """Start the handling of one line in a free slot; with every slot taken, wait (and so stop reading)."""
        if work is None:
            return
        await self._slots.acquire()
        try:
            task = self._spawn(work)
        except BaseException:
            self._slots.release()
            raise
        task.add_done_callback(lambda _t: self._slots.release())

    def _reject_oversized(self, head: bytes) -> Awaitable[None]:
        request_id = _id_from_head(head)
        return self.send(
            error_response(
                request_id,
                errors.PAYLOAD_TOO_LARGE,
                f"message larger than the {self._max}-byte limit (STRATAGATE_MAX_LINE_BYTES); it was not processed",
            )
        )

    def _handle_line(self, raw: bytes) -> Awaitable[None] | None:
        try:
            return self._handle_line_unguarded(raw)
        except Exception:  # one bad line must never stop the reader
            log.exception("could not handle an incoming line")
            return None

    def _parse_error(self, raw: bytes, message: str, recover_id: bool) -> Awaitable[None]:
        request_id = _id_from_head(raw[:4096]) if recover_id else None
        return self._send_quietly(error_response(request_id, errors.PARSE_ERROR, message))

    async def _send_quietly(self, message: Any) -> None:
        with contextlib.suppress(PeerClosed):
            await self.send(message)

    def _handle_line_unguarded(self, raw: bytes) -> Awaitable[None] | None:
        if not raw.strip():
            return None
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            return self._parse_error(raw, f"line is not valid UTF-8: {exc}", False)
        depth = nesting_depth(raw)
        if depth > MAX_DEPTH:
            return self._parse_error(
                raw, f"line nests arrays/objects {depth} deep; the limit is {MAX_DEPTH}; it was not processed", True
            )
        try:
            message = strict_loads(text)
        except json.JSONDecodeError as exc:
            return self._parse_error(raw, f"line is not valid JSON: {exc}", False)
        except (ValueError, RecursionError) as exc:  # NaN/Infinity, 1e400, an integer over the digit limit
            return self._parse_error(raw, f"line is not valid JSON: {safe_text(str(exc))[:300]}", True)
        if (
            isinstance(message, dict)
            and "method" not in message
            and "id" in message
            and ("result" in message or "error" in message)
        ):
            self._resolve(message)
            return None
        return self._answer(message)

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
        try:
            response = await self._dispatch(message)
        except Exception as exc:  # a bug must still cost the client one reply, not a request that hangs forever
            log.error("request could not be dispatched: %s: %s", type(exc).__name__, exc)
            rid = message.get("id") if isinstance(message, dict) else None
            valid = isinstance(rid, str | int) and not isinstance(rid, bool) and not (
                isinstance(rid, str) and has_surrogate(rid))
            response = error_response(rid if valid else None, errors.INTERNAL_ERROR,
                                      f"internal error: {type(exc).__name__}")
        if response is not None:
            with contextlib.suppress(PeerClosed):
                await self.send(response)

    def _spawn(self, coro: Awaitable[None]) -> asyncio.Future[None]:
        task = asyncio.ensure_future(coro)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        return task

    async def drain_tasks(self, timeout: float) -> None:  # noqa: ASYNC109
        """Let in-flight requests finish (used on shutdown)."""
        current = asyncio.current_task()
        tasks = [t for t in self._tasks if t is not current]
        if tasks:
            await asyncio.wait(tasks, timeout=timeout)
