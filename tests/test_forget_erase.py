"""Forget holds everywhere the agent looks; erase removes the text from every stored copy, down to the file bytes.

Driven over JSON-RPC through the real sidecar, with summaries and extractions from the scripted model server.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from conftest import model_env, turn
from support.model_server import ScriptedModelServer
from support.sidecar import RpcFailure, SidecarClient
from test_events_explicit import run_cli
from test_events_extraction import Script, draft, job_note, user_msg

NS = "proj"
SECRET = "zebra-quartz-4471"
SAID = f"Note for later: the staging vault code is {SECRET}."
FACT = f"The staging vault code is {SECRET}."
GRAPH_TEXT = "The API depends on Quartzbase."


@pytest.fixture
def script(model_server: ScriptedModelServer) -> Script:
    s = Script()
    model_server.default = s
    return s


@pytest.fixture
async def client(tmp_path: Path, model_server: ScriptedModelServer, script: Script) -> AsyncIterator[SidecarClient]:
    c = await SidecarClient.start(tmp_path / "memory.db", env=model_env(model_server), args=["--block-turns", "1"])
    yield c
    await c.close()


async def tool(client: SidecarClient, name: str, args: dict[str, Any], session: str = "s1") -> Any:
    return await client.tool(NS, session, name, args)


async def seed(client: SidecarClient, script: Script) -> dict[str, Any]:
    """Session s2 says the secret (an extracted event cites it); session s1 talks about something else."""
    script.answers.append(lambda p: {"events": [draft(
        FACT, user_msg(p), title="Staging vault code", type="fact", quotes=[f"the staging vault code is {SECRET}"])]})
    res = await client.call("turn.capture", turn(1, session="s2", user=SAID))
    (secret_block,) = res["sealed_block_ids"]
    await job_note(client, secret_block)  # summary (L2 repeats the user line) and extraction done
    script.durable = False
    res = await client.call("turn.capture", turn(1, session="s1", user="Let us look at the build pipeline today."))
    (other_block,) = res["sealed_block_ids"]
    await job_note(client, other_block, kind="block_summary")
    (hit,) = (await tool(client, "memory_search_events", {"query": "staging vault code"}))["hits"]
    return {"event": hit["id"], "block": secret_block}


async def views(client: SidecarClient, block: str, graph_query: str = "quartzbase") -> dict[str, Any]:
    """Everything the agent can look at."""
    out: dict[str, Any] = {
        "activation": await client.call(
            "activation.render", {"namespace": NS, "session": "s1", "query": "what is the staging vault code?"}),
        "raw": await tool(client, "memory_search_raw", {"query": "staging vault code"}),
        "raw_s2": await tool(client, "memory_search_raw", {"query": "vault code", "session": "s2"}),
        "events": await tool(client, "memory_search_events", {"query": "staging vault code"}),
        "blocks_s2": await tool(client, "memory_get_blocks", {}, session="s2"),
        "graph": await tool(client, "memory_search_graph", {"query": graph_query}),
    }
    for level in range(6):
        out[f"L{level}"] = await tool(client, "memory_expand_block", {"id": block, "level": level})
    return out


async def next_summary(client: SidecarClient, block: str) -> Any:
    """Wait for the block's next block_summary 'done' notification (after the ones already seen)."""
    def done() -> list[dict[str, Any]]:
        return [n for n in client.notifications if n["method"] == "jobs.changed" and n["params"]["kind"] ==
                "block_summary" and n["params"]["subject"] == block and n["params"]["status"] == "done"]

    seen = len(done())
    return await client.wait_for(lambda: len(done()) > seen)


def stable(value: Any) -> Any:
    """A view without the retrieval batch id each call gets."""
    if isinstance(value, dict):
        return {k: stable(v) for k, v in value.items() if k != "batch_id"}
    if isinstance(value, list):
        return [stable(v) for v in value]
    return value


def text(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False)


async def test_forget_hides_everywhere_and_restore_brings_it_back(client: SidecarClient, script: Script):
    seeded = await seed(client, script)
    graph_event = (await tool(client, "memory_remember", {"text": GRAPH_TEXT}))["id"]
    before = await views(client, seeded["block"])
    for name in ("activation", "raw", "raw_s2", "events", "blocks_s2", "L1", "L2", "L3", "L4", "L5"):
        assert SECRET in text(before[name]), name
    assert "Quartzbase" in text(before["graph"])
    assert before["L2"]["level"] == 2 and SECRET in before["L2"]["view"]

    await tool(client, "memory_forget", {"id": seeded["event"]})
    await tool(client, "memory_forget", {"id": graph_event})
    after = await views(client, seeded["block"])
    for name, value in after.items():
        assert SECRET not in text(value), name
    assert after["graph"]["hits"] == []
    with pytest.raises(RpcFailure):
        await tool(client, "memory_expand_graph_node", {"node": "Quartzbase"})
    marker = f"[hidden: forgotten memory {seeded['event']} — memory_restore {seeded['event']} shows it again]"
    assert marker in after["L5"]["view"] and marker in after["L4"]["view"] and marker in after["L3"]["view"]
    assert "Assistant reply 1." in after["L5"]["view"]  # the rest of the block is still there
    hidden_msgs = [m for m in after["L5"]["messages"] if "hidden" in m]
    assert len(hidden_msgs) == 1 and hidden_msgs[0]["hidden"] == marker and "content" not in hidden_msgs[0]
    assert after["raw"]["hits"] == [] and after["raw"]["hidden"] >= 1
    assert after["events"]["hits"] == []
    assert "restating a forgotten memory" in after["L2"]["view"]

    await tool(client, "memory_restore", {"id": seeded["event"]})
    await tool(client, "memory_restore", {"id": graph_event})
    again = await views(client, seeded["block"])
    for name in before:
        assert stable(again[name]) == stable(before[name]), name  # nothing stored had changed


def file_bytes(db: Path) -> bytes:
    data = b""
    for suffix in ("", "-wal"):
        p = Path(str(db) + suffix)
        if p.exists():
            data += p.read_bytes()
    return data.lower()


async def test_erase_removes_every_copy_down_to_the_file_bytes(client: SidecarClient, script: Script, tmp_path: Path):
    db = tmp_path / "memory.db"
    seeded = await seed(client, script)
    # A remembered fact whose memory_remember call is also captured as a tool record of session s1.
    remembered = await client.call("tools.call", {
        "namespace": NS, "session": "s1", "name": "memory_remember", "arguments": {"text": GRAPH_TEXT},
        "call_id": "call_graph"})
    res = await client.call("turn.capture", turn(2, session="s1", user="Please remember the API dependency.",
                                                 tools=[{"name": "memory_remember", "call_id": "call_graph",
                                                         "arguments": {"text": GRAPH_TEXT}, "result": remembered}]))
    (tool_block,) = res["sealed_block_ids"]
    await job_note(client, tool_block, kind="block_summary")
    await views(client, seeded["block"])  # retrieval batches now hold queries and results mentioning it

    resummarised = next_summary(client, seeded["block"])
    erased = await tool(client, "memory_forget", {"id": seeded["event"], "erase": True})
    assert erased["erased"] is True and erased["counts"]["messages"] >= 1 and erased["counts"]["blocks"] >= 1
    await resummarised  # the rebuilt block is summarised again from what is left
    gone = await client.call("memory.erase", {"namespace": NS, "id": remembered["id"]})
    assert gone["erased"] is True and gone["counts"]["facts"] >= 1 and gone["counts"]["nodes"] >= 1

    after = await views(client, seeded["block"], graph_query="API dependency")  # not storing the word again
    for name, value in after.items():
        shown = text(value)
        assert SECRET not in shown and "quartzbase" not in shown.lower(), name
    assert "[erased]" in after["L5"]["view"]
    expanded = await tool(client, "memory_expand_event", {"id": seeded["event"]})
    assert expanded["title"] == "[erased]" and expanded["status"] == "forgotten"
    assert {s["quote"] for s in expanded["sources"]} == {"[erased]"}

    refused = pytest.raises(RpcFailure)
    with refused as err:
        await tool(client, "memory_remember", {"text": FACT})
    assert "erased" in err.value.message and err.value.data["tombstone"] == seeded["event"]
    with pytest.raises(RpcFailure) as err:
        await tool(client, "memory_restore", {"id": seeded["event"]})
    assert "cannot be restored" in err.value.message
    with pytest.raises(RpcFailure) as err:
        await client.call("memory.erase", {"namespace": NS, "id": seeded["event"]})
    assert "already erased" in err.value.message

    code, out, err_text = await run_cli("audit", "--db", str(db), "--namespace", NS, "--json", "--limit", "500")
    assert code == 0, err_text
    entries = json.loads(out)
    erasures = [e for e in entries if e["action"] == "event.erased"]
    assert {e["subject_id"] for e in erasures} == {seeded["event"], remembered["id"]}
    assert {e["actor"] for e in erasures} == {"agent", "user"}
    assert all(set(e["after"]) == {"erased_at", "counts"} for e in erasures)
    assert SECRET not in out and "quartzbase" not in out.lower()

    await client.close()
    data = file_bytes(db)
    assert data, "the database file is readable"
    assert SECRET.encode() not in data
    assert b"quartzbase" not in data
    assert b"staging vault code is" not in data
    conn = sqlite3.connect(db)
    try:
        rows = conn.execute("SELECT subject_type, subject_id, counts FROM erasures ORDER BY id").fetchall()
        assert [(r[0], r[1]) for r in rows] == [("event", seeded["event"]), ("event", remembered["id"])]
        assert conn.execute("SELECT COUNT(*) FROM privileged_writes").fetchone()[0] == 0
        assert conn.execute("SELECT COUNT(*) FROM tombstones").fetchone()[0] == 2
    finally:
        conn.close()


async def test_cli_erase_of_a_message_and_clear_errors(tmp_path: Path, model_server: ScriptedModelServer):
    db = tmp_path / "memory.db"
    c = await SidecarClient.start(db, env=model_env(model_server), args=["--block-turns", "1"])
    try:
        res = await c.call("turn.capture", turn(1, user=f"My locker combination is {SECRET}, keep it."))
        (block,) = res["sealed_block_ids"]
        await job_note(c, block, kind="block_summary")
        l5 = await tool(c, "memory_expand_block", {"id": block, "level": 5})
        user = next(m["id"] for m in l5["messages"] if m["role"] == "user")
    finally:
        await c.close()

    code, _, err = await run_cli("erase", "evt_x", "--db", str(db), "--namespace", NS, "--yes")
    assert code == 1 and "not an event id" in err
    code, _, err = await run_cli("erase", "evt_99", "--db", str(db), "--namespace", NS, "--yes")
    assert code == 1 and "unknown event evt_99" in err
    code, _, err = await run_cli("erase", user, "--db", str(db), "--namespace", NS)
    assert code == 1 and "--yes" in err  # no terminal to confirm on
    code, out, err = await run_cli("erase", user, "--db", str(db), "--namespace", NS, "--yes")
    assert code == 0, err
    assert out.startswith(f"erased: {user} (") and "messages 1" in out
    assert SECRET.encode() not in file_bytes(db)

    c = await SidecarClient.start(db, env=model_env(model_server), args=["--block-turns", "1"])
    try:
        await job_note(c, block, kind="block_summary")  # re-summarised from the blanked transcript
        view = await tool(c, "memory_expand_block", {"id": block, "level": 5})
        assert "User: [erased]" in view["view"] and SECRET not in text(view)
        raw = await tool(c, "memory_search_raw", {"query": "locker combination"})
        assert raw["hits"] == []
    finally:
        await c.close()
