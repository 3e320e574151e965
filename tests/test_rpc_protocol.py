"""The stdio JSON-RPC contract: every kind of bad input gets a clear error and the sidecar keeps serving."""

from __future__ import annotations

import asyncio
import json
import os
import sys
from pathlib import Path

import pytest

from conftest import turn
from support.sidecar import REPO, RpcFailure, SidecarClient


async def test_ping_info_and_clean_shutdown(sidecar: SidecarClient, tmp_path: Path):
    assert (await sidecar.call("system.ping"))["pong"] is True
    info = await sidecar.call("system.info")
    assert info["db_path"] == str(tmp_path / "memory.db")
    assert info["schema_version"] == info["expected_schema_version"] >= 1
    assert info["counts"]["turns"] == 0
    assert await sidecar.call("system.shutdown") == {"ok": True}
    assert await asyncio.wait_for(sidecar.proc.wait(), 15) == 0


async def test_exits_cleanly_on_stdin_eof(sidecar: SidecarClient):
    pending = await sidecar.request("turn.capture", turn(1))
    assert sidecar.proc.stdin is not None
    sidecar.proc.stdin.close()
    # The in-flight capture still completes and is answered before exit.
    assert (await asyncio.wait_for(pending, 15))["result"]["duplicate"] is False
    assert await asyncio.wait_for(sidecar.proc.wait(), 15) == 0


async def test_exits_cleanly_when_stdout_pipe_breaks(tmp_path: Path):
    env = {**os.environ, "PYTHONPATH": str(REPO / "sidecar")}
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "stratagate", "serve", "--db", str(tmp_path / "m.db"),
        stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE, env=env)
    assert proc.stdin and proc.stdout
    proc.stdin.write(b'{"jsonrpc":"2.0","id":1,"method":"system.ping"}\n')
    await proc.stdin.drain()
    assert json.loads(await proc.stdout.readline())["result"]["pong"] is True
    proc.stdout.feed_eof()
    transport = proc._transport  # close our read end so the sidecar's next write hits EPIPE
    transport.get_pipe_transport(1).close()
    proc.stdin.write(b'{"jsonrpc":"2.0","id":2,"method":"system.ping"}\n')
    await proc.stdin.drain()
    assert await asyncio.wait_for(proc.wait(), 15) == 0


@pytest.mark.parametrize(
    ("line", "code", "fragment"),
    [
        (b"this is not json", -32700, "not valid JSON"),
        (b"\xff\xfe{}", -32700, "UTF-8"),
        (b'{"jsonrpc": "2.0", "id": 5, "method": 7}', -32600, "JSON-RPC"),
        (b"[]", -32600, "empty batch"),
        (b'{"jsonrpc": "2.0", "method": "system.ping", "params": null, "id": "x"}', -32600, '"params"'),
        (b'{"jsonrpc": "1.0", "method": "system.ping", "id": "x"}', -32600, '"jsonrpc"'),
        (b'{"jsonrpc": "2.0", "method": "system.ping", "id": "x", "extra": 1}', -32600, "'extra'"),
        (b'{"jsonrpc": "2.0", "method": "system.ping", "id": [1]}', -32600, '"id"'),
    ],
)
async def test_malformed_lines_get_errors_and_serving_continues(sidecar: SidecarClient, line: bytes, code: int,
                                                                fragment: str):
    await sidecar.send_line(line)
    response = await sidecar.wait_for(lambda: sidecar.orphans[-1] if sidecar.orphans else None)
    assert response["error"]["code"] == code
    assert fragment in response["error"]["message"]
    assert (await sidecar.call("system.ping"))["pong"] is True


@pytest.mark.parametrize(
    ("method", "params", "code", "fragment"),
    [
        ("no.such.method", {}, -32601, "unknown method 'no.such.method'"),
        ("turn.capture", ["positional"], -32602, "named parameters"),
        ("turn.capture", {"namespace": "p", "session": "s", "receipt": "r", "user": 42}, -32602, "user"),
        ("turn.capture", {"namespace": "p", "session": "s", "receipt": "r"}, -32602, "needs user text"),
        ("turn.capture", {"namespace": "", "session": "s", "receipt": "r", "user": "x"}, -32602, "namespace"),
        ("turn.capture", {"namespace": "p", "session": "s", "receipt": "r", "user": "x", "bogus": 1}, -32602,
         "bogus"),
        ("turn.capture", {"namespace": "p", "session": "s", "receipt": "r", "user": "x",
                          "tools": [{"name": "t", "is_error": "maybe"}]}, -32602, "tools.0.is_error"),
        ("turn.capture", {"namespace": "p", "session": "s", "receipt": "r", "user": "x",
                          "started_at": "yesterday"}, -32602, "started_at"),
        ("tools.call", {"namespace": "nope", "session": "s", "name": "memory_get_blocks"}, -32004,
         "unknown namespace 'nope'"),
        ("jobs.list", {"status": "weird"}, -32602, "status"),
        ("jobs.retry", {"id": "job_999"}, -32004, "unknown job"),
        ("jobs.retry", {"id": "blk_1"}, -32602, "job_7"),
        ("system.ping", {"extra": True}, -32602, "extra"),
    ],
)
async def test_bad_params_get_clear_errors(sidecar: SidecarClient, method, params, code, fragment):
    with pytest.raises(RpcFailure) as err:
        await sidecar.call(method, params)
    assert err.value.code == code
    assert fragment in err.value.message
    assert (await sidecar.call("system.ping"))["pong"] is True


async def test_tool_errors_name_the_problem(sidecar: SidecarClient):
    for i in range(1, 7):
        await sidecar.call("turn.capture", turn(i))
    cases = [
        ("memory_nope", {}, -32004, "unknown tool"),
        ("memory_expand_block", {"id": "blk_999", "level": 5}, -32004, "unknown block blk_999"),
        ("memory_expand_block", {"id": "12", "level": 5}, -32602, "blk_12"),
        ("memory_expand_block", {"id": "blk_1", "level": 9}, -32602, "level"),
        ("memory_search_raw", {"query": "x", "limit": 500}, -32602, "limit"),
        ("memory_search_raw", {}, -32602, "query"),
    ]
    for name, args, code, fragment in cases:
        with pytest.raises(RpcFailure) as err:
            await sidecar.tool("proj", "s1", name, args)
        assert err.value.code == code, name
        assert fragment in err.value.message, (name, err.value.message)


async def test_oversized_line_is_rejected_and_serving_continues(tmp_path: Path):
    client = await SidecarClient.start(tmp_path / "m.db", env={"STRATAGATE_MAX_LINE_BYTES": "65536"})
    try:
        big = json.dumps({"jsonrpc": "2.0", "id": 77, "method": "turn.capture",
                          "params": turn(1, user="x" * 200_000)}).encode()
        await client.send_line(big)
        response = await client.wait_for(lambda: client.orphans[-1] if client.orphans else None)
        assert response["error"]["code"] == -32005
        assert response["id"] == 77  # the id is recovered from the head of the line
        assert "65536" in response["error"]["message"]
        assert (await client.call("system.info"))["counts"]["turns"] == 0
        assert (await client.call("turn.capture", turn(2)))["duplicate"] is False
    finally:
        await client.close()


async def test_slow_model_call_never_blocks_capture_or_reads(tmp_path: Path):
    """Without a direct route, summaries go to the host; a host that never answers must not stall capture."""
    never = asyncio.Event()

    async def host(method: str, params: dict) -> dict:
        await never.wait()
        return {}

    client = await SidecarClient.start(tmp_path / "m.db", args=["--block-turns", "1"], host_handler=host)
    try:
        await client.call("turn.capture", turn(1))
        await client.wait_for(lambda: client.host_requests)
        assert client.host_requests[0]["method"] == "host.llm.complete"
        # The model call is in flight; captures and reads keep flowing.
        for i in range(2, 6):
            assert (await client.call("turn.capture", turn(i), timeout=10))["duplicate"] is False
        listing = await client.tool("proj", "s1", "memory_get_blocks")
        assert len(listing["blocks"]) == 5
    finally:
        never.set()
        await client.close()


async def test_database_files_are_private(sidecar: SidecarClient, tmp_path: Path):
    await sidecar.call("turn.capture", turn(1))
    db = tmp_path / "memory.db"
    assert db.stat().st_mode & 0o777 == 0o600
    for suffix in ("-wal", "-shm"):
        p = Path(str(db) + suffix)
        if p.exists():
            assert p.stat().st_mode & 0o777 == 0o600


async def test_default_db_lives_under_dsh_home_and_existing_folders_keep_their_mode(tmp_path: Path):
    home = tmp_path / "dshhome"
    env = {**os.environ, "PYTHONPATH": str(REPO / "sidecar"), "DSH_HOME": str(home)}
    env.pop("STRATAGATE_DB", None)
    # `info` on a missing database says so and creates nothing.
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "stratagate", "info", stdout=asyncio.subprocess.PIPE, env=env)
    out, _ = await proc.communicate()
    assert json.loads(out) == {"db_path": str(home / "stratagate" / "memory.db"), "exists": False}
    assert not home.exists()

    tmp_path.chmod(0o755)
    client = await SidecarClient.start(None, env={"DSH_HOME": str(home)})
    try:
        await client.call("turn.capture", turn(1))
        info = await client.call("system.info")
    finally:
        await client.close()
    assert info["db_path"] == str(home / "stratagate" / "memory.db")
    assert (home / "stratagate").stat().st_mode & 0o777 == 0o700
    assert home.stat().st_mode & 0o777 == 0o700
    assert tmp_path.stat().st_mode & 0o777 == 0o755  # an existing folder is not ours to lock down


async def test_reads_see_captures_sent_before_them(sidecar: SidecarClient):
    """Pipelined without waiting: capture, then search, then info. Each later request sees the turn."""
    capture = await sidecar.request("turn.capture", turn(1, namespace="fresh", user="pipelined pnpm decision"))
    search = await sidecar.request("tools.call", {"namespace": "fresh", "session": "s1", "name": "memory_search_raw",
                                                  "arguments": {"query": "pnpm"}})
    info = await sidecar.request("system.info")
    results = await asyncio.wait_for(asyncio.gather(capture, search, info), 30)
    assert results[0]["result"]["duplicate"] is False
    assert [h["text"] for h in results[1]["result"]["hits"]] == ["pipelined pnpm decision"]
    assert results[2]["result"]["counts"]["turns"] == 1


async def test_batches_are_answered_per_request(sidecar: SidecarClient):
    await sidecar.send_line(json.dumps([
        {"jsonrpc": "2.0", "id": "b1", "method": "system.ping"},
        {"jsonrpc": "2.0", "method": "system.ping"},  # a notification: no reply
        {"jsonrpc": "2.0", "id": "b2", "method": "no.such"},
    ]).encode())
    replies = await sidecar.wait_for(lambda: next((o for o in sidecar.orphans if isinstance(o, list)), None))
    by_id = {r["id"]: r for r in replies}
    assert set(by_id) == {"b1", "b2"}
    assert by_id["b1"]["result"]["pong"] is True
    assert by_id["b2"]["error"]["code"] == -32601


async def test_odd_host_error_replies_do_not_stop_the_reader(tmp_path: Path):
    client = await SidecarClient.start(tmp_path / "m.db", args=["--block-turns", "1"],
                                       env={"STRATAGATE_JOB_BACKOFF_BASE": "30"})
    client.raw_host_reply = lambda msg: {"jsonrpc": "2.0", "id": msg["id"], "error": "boom, not an object"}
    try:
        await client.call("turn.capture", turn(1))
        note = await client.wait_notification("jobs.changed", lambda p: p["status"] == "queued")
        assert "boom, not an object" in note["error"]
        assert (await client.call("system.ping"))["pong"] is True
    finally:
        await client.close()


async def test_direct_route_without_model_name_refuses_to_start(tmp_path: Path):
    env = {**os.environ, "PYTHONPATH": str(REPO / "sidecar"), "STRATAGATE_MODEL_BASE_URL": "http://127.0.0.1:9/v1"}
    env.pop("STRATAGATE_MODEL", None)
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "stratagate", "serve", "--db", str(tmp_path / "m.db"),
        stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE, env=env)
    _, err = await asyncio.wait_for(proc.communicate(), 30)
    assert proc.returncode == 2
    assert b"STRATAGATE_MODEL" in err and b"not" in err


async def test_newer_schema_is_refused_and_the_process_exits(tmp_path: Path):
    import sqlite3

    db = tmp_path / "m.db"
    conn = sqlite3.connect(db)
    conn.execute("PRAGMA user_version = 999")
    conn.close()
    env = {**os.environ, "PYTHONPATH": str(REPO / "sidecar")}
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "stratagate", "serve", "--db", str(db),
        stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE, env=env)
    out, _ = await asyncio.wait_for(proc.communicate(), 30)
    assert proc.returncode == 2
    fatal = json.loads(out.splitlines()[0])
    assert fatal["method"] == "system.fatal" and "schema version 999" in fatal["params"]["message"]


async def test_console_script_entry_point():
    script = Path(sys.executable).parent / "stratagate"
    proc = await asyncio.create_subprocess_exec(str(script), "--version", stdout=asyncio.subprocess.PIPE)
    out, _ = await proc.communicate()
    from stratagate import __version__

    assert proc.returncode == 0 and out.decode().strip() == f"stratagate {__version__}"


async def test_tools_list_matches_the_shims_copy(sidecar: SidecarClient):
    """plugin/tools.json lets the DSH shim offer the tools before the sidecar runs; it must never drift."""
    shipped = json.loads((REPO / "plugin" / "tools.json").read_text())
    assert await sidecar.call("tools.list") == shipped, "regenerate it: stratagate tools > plugin/tools.json"


async def test_a_version_1_database_is_migrated_in_place(tmp_path: Path):
    import sqlite3

    from stratagate.storage.schema import MIGRATION_1, SCHEMA_VERSION

    db = tmp_path / "old.db"
    conn = sqlite3.connect(db)
    conn.executescript(MIGRATION_1)
    conn.execute("PRAGMA user_version = 1")
    conn.execute("INSERT INTO namespaces(name, created_at) VALUES ('proj', '2026-01-01T00:00:00.000Z')")
    conn.commit()
    conn.close()
    client = await SidecarClient.start(db)
    try:
        info = await client.call("system.info")
        assert info["schema_version"] == SCHEMA_VERSION >= 2
        assert info["counts"]["namespaces"] == 1
        await client.call("turn.capture", turn(1))  # the old namespace keeps working
        remembered = await client.tool("proj", "s1", "memory_remember", {"text": "The project uses pnpm."})
        assert remembered["id"].startswith("evt_")
        assert (await client.call("system.info"))["counts"]["events"]["active"] == 1
    finally:
        await client.close()
