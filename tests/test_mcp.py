"""`stratagate mcp`: the memory over the Model Context Protocol, driven by the official SDK's own client against a
real `stratagate mcp` child on a temporary database, next to a DSH-style sidecar session on the same database (driven
as the shim drives it: the session's workspace → namespace.for_session → tools.call / activation.render)."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from mcp import types
from mcp.shared.exceptions import MCPError

from conftest import turn
from stratagate.mcp_server import catalog
from stratagate.mcp_server.workspace import Connections
from stratagate.namespaces import ResolveParams, resolve
from stratagate.tools import context_tools
from support.mcp_client import OFFLINE, RawMcp, call, mcp_args, mcp_session, server_env
from support.sidecar import REPO, SidecarClient

DEPLOY = "The staging deploy of the harbour-ledger service runs from scripts/ship_staging.sh with Node 22."
FROM_DSH = "The harbour-ledger nightly export writes parquet files to the vault bucket."
INDENT = "I prefer four-space indentation in every language."


def _dsh_tools() -> list[dict[str, Any]]:
    specs: list[dict[str, Any]] = json.loads((REPO / "plugin" / "tools.json").read_text())
    return specs


def _context_tool_names() -> set[str]:
    return {e.name for e in catalog.TOOL_TABLE if e.handler.__module__ == context_tools.__name__}


def test_the_mcp_tools_are_the_dsh_tools_without_the_context_window_ones():
    """Names, JSON Schemas and descriptions exactly as DSH registers them (plugin/tools.json), in the same order."""
    session_tools = _context_tool_names()
    assert session_tools == {"memory_context_status", "compress", "decompress", "search_context"}
    expected = [s for s in _dsh_tools() if s["name"] not in session_tools]
    offered = [
        {"name": t.name, "description": t.description, "parameters": t.input_schema} for t in catalog.mcp_tools()
    ]
    assert offered == expected


async def _dsh_namespace(dsh: SidecarClient, session: str, folder: Path) -> str:
    found = await dsh.call("namespace.for_session", {"mode": "project", "session": session, "cwd": str(folder)})
    assert not found["fallback"]
    return str(found["namespace"])


async def test_an_mcp_client_lists_remembers_searches_expands_and_reads_resources(tmp_path: Path):
    folder = tmp_path / "harbour"
    folder.mkdir()
    async with mcp_session(tmp_path / "memory.db", roots=[folder]) as mcp:
        assert mcp.initialize_result is not None
        assert mcp.initialize_result.server_info.name == "stratagate"
        assert mcp.initialize_result.capabilities.tools is not None
        listed = await mcp.list_tools()
        assert [t.name for t in listed.tools] == [t.name for t in catalog.mcp_tools()]
        by_name = {t.name: t for t in listed.tools}
        assert by_name["memory_remember"].input_schema == catalog.TOOL_TABLE.get("memory_remember").spec()["parameters"]

        saved = await call(mcp, "memory_remember", {"text": DEPLOY})
        assert saved["scope"] == "project" and saved["status"] == "active"
        found = await call(mcp, "memory_search_events", {"query": "staging deploy harbour-ledger"})
        assert [h["id"] for h in found["hits"]] == [saved["id"]]
        assert found["batch_id"].startswith("rb_") and found["evidence_refs"] == [saved["id"]]  # an evidence batch

        expanded = await call(mcp, "memory_expand_event", {"id": saved["id"]})
        assert expanded["id"] == saved["id"] and expanded["summary"] == DEPLOY and expanded["status"] == "active"
        assert expanded["batch_id"] != found["batch_id"]  # each retrieval is a batch of its own

        # Use receipts: an assessment of the batch, then the use recorded and counted, as in DSH.
        assessed = await call(mcp, "memory_assess", {
            "batch_id": found["batch_id"], "verdict": "sufficient", "evidence_refs": [saved["id"]],
            "fit": "names the deploy script", "missing": "", "next_strategy": "answer",
        })
        assert assessed["verdict"] == "sufficient"
        used = await call(mcp, "memory_record_use", {"batch_id": found["batch_id"], "evidence_refs": [saved["id"]]})
        assert [c["ref"] for c in used["counted"]] == [saved["id"]]

        # Resources: the same event by URI (no evidence batch), listed among the recent ones.
        templates = await mcp.list_resource_templates()
        assert {t.uri_template for t in templates.resource_templates} >= {
            "stratagate://events/{id}", "stratagate://blocks/{id}", "stratagate://nodes/{id}"
        }
        recent = await mcp.list_resources()
        assert f"stratagate://events/{saved['id']}" in [str(r.uri) for r in recent.resources]
        read = await mcp.read_resource(f"stratagate://events/{saved['id']}")
        content = read.contents[0]
        assert isinstance(content, types.TextResourceContents) and content.mime_type == "application/json"
        shown = json.loads(content.text)
        assert "batch_id" not in shown
        assert shown == {k: v for k, v in expanded.items() if k not in ("batch_id", "evidence_refs")}
        with pytest.raises(MCPError) as missing:
            await mcp.read_resource("stratagate://events/evt_9999")
        assert missing.value.code == -32002
        with pytest.raises(MCPError) as foreign:
            await mcp.read_resource("https://example.com/evt_1")
        assert foreign.value.code == -32602


async def test_what_one_agent_remembers_the_other_recalls_in_the_same_folder_only(tmp_path: Path):
    """MCP client ↔ DSH session of one folder share the project memory; a second folder sees neither (the user
    tier aside: a user-scope memory reaches every folder, as in DSH)."""
    db = tmp_path / "memory.db"
    here, elsewhere = tmp_path / "harbour", tmp_path / "orchard"
    here.mkdir()
    elsewhere.mkdir()
    dsh = await SidecarClient.start(db, env=OFFLINE)
    try:
        ns_here = await _dsh_namespace(dsh, "dsh-1", here)
        ns_elsewhere = await _dsh_namespace(dsh, "dsh-2", elsewhere)
        assert ns_here == resolve(ResolveParams(mode="project", cwd=str(here)))["namespace"]
        from_dsh = await dsh.tool(ns_here, "dsh-1", "memory_remember", {"text": FROM_DSH})

        async with mcp_session(db, roots=[here]) as mcp:
            saved = await call(mcp, "memory_remember", {"text": DEPLOY})
            indent = await call(mcp, "memory_remember", {"text": INDENT, "scope": "user", "type": "preference"})
            # DSH → MCP: the DSH session's memory is found by the MCP client of the same folder.
            seen = await call(mcp, "memory_search_events", {"query": "nightly export parquet vault"})
            assert [h["id"] for h in seen["hits"]] == [from_dsh["id"]]

        # MCP → DSH: recalled at a DSH step in the same folder.
        question = "How do I run the staging deploy of harbour-ledger?"
        recall = await dsh.call("activation.render", {"namespace": ns_here, "session": "dsh-1", "query": question})
        assert saved["id"] in recall["event_ids"] and "ship_staging.sh" in recall["text"]

        # A second folder: neither the MCP memory nor the DSH one, in a DSH session there or an MCP client there.
        other = await dsh.call("activation.render", {"namespace": ns_elsewhere, "session": "dsh-2", "query": question})
        assert saved["id"] not in other["event_ids"] and "ship_staging.sh" not in other["text"]
        async with mcp_session(db, project=elsewhere) as mcp:
            for query in ("staging deploy harbour-ledger", "nightly export parquet vault"):
                assert (await call(mcp, "memory_search_events", {"query": query}))["hits"] == []
            # The user tier: a user-scope memory said in one folder is found in every other.
            tier = await call(mcp, "memory_search_events", {"query": "four-space indentation"})
            assert [(h["id"], h["tier"]) for h in tier["hits"]] == [(indent["id"], "user")]
    finally:
        await dsh.close()


async def test_without_roots_or_project_the_current_directory_is_the_folder_and_the_log_says_so(tmp_path: Path):
    """(In the 2026-07-28 protocol era, which has no roots: every request carries its own envelope.)"""
    folder = tmp_path / "workbench"
    folder.mkdir()
    log = tmp_path / "stderr.log"
    with log.open("w") as errlog:
        async with mcp_session(tmp_path / "memory.db", cwd=folder, errlog=errlog, modern=True) as mcp:
            assert mcp.protocol_version == "2026-07-28"
            await call(mcp, "memory_remember", {"text": DEPLOY})
    text = log.read_text()
    expected = resolve(ResolveParams(mode="project", cwd=str(folder)))["namespace"]
    assert f"namespace {expected}" in text and "the current directory" in text
    # The log went to stderr; the database holds the memory in that folder's namespace.
    dsh = await SidecarClient.start(tmp_path / "memory.db", env=OFFLINE)
    try:
        hits = await dsh.tool(expected, "s", "memory_search_events", {"query": "staging deploy harbour-ledger"})
        assert len(hits["hits"]) == 1
    finally:
        await dsh.close()


async def test_bad_tool_calls_are_protocol_errors_and_refusals_are_tool_errors(tmp_path: Path):
    async with mcp_session(tmp_path / "memory.db", project=tmp_path) as mcp:
        with pytest.raises(MCPError) as bad:
            await mcp.call_tool("memory_remember", {"content": "no such argument"})
        assert bad.value.code == -32602 and "bad arguments for memory_remember" in bad.value.message
        with pytest.raises(MCPError) as unoffered:
            await mcp.call_tool("compress", {"content": "x"})  # a context-window tool: DSH sessions only
        assert unoffered.value.code == -32602 and "unknown tool 'compress'" in unoffered.value.message
        missing = await mcp.call_tool("memory_expand_event", {"id": "evt_4242"})
        assert missing.is_error
        assert isinstance(missing.content[0], types.TextContent) and "evt_4242" in missing.content[0].text
        # A refusal while running (valid arguments, a state that forbids the change) is a tool error too.
        saved = await call(mcp, "memory_remember", {"text": DEPLOY})
        await call(mcp, "memory_forget", {"id": saved["id"]})
        refused = await mcp.call_tool("memory_pin", {"id": saved["id"], "pinned": True})
        assert refused.is_error
        assert isinstance(refused.content[0], types.TextContent) and "forgotten" in refused.content[0].text


async def test_malformed_lines_and_unknown_methods_get_protocol_errors_and_stdout_is_pure_protocol(tmp_path: Path):
    raw = await RawMcp.start(tmp_path / "memory.db", cwd=tmp_path)
    try:
        await raw.send(b"{this is not json")
        parse = await raw.reply()
        assert parse["id"] is None and parse["error"]["code"] == -32700
        await raw.send(b'{"jsonrpc": "2.0", "id": "x", "method": 7}')
        invalid = await raw.reply()
        assert invalid["id"] is None and invalid["error"]["code"] == -32600
        init = await raw.initialize()
        assert init["result"]["serverInfo"]["name"] == "stratagate"
        unknown = await raw.request(1, "memory/frobnicate", {})
        assert unknown["id"] == 1 and unknown["error"]["code"] == -32601
        bad = await raw.request(2, "tools/call", {"name": "memory_search_events", "arguments": {"limit": 500}})
        assert bad["id"] == 2 and bad["error"]["code"] == -32602 and "limit" in bad["error"]["message"]
        ok = await raw.request(3, "tools/call", {"name": "memory_search_events", "arguments": {}})
        assert ok["id"] == 3 and ok["result"]["isError"] is False
    finally:
        code, rest, err = await raw.close()
    assert code == 0, err.decode(errors="replace")
    lines = raw.lines + rest.splitlines(keepends=True)
    for line in lines:  # every byte on stdout is a protocol message; the log went to stderr
        types.jsonrpc_message_adapter.validate_json(line)
    assert b"ready" in err and b"database:" in err


async def test_sigterm_stops_a_stdio_server_whose_client_keeps_stdin_open(tmp_path: Path):
    raw = await RawMcp.start(tmp_path / "memory.db", cwd=tmp_path)
    assert "result" in await raw.initialize()
    raw.proc.send_signal(signal.SIGTERM)
    rest, err = await asyncio.wait_for(raw.proc.communicate(), 60)
    assert raw.proc.returncode == 0, err.decode(errors="replace")
    assert rest == b"" and b"stopping (signal)" in err


async def test_blocks_and_graph_nodes_of_dsh_sessions_are_resources(tmp_path: Path):
    """A DSH session's sealed block and the graph node its decision projects are listed and read by URI."""
    db = tmp_path / "memory.db"
    folder = tmp_path / "harbour"
    folder.mkdir()
    dsh = await SidecarClient.start(db, env=OFFLINE, args=["--block-turns", "1"])
    try:
        ns = await _dsh_namespace(dsh, "dsh-1", folder)
        await dsh.call("turn.capture", turn(1, ns, "dsh-1", user="We decided to use pnpm for this project.",
                                           assistant="Switched the lockfile to pnpm."))
        await dsh.tool(ns, "dsh-1", "memory_remember", {"text": "This project uses pnpm.", "type": "decision"})
        await dsh.settled()
        nodes = (await dsh.tool(ns, "dsh-1", "memory_search_graph", {"query": "pnpm"}))["hits"]
        assert nodes, "the decision projects a graph node"
    finally:
        await dsh.close()
    async with mcp_session(db, roots=[folder]) as mcp:
        listed = [str(r.uri) for r in (await mcp.list_resources()).resources]
        assert "stratagate://blocks/blk_1" in listed and f"stratagate://nodes/{nodes[0]['id']}" in listed
        source = json.loads(_text(await mcp.read_resource("stratagate://blocks/blk_1/levels/5")))
        assert source["level"] == 5 and "We decided to use pnpm" in json.dumps(source)
        node = json.loads(_text(await mcp.read_resource(f"stratagate://nodes/{nodes[0]['id']}")))
        assert node["id"] == nodes[0]["id"] and node["name"] == nodes[0]["name"]
        with pytest.raises(MCPError) as bad_level:
            await mcp.read_resource("stratagate://blocks/blk_1/levels/9")
        assert bad_level.value.code == -32602


def _text(read: types.ReadResourceResult) -> str:
    content = read.contents[0]
    assert isinstance(content, types.TextResourceContents)
    return content.text


async def test_a_database_that_cannot_be_used_is_one_line_and_exit_2(tmp_path: Path):
    proc = await asyncio.create_subprocess_exec(
        sys.executable, *mcp_args(tmp_path), env=server_env(), stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
    )
    out, err = await asyncio.wait_for(proc.communicate(), 60)
    assert proc.returncode == 2 and out == b""
    assert err.count(b"stratagate mcp: cannot use the database") == 1 and b"is a directory" in err
    assert b"Traceback" not in err


def test_the_folder_is_the_project_flag_else_the_first_local_file_root_else_the_current_directory(tmp_path: Path):
    spaced = tmp_path / "my repo"
    spaced.mkdir()
    project = {"mode": None}
    pick = Connections(None, lambda: project["mode"])
    # A remote or non-file root is skipped; percent-encoded paths are decoded; the namespace is DSH's for the folder.
    chosen = pick.choose(["https://example.com/repo", "file://otherhost/srv/repo", spaced.as_uri()])
    assert chosen.folder == str(spaced) and chosen.source == "the client's first root"
    assert chosen.namespace == resolve(ResolveParams(mode="project", cwd=str(spaced)))["namespace"]
    assert pick.choose(None).folder == os.getcwd()
    assert Connections(str(tmp_path), lambda: None).choose([spaced.as_uri()]).folder == str(tmp_path)
    project["mode"] = "global"  # set on the Memory page: every folder shares global:default, as DSH sessions do
    assert pick.choose([spaced.as_uri()]).namespace == "global:default"


SERVE_PROBE = """
import json, sys
import stratagate.cli, stratagate.rpc.server, stratagate.tools.catalog
stratagate.cli._parser().parse_args(["serve"])
print(json.dumps(sorted(m for m in sys.modules if m == "mcp" or m.startswith(("mcp.", "stratagate.mcp_server")))))
"""


def test_serve_and_the_dsh_tools_do_not_load_the_mcp_sdk():
    """`stratagate mcp` imports the SDK itself: `serve`'s start-up and its tools never pay for it."""
    out = subprocess.run([sys.executable, "-c", SERVE_PROBE], env=server_env(), capture_output=True, text=True,
                         timeout=300, check=False)
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout.splitlines()[-1]) == []
