"""Drive a real `stratagate mcp` child with the official MCP SDK's own client (stdio_client + ClientSession), or
speak to one line by line (``RawMcp``) for what no SDK client sends: malformed lines and unknown methods.

Used with ``async with`` inside a test (not from a fixture): the SDK's anyio task groups must be left in the task
that entered them.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any, TextIO

from mcp import ClientSession, types
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.types.version import LATEST_HANDSHAKE_VERSION

REPO = Path(__file__).resolve().parents[2]
OFFLINE = {"STRATAGATE_MODEL_ROUTE": "none", "STRATAGATE_DENSE": "off"}
"""No model route (events written by rule, jobs run here) and no dense channel: what the tests of memory need."""


def server_env(extra: dict[str, str] | None = None) -> dict[str, str]:
    """This process's environment without its STRATAGATE_* variables, with the sidecar on the path."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("STRATAGATE_")}
    env["PYTHONPATH"] = str(REPO / "sidecar")
    env.update(OFFLINE)
    env.update(extra or {})
    return env


def mcp_args(db: Path, project: Path | None = None, http: int | None = None) -> list[str]:
    return [
        "-m", "stratagate", "mcp", "--db", str(db),
        *(["--project", str(project)] if project is not None else []),
        *(["--http", str(http)] if http is not None else []),
    ]


def roots_callback(folders: list[Path]) -> Any:
    """A client that declares ``folders`` as its roots (file:// URIs), as an IDE declares its open workspace."""

    async def list_roots(_context: Any) -> types.ListRootsResult:
        return types.ListRootsResult(roots=[types.Root(uri=f.resolve().as_uri(), name=f.name) for f in folders])

    return list_roots


@contextlib.asynccontextmanager
async def mcp_session(
    db: Path,
    *,
    roots: list[Path] | None = None,
    project: Path | None = None,
    cwd: Path | None = None,
    errlog: TextIO | None = None,
    modern: bool = False,
) -> AsyncIterator[ClientSession]:
    """An initialized SDK client session with a `stratagate mcp` child on ``db``: the ``initialize`` handshake, or
    with ``modern`` the 2026-07-28 era (``server/discover``, then every request carries its own envelope)."""
    params = StdioServerParameters(
        command=sys.executable, args=mcp_args(db, project), env=server_env(), cwd=str(cwd) if cwd else None
    )
    callback = roots_callback(roots) if roots is not None else None
    async with stdio_client(params, errlog=errlog or sys.stderr) as (read, write):
        async with ClientSession(read, write, list_roots_callback=callback) as session:
            if modern:
                await session.discover()
            else:
                await session.initialize()
            yield session


async def call(session: ClientSession, name: str, arguments: dict[str, Any] | None = None) -> dict[str, Any]:
    """A tool's result as its JSON object; a tool error fails the test with its text."""
    result = await session.call_tool(name, arguments or {})
    text = result.content[0].text if result.content and isinstance(result.content[0], types.TextContent) else ""
    assert not result.is_error, text
    assert isinstance(result.structured_content, dict)
    assert json.loads(text) == result.structured_content  # the text the model reads is the same result
    return result.structured_content


class RawMcp:
    """A `stratagate mcp` child spoken to one JSON line at a time; every stdout line is kept as read."""

    def __init__(self, proc: asyncio.subprocess.Process) -> None:
        self.proc = proc
        self.lines: list[bytes] = []

    @classmethod
    async def start(cls, db: Path, cwd: Path) -> RawMcp:
        proc = await asyncio.create_subprocess_exec(
            sys.executable, *mcp_args(db), cwd=cwd, env=server_env(),
            stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
        )
        return cls(proc)

    async def send(self, raw: bytes | dict[str, Any]) -> None:
        assert self.proc.stdin is not None
        line = raw if isinstance(raw, bytes) else json.dumps(raw).encode()
        self.proc.stdin.write(line + b"\n")
        await self.proc.stdin.drain()

    async def reply(self, timeout: float = 60) -> dict[str, Any]:  # noqa: ASYNC109
        assert self.proc.stdout is not None
        async with asyncio.timeout(timeout):
            line = await self.proc.stdout.readline()
        assert line, "the server closed stdout"
        self.lines.append(line)
        message = json.loads(line)
        assert isinstance(message, dict)
        return message

    async def request(self, rid: int, method: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
        await self.send({"jsonrpc": "2.0", "id": rid, "method": method, **({"params": params} if params else {})})
        return await self.reply()

    async def initialize(self) -> dict[str, Any]:
        reply = await self.request(0, "initialize", {
            "protocolVersion": LATEST_HANDSHAKE_VERSION, "capabilities": {},
            "clientInfo": {"name": "raw-test", "version": "0"},
        })
        await self.send({"jsonrpc": "2.0", "method": "notifications/initialized"})
        return reply

    async def close(self) -> tuple[int, bytes, bytes]:
        """Close stdin (the client leaves), wait for the exit; (exit code, rest of stdout, stderr)."""
        assert self.proc.stdin is not None
        self.proc.stdin.close()
        rest, err = await asyncio.wait_for(self.proc.communicate(), 60)
        return self.proc.returncode or 0, rest, err
