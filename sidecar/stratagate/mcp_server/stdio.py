"""The stdio transport around the SDK's: stdout carries protocol only, and a line that is not a JSON-RPC message gets
a protocol error (the SDK's server drops such a line without an answer, and the client would wait forever)."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import sys
import threading
from collections.abc import AsyncIterator
from types import TracebackType
from typing import Any, cast

import anyio
from mcp import types
from mcp.server.stdio import stdio_server
from mcp.shared.message import SessionMessage
from pydantic import ValidationError

from stratagate.errors import INVALID_REQUEST, PARSE_ERROR

log = logging.getLogger("stratagate.mcp")


def protocol_stdout() -> int:
    """Keep the protocol's stdout for itself: returns a private copy of fd 1 and points fd 1 (and ``sys.stdout``) at
    stderr, so nothing printed by any module (or child process) can land among the protocol lines."""
    out_fd = os.dup(1)
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    return out_fd


def _problem(exc: Exception) -> types.ErrorData:
    if isinstance(exc, ValidationError) and any(e["type"] == "json_invalid" for e in exc.errors()):
        return types.ErrorData(code=PARSE_ERROR, message="Parse error: the line is not valid JSON")
    text = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
    return types.ErrorData(code=INVALID_REQUEST, message=f"Invalid Request: not a JSON-RPC 2.0 message ({text})")


class AnsweringReadStream:
    """The transport's read stream with every unreadable line answered by a protocol error (id null: a line that is
    not a message has no id one could trust) instead of passed on."""

    def __init__(self, inner: Any, write: Any) -> None:
        self._inner = inner
        self._write = write

    @property
    def last_context(self) -> Any:
        return getattr(self._inner, "last_context", None)

    async def receive(self) -> SessionMessage | Exception:
        while True:
            item = await self._inner.receive()
            if not isinstance(item, Exception):
                return item
            error = _problem(item)
            log.warning("answered an unreadable line with %s: %s", error.code, error.message)
            with contextlib.suppress(anyio.ClosedResourceError, anyio.BrokenResourceError):
                await self._write.send(SessionMessage(types.JSONRPCError(jsonrpc="2.0", id=None, error=error)))

    async def aclose(self) -> None:
        await self._inner.aclose()

    def __aiter__(self) -> AnsweringReadStream:
        return self

    async def __anext__(self) -> SessionMessage | Exception:
        try:
            return await self.receive()
        except anyio.EndOfStream:
            raise StopAsyncIteration from None

    async def __aenter__(self) -> AnsweringReadStream:
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.aclose()


MAX_LINE_BYTES = 64 * 2**20


class _Lines:
    """Lines of fd 0 read on the event loop (the SDK's default reads in a worker thread, which no cancellation can
    interrupt: a signal would then wait for the client to close stdin)."""

    def __init__(self, reader: asyncio.StreamReader) -> None:
        self._reader = reader

    def __aiter__(self) -> _Lines:
        return self

    async def __anext__(self) -> str:
        try:
            line = await self._reader.readline()
        except ValueError:  # longer than MAX_LINE_BYTES: answered as an unreadable line
            return "\ufffd"
        if not line:
            raise StopAsyncIteration
        return line.decode("utf-8", errors="replace")


async def _stdin_lines() -> _Lines:
    loop = asyncio.get_running_loop()
    reader = asyncio.StreamReader(limit=MAX_LINE_BYTES)
    stdin = os.fdopen(0, "rb", 0, closefd=False)
    try:
        await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), stdin)
    except ValueError:  # stdin is a regular file: fed from a thread (it ends at EOF, so nothing waits for it)

        def pump() -> None:
            while chunk := stdin.read(1 << 16):
                loop.call_soon_threadsafe(reader.feed_data, chunk)
            loop.call_soon_threadsafe(reader.feed_eof)

        threading.Thread(target=pump, daemon=True, name="stdin-pump").start()
    return _Lines(reader)


@contextlib.asynccontextmanager
async def stdio(out_fd: int) -> AsyncIterator[tuple[AnsweringReadStream, Any]]:
    """The SDK's stdio transport reading fd 0 and writing ``out_fd`` (see ``protocol_stdout``)."""
    stdout = anyio.wrap_file(os.fdopen(out_fd, "w", encoding="utf-8", newline="\n"))
    stdin = cast(Any, await _stdin_lines())  # the transport only iterates it (``async for line in stdin``)
    async with stdio_server(stdin=stdin, stdout=stdout) as (read, write):
        yield AnsweringReadStream(read, write), write
