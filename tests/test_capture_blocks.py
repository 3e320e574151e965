"""Acceptance: capture through JSON-RPC, blocks sealed by code before any model call, then made ready."""

from __future__ import annotations

import asyncio
import json
import threading
from collections import deque
from collections.abc import Callable
from pathlib import Path
from typing import Any

from conftest import model_env, summary_arguments, turn
from stratagate.tokens import count_tokens
from support.model_server import ScriptedModelServer, auto_tool_call, delay, tool_call
from support.sidecar import SidecarClient

TOOLS_TURN = [
    {"name": "read_file", "arguments": {"path": "src/app.ts", "lines": [1, 40]},
     "result": {"content": "export const port = 8080;\n", "truncated": False}, "call_id": "c1"},
    {"name": "bash", "arguments": {"command": "pnpm test --filter 'api'"},
     "result": "FAIL api/user.test.ts\n  ✕ creates user (12 ms)", "is_error": True},
]


async def capture_13(client: SidecarClient) -> list[dict]:
    results = []
    for i in range(1, 14):
        extra = {}
        if i == 2:
            extra = {
                "tools": TOOLS_TURN,
                "user": "Run the tests please.\nok\n好的",
                "assistant": "好的\nThe api test fails.",
            }
        results.append(await client.call("turn.capture", turn(i, **extra)))
    return results


async def test_thirteen_turns_make_two_sealed_blocks_and_one_open_turn(sidecar: SidecarClient,
                                                                       model_server: ScriptedModelServer):
    results = await capture_13(sidecar)
    sealed = [b for r in results for b in r["sealed_block_ids"]]
    assert len(sealed) == 2
    assert results[5]["sealed_block_ids"] and results[11]["sealed_block_ids"]
    assert all(not r["duplicate"] for r in results)

    listing = await sidecar.tool("proj", "s1", "memory_get_blocks")
    assert [b["turns"] for b in listing["blocks"]] == [[1, 6], [7, 12]]
    assert listing["open_turns"] == 1

    # L5 is exactly what was captured, tool records included.
    l5 = await sidecar.tool("proj", "s1", "memory_expand_block", {"id": sealed[0], "level": 5})
    msgs = l5["messages"]
    turn2 = [m for m in msgs if m["turn"] == 2]
    assert [m["role"] for m in turn2] == ["user", "tool", "tool", "assistant"]
    assert turn2[0]["content"] == "Run the tests please.\nok\n好的"
    assert turn2[-1]["content"] == "好的\nThe api test fails."
    for captured, stored in zip(TOOLS_TURN, turn2[1:3], strict=True):
        assert stored["name"] == captured["name"]
        assert stored["arguments"] == captured["arguments"]
        assert stored["result"] == captured["result"]
        assert stored["is_error"] == captured.get("is_error", False)
    assert "pnpm test --filter 'api'" in l5["view"]
    assert '"path": "src/app.ts"' in l5["view"]
    assert "✕ creates user" in l5["view"]
    for i in range(1, 7):
        assert f"User message number {i} about topic{i}." in l5["view"] or i == 2

    # Length guard, with exact tokens recomputed here.
    views = {}
    for level in (3, 4, 5):
        views[level] = (await sidecar.tool("proj", "s1", "memory_expand_block", {"id": sealed[0], "level": level}))
    toks = {lv: count_tokens(v["view"]) for lv, v in views.items()}
    assert toks[3] <= toks[4] <= toks[5]
    assert views[5]["tokens"]["L5"] == toks[5]

    # Filler-only lines are gone from L3, content stays.
    l3_lines = [ln.strip() for ln in views[3]["view"].splitlines()]
    assert "ok" not in l3_lines and "好的" not in l3_lines
    assert "User: Run the tests please." in views[3]["view"]
    assert "The api test fails." in views[3]["view"]
    assert "Tool bash → failed" in views[3]["view"]


async def test_blocks_become_ready_after_the_model_answers(sidecar: SidecarClient):
    results = await capture_13(sidecar)
    sealed = [b for r in results for b in r["sealed_block_ids"]]
    for block_id in sealed:
        await sidecar.wait_notification("jobs.changed", lambda p, b=block_id: p["status"] == "done"
                                        and p["subject"] == b)
    listing = await sidecar.tool("proj", "s1", "memory_get_blocks")
    assert [b["status"] for b in listing["blocks"]] == ["ready", "ready"]
    l0 = await sidecar.tool("proj", "s1", "memory_expand_block", {"id": sealed[0], "level": 0})
    assert l0["view"].startswith("Turns 1–6\nTags: test")
    l2 = await sidecar.tool("proj", "s1", "memory_expand_block", {"id": sealed[1], "level": 2})
    assert l2["view"].startswith("- User message number 7")
    # One level per answer: an L3 read carries no other level's text.
    l3 = await sidecar.tool("proj", "s1", "memory_expand_block", {"id": sealed[0], "level": 3})
    dumped = json.dumps(l3, ensure_ascii=False)
    assert "Turns 1–6" not in dumped and "The scripted model summarised" not in dumped and "messages" not in l3


def by_tool(summary: Callable[[dict], Any]) -> Callable[[dict], Any]:
    """Summary requests answered by ``summary(body)``; the extraction that a fallback block queues gets no events."""

    def decide(body: dict) -> Any:
        if body["tool_choice"]["function"]["name"] == "stratagate_extract_events":
            return tool_call("stratagate_extract_events", {"events": []})
        return summary(body)

    return decide


async def test_malformed_model_answer_gives_fallback_views_then_retried(tmp_path: Path,
                                                                       model_server: ScriptedModelServer):
    # Two bad answers exhaust the gateway's one correction retry: the attempt fails, the rules write the block's
    # views at once (marked fallback) and the job backs off. The next attempt is held at a gate so the fallback state
    # can be observed without racing it; its answer then replaces the fallback views (issue 12: behaviour changed,
    # the block no longer stays pending while the model fails).
    hold = threading.Event()
    answers = deque([tool_call("stratagate_summarize_block", '{"title": "x", "summary": '),
                     tool_call("stratagate_summarize_block", {"title": "only a title"}),
                     delay(60, until=hold)])
    good = auto_tool_call(summary_arguments)
    held = threading.Event()  # the held attempt has started

    def summary(body: dict) -> Any:
        if not answers:
            return good(body)
        answer = answers.popleft()
        if not answers:
            held.set()
        return answer

    model_server.default = by_tool(summary)
    client = await SidecarClient.start(tmp_path / "m.db", env=model_env(model_server), args=["--block-turns", "2"])
    try:
        with model_server.gate(hold):
            await client.call("turn.capture", turn(1))
            res = await client.call("turn.capture", turn(2))
            (block_id,) = res["sealed_block_ids"]
            failed = await client.wait_notification("jobs.changed", lambda p: p["status"] == "queued"
                                                    and p["kind"] == "block_summary")
            assert "not a valid stratagate_summarize_block call" in failed["error"]
            assert failed["attempts"] == 1
            assert await asyncio.to_thread(held.wait, 30)
            mid = await client.tool("proj", "s1", "memory_expand_block", {"id": block_id, "level": 1})
            assert mid["status"] == "ready" and mid["level"] == 1  # the rules' L1 while the model is out
            assert "User message number 1 about topic1" in mid["view"]
            info = await client.call("system.info")
            assert info["counts"]["block_views"] == {"model": 0, "extractive": 0, "fallback": 1}
            hold.set()
        await client.wait_notification("jobs.changed", lambda p: p["status"] == "done"
                                       and p["kind"] == "block_summary")
        listing = await client.tool("proj", "s1", "memory_get_blocks")
        assert listing["blocks"][0]["status"] == "ready"
        l0 = await client.tool("proj", "s1", "memory_expand_block", {"id": block_id, "level": 0})
        assert l0["view"].startswith("Turns 1–2")  # the model's title replaced the fallback one
        jobs = await client.call("jobs.list", {"namespace": "proj"})
        (job,) = [j for j in jobs["jobs"] if j["kind"] == "block_summary"]
        assert job["attempts"] == 2 and job["status"] == "done"
        info = await client.call("system.info")
        assert info["counts"]["block_views"] == {"model": 1, "extractive": 0, "fallback": 0}
    finally:
        await client.close()


async def test_malformed_answers_keep_fallback_views_until_failed_and_visible(tmp_path: Path,
                                                                              model_server: ScriptedModelServer):
    # Issue 12 changed this: the failed block is ready with rule-written (fallback) views instead of pending.
    model_server.default = by_tool(lambda body: tool_call("stratagate_summarize_block", "not json at all"))
    env = model_env(model_server, STRATAGATE_JOB_MAX_ATTEMPTS="2")
    client = await SidecarClient.start(tmp_path / "m.db", env=env, args=["--block-turns", "1"])
    try:
        res = await client.call("turn.capture", turn(1))
        (block_id,) = res["sealed_block_ids"]
        failed = await client.wait_notification("jobs.changed", lambda p: p["status"] == "failed")
        assert failed["attempts"] == 2 and failed["kind"] == "block_summary"
        listing = await client.tool("proj", "s1", "memory_get_blocks")
        assert listing["blocks"][0]["status"] == "ready"
        job = (await client.call("jobs.list", {"status": "failed"}))["jobs"][0]
        assert job["subject"] == block_id and "not a valid" in job["last_error"]
        info = await client.call("system.info")
        assert info["counts"]["jobs"]["failed"] == 1 and info["last_job_error"].startswith(job["id"])
        assert info["counts"]["block_views"]["fallback"] == 1
        # The source is intact whatever the model did.
        l5 = await client.tool("proj", "s1", "memory_expand_block", {"id": block_id, "level": 5})
        assert l5["messages"][0]["content"] == turn(1)["user"]
        # A manual retry with a working model upgrades the views.
        model_server.default = by_tool(auto_tool_call(summary_arguments))
        retried = await client.call("jobs.retry", {"id": job["id"]})
        assert retried["retried"] == [job["id"]]
        await client.wait_notification("jobs.changed", lambda p: p["status"] == "done"
                                       and p["kind"] == "block_summary")
        info = await client.call("system.info")
        assert info["counts"]["block_views"] == {"model": 1, "extractive": 0, "fallback": 0}
    finally:
        await client.close()


async def test_duplicate_receipt_stores_one_turn(sidecar: SidecarClient):
    first = await sidecar.call("turn.capture", turn(1))
    again = await sidecar.call("turn.capture", turn(1, user="changed text"))
    assert again == {"turn_id": first["turn_id"], "duplicate": True, "sealed_block_ids": []}
    info = await sidecar.call("system.info")
    assert info["counts"]["turns"] == 1
    hits = await sidecar.tool("proj", "s1", "memory_search_raw", {"query": "changed"})
    assert hits["hits"] == []


async def test_search_raw_ranks_messages_and_tool_results(sidecar: SidecarClient):
    await capture_13(sidecar)
    res = await sidecar.tool("proj", "s1", "memory_search_raw", {"query": "creates user test fails", "limit": 5})
    assert res["hits"], res
    top = res["hits"][0]
    assert top["turn"] == 2 and top["block_id"] is not None
    roles = {h["role"] for h in res["hits"]}
    assert "tool" in roles
    open_hit = await sidecar.tool("proj", "s1", "memory_search_raw", {"query": "topic13"})
    assert open_hit["hits"][0]["turn"] == 13 and open_hit["hits"][0]["block_id"] is None
    nothing = await sidecar.tool("proj", "s1", "memory_search_raw", {"query": "the and of"})
    assert nothing["hits"] == []


async def test_namespaces_never_leak(sidecar: SidecarClient):
    await sidecar.call("turn.capture", turn(1, namespace="a", user="secret alpha plan"))
    await sidecar.call("turn.capture", turn(1, namespace="b", user="beta plan"))
    a = await sidecar.tool("a", "s1", "memory_search_raw", {"query": "plan"})
    assert [h["text"] for h in a["hits"]] == ["secret alpha plan"]
    b = await sidecar.tool("b", "s1", "memory_search_raw", {"query": "alpha"})
    assert b["hits"] == []


async def test_audit_log_records_capture_seal_and_summary(sidecar: SidecarClient, tmp_path: Path):
    for i in range(1, 7):
        await sidecar.call("turn.capture", turn(i))
    await sidecar.wait_notification("jobs.changed", lambda p: p["status"] == "done")
    await sidecar.close()
    import sqlite3

    conn = sqlite3.connect(tmp_path / "memory.db")
    rows = conn.execute("SELECT actor, action FROM audit_log ORDER BY id").fetchall()
    actions = [(a, b) for a, b in rows]
    assert actions.count(("capture", "turn.captured")) == 6
    assert ("capture", "block.sealed") in actions and ("model", "block.summarized") in actions
    after = json.loads(conn.execute("SELECT after FROM audit_log WHERE action = 'block.summarized'").fetchone()[0])
    assert after["status"] == "ready"
    conn.close()
