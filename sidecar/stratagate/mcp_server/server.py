"""The MCP server: the SDK's low-level ``Server`` with our handlers, over stdio or Streamable HTTP on 127.0.0.1.

The low-level server (not the decorator API) keeps the tool names, JSON Schemas and descriptions exactly those of
the protocol table; the handlers only pick the connection's namespace and session and hand the call on.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import signal
import socket
import sys
from collections.abc import Callable, Iterator
from typing import Any

import anyio
from mcp import types
from mcp.server.context import ServerRequestContext
from mcp.server.lowlevel import Server
from mcp.shared.message import ServerMessageMetadata

from stratagate import __version__
from stratagate.app import App
from stratagate.config import Settings
from stratagate.mcp_server import catalog
from stratagate.mcp_server.resources import TEMPLATES, Resources
from stratagate.mcp_server.stdio import stdio
from stratagate.mcp_server.workspace import ROOTS_TIMEOUT_S, Connection, Connections, Workspace
from stratagate.page.server import runs_jobs

log = logging.getLogger("stratagate.mcp")

INSTRUCTIONS = (
    "StrataGate long-term memory of this folder's project (shared with DeepSeek Harness and every other agent that "
    "works in the same folder) and of the user (the user tier). Search before answering from memory "
    "(memory_search_events, memory_search_graph, memory_search_raw), remember what should outlast the session "
    "(memory_remember), and judge and record what you relied on (memory_assess, memory_record_use)."
)
HTTP_PATH = "/mcp"


def _key(ctx: ServerRequestContext[Any, Any]) -> str:
    """The connection a request belongs to: stdio has one; Streamable HTTP names its session in a header."""
    request = ctx.request
    if request is None:
        return "stdio"
    headers = getattr(request, "headers", None)
    return f"http:{headers.get('mcp-session-id', '') if headers is not None else ''}"


async def _roots(ctx: ServerRequestContext[Any, Any]) -> list[str] | None:
    """The client's declared roots (``roots/list``), or None if it declares none or cannot be asked."""
    caps = ctx.session.client_capabilities
    if caps is None or caps.roots is None or not ctx.session.can_send_request:
        return None
    try:
        result = await ctx.session.send_request(
            types.ListRootsRequest(), types.ListRootsResult, request_read_timeout_seconds=ROOTS_TIMEOUT_S,
            metadata=ServerMessageMetadata(related_request_id=ctx.request_id),
        )
    except Exception as exc:  # a client that fails roots/list still gets its memory (of the fallback folder)
        log.warning("roots/list failed (%s); using the fallback folder", exc)
        return None
    return [str(root.uri) for root in result.roots]


class Handlers:
    def __init__(self, app: App, connections: Connections) -> None:
        self.app = app
        self.connections = connections
        self.resources = Resources(app)
        self.tools = catalog.mcp_tools()

    async def _connection(self, ctx: ServerRequestContext[Any, Any]) -> tuple[Connection, Workspace]:
        conn = self.connections.of(_key(ctx))
        if conn.workspace is None:
            roots = None if self.connections.project is not None else await _roots(ctx)
            conn.workspace = workspace = self.connections.choose(roots)
            log.info("MCP session %s: namespace %s (folder %s, from %s)", conn.session, workspace.namespace,
                     workspace.folder, workspace.source)
        return conn, conn.workspace

    async def list_tools(self, ctx: ServerRequestContext[Any, Any], _: Any) -> types.ListToolsResult:
        return types.ListToolsResult(tools=self.tools)

    async def call_tool(self, ctx: ServerRequestContext[Any, Any], p: types.CallToolRequestParams) -> Any:
        conn, workspace = await self._connection(ctx)
        return await catalog.call_tool(self.app, workspace.namespace, conn.session, p.name, p.arguments)

    async def list_templates(self, ctx: ServerRequestContext[Any, Any], _: Any) -> types.ListResourceTemplatesResult:
        return types.ListResourceTemplatesResult(resource_templates=TEMPLATES)

    async def list_resources(self, ctx: ServerRequestContext[Any, Any], _: Any) -> types.ListResourcesResult:
        conn, workspace = await self._connection(ctx)
        return types.ListResourcesResult(resources=await self.resources.recent(workspace.namespace, conn.session))

    async def read_resource(
        self, ctx: ServerRequestContext[Any, Any], p: types.ReadResourceRequestParams
    ) -> types.ReadResourceResult:
        conn, workspace = await self._connection(ctx)
        return await self.resources.read(workspace.namespace, conn.session, str(p.uri))

    async def roots_changed(self, ctx: ServerRequestContext[Any, Any], _: Any) -> None:
        self.connections.roots_changed(_key(ctx))  # the next call asks for the roots again


def build_server(app: App, project: str | None) -> Server[Any]:
    handlers = Handlers(app, Connections(project, lambda: app.settings.namespace_mode))
    server: Server[Any] = Server(
        "stratagate", version=__version__, title="StrataGate memory", instructions=INSTRUCTIONS,
        on_list_tools=handlers.list_tools, on_call_tool=handlers.call_tool,
        on_list_resources=handlers.list_resources, on_list_resource_templates=handlers.list_templates,
        on_read_resource=handlers.read_resource,
    )
    # Registered directly: the constructor's on_roots_list_changed warns that roots are deprecated in the newest
    # protocol era, and the handshake era, which every current client speaks, has them.
    server.add_notification_handler("notifications/roots/list_changed", types.NotificationParams,
                                    handlers.roots_changed)
    return server


async def _serve_stdio(server: Server[Any], out_fd: int) -> None:
    async with stdio(out_fd) as (read, write):
        await server.run(read, write, server.create_initialization_options())


class ListenError(Exception):
    """The HTTP port cannot be listened on; the message says which and why."""


def _listen(port: int) -> socket.socket:
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind(("127.0.0.1", port))
    except OSError as exc:
        sock.close()
        raise ListenError(f"cannot listen on 127.0.0.1:{port}: {exc.strerror or exc}") from None
    sock.listen(64)
    sock.setblocking(False)
    return sock


def _http_server(web: Any) -> Any:
    import uvicorn

    class Quiet(uvicorn.Server):
        """uvicorn without its own signal handlers: it would re-raise SIGTERM after its shutdown and end the process
        before the database is closed; ``_until_stopped`` stops it instead."""

        @contextlib.contextmanager
        def capture_signals(self) -> Iterator[None]:
            yield

    return Quiet(uvicorn.Config(web, log_config=None, log_level="warning", lifespan="on"))


async def _until_stopped(work: Any, graceful: Callable[[], None] | None = None) -> None:
    """Run ``work`` until it ends (the client closed stdin) or SIGTERM/SIGINT, which calls ``graceful`` (then waits
    for ``work``) or cancels ``work``."""
    loop = asyncio.get_running_loop()
    stop = asyncio.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        with contextlib.suppress(NotImplementedError, RuntimeError):
            loop.add_signal_handler(sig, stop.set)
    serving = asyncio.create_task(work, name="mcp")
    stopping = asyncio.create_task(stop.wait(), name="signal")
    await asyncio.wait({serving, stopping}, return_when=asyncio.FIRST_COMPLETED)
    stopping.cancel()
    if not serving.done():
        log.info("stopping (signal)")
        if graceful is not None:
            graceful()
        else:
            serving.cancel()
        try:
            await serving
        # Cancelling the SDK's stdio tasks can make one of them send on a stream its peer already closed (anyio
        # BrokenResourceError / ClosedResourceError in a task group): the stop we asked for, not a failure.
        except* (asyncio.CancelledError, anyio.BrokenResourceError, anyio.ClosedResourceError):
            pass
        return
    serving.result()  # a transport failure is the command's failure


async def _serve_http(server: Server[Any], port: int) -> None:
    sock = _listen(port)
    web = server.streamable_http_app(streamable_http_path=HTTP_PATH, host="127.0.0.1")
    http = _http_server(web)
    print(f"StrataGate MCP: http://127.0.0.1:{sock.getsockname()[1]}{HTTP_PATH}", file=sys.stderr, flush=True)

    def shut() -> None:
        http.should_exit = True

    await _until_stopped(http.serve(sockets=[sock]), graceful=shut)


async def run(settings: Settings, project: str | None, http_port: int | None, out_fd: int | None) -> int:
    """Open the database (as ``serve`` does), serve MCP until the client leaves or a signal, close it."""
    app = App(settings)
    jobs = runs_jobs(settings)
    await app.start(jobs=jobs)
    if not jobs:
        log.info("the model route is the host's: jobs run in the DSH sidecar, not here")
    try:
        server = build_server(app, project)
        if http_port is None:
            assert out_fd is not None
            await _until_stopped(_serve_stdio(server, out_fd))
        else:
            await _serve_http(server, http_port)
    finally:
        await app.stop()
    return 0
