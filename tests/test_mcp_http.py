"""`stratagate mcp --http PORT`: Streamable HTTP on 127.0.0.1, driven by the official SDK's streamable HTTP client."""

from __future__ import annotations

import asyncio
import re
import signal
import sys
import urllib.error
import urllib.request
from pathlib import Path

from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client

from stratagate.namespaces import ResolveParams, resolve
from support.mcp_client import OFFLINE, call, mcp_args, roots_callback, server_env
from support.sidecar import SidecarClient

URL_LINE = re.compile(rb"StrataGate MCP: (http://127\.0\.0\.1:(\d+)/mcp)")


async def _url(proc: asyncio.subprocess.Process) -> str:
    """The URL the server logs once it listens (port 0: it picked a free one)."""
    assert proc.stderr is not None
    async with asyncio.timeout(60):
        while line := await proc.stderr.readline():
            found = URL_LINE.search(line)
            if found:
                return found.group(1).decode()
    raise AssertionError("the server exited before it listened")


def _status(url: str, host: str) -> int:
    request = urllib.request.Request(url, data=b"{}", method="POST", headers={
        "Host": host, "Content-Type": "application/json", "Accept": "application/json, text/event-stream",
    })
    try:
        with urllib.request.urlopen(request, timeout=10) as reply:
            return int(reply.status)
    except urllib.error.HTTPError as exc:
        return exc.code


async def test_streamable_http_serves_the_tools_with_the_namespace_of_the_clients_root(tmp_path: Path):
    folder = tmp_path / "harbour"
    folder.mkdir()
    db = tmp_path / "memory.db"
    proc = await asyncio.create_subprocess_exec(
        sys.executable, *mcp_args(db, http=0), env=server_env(), cwd=tmp_path,
        stdin=asyncio.subprocess.DEVNULL, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
    )
    try:
        url = await _url(proc)
        async with streamable_http_client(url) as (read, write):
            async with ClientSession(read, write, list_roots_callback=roots_callback([folder])) as mcp:
                await mcp.initialize()
                names = [t.name for t in (await mcp.list_tools()).tools]
                assert "memory_remember" in names and "compress" not in names
                saved = await call(mcp, "memory_remember", {"text": "The harbour-ledger API listens on port 8443."})
                found = await call(mcp, "memory_search_events", {"query": "harbour-ledger port"})
                assert [h["id"] for h in found["hits"]] == [saved["id"]]
        # A page of another site cannot reach it (DNS rebinding): only loopback Host headers are served.
        assert await asyncio.to_thread(_status, url, "evil.example:80") in (403, 421)
    finally:
        proc.send_signal(signal.SIGTERM)
        async with asyncio.timeout(30):
            _out, err = await proc.communicate()
    assert proc.returncode == 0, err.decode(errors="replace")
    assert _out == b""  # --http leaves stdout unused
    # Stored in the namespace DSH uses for that folder.
    dsh = await SidecarClient.start(db, env=OFFLINE)
    try:
        ns = resolve(ResolveParams(mode="project", cwd=str(folder)))["namespace"]
        hits = await dsh.tool(ns, "s", "memory_search_events", {"query": "harbour-ledger port"})
        assert [h["id"] for h in hits["hits"]] == [saved["id"]]
    finally:
        await dsh.close()
