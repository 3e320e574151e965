"""Without a direct model route, the sidecar asks the host (host.llm.complete) over the same stdio pipe."""

from __future__ import annotations

import json
from pathlib import Path

from conftest import summary_arguments, turn
from support.sidecar import SidecarClient


async def test_block_summary_through_the_host(tmp_path: Path):
    seen: list[dict] = []

    async def host(method: str, params: dict) -> dict:
        seen.append(params)
        tool = params["tool"]
        body = {"messages": params["messages"]}
        return {"text": "", "finish_reason": "tool_calls", "model": "host-model",
                "tool_calls": [{"name": tool["name"], "arguments": json.dumps(summary_arguments(tool["name"], body))}]}

    client = await SidecarClient.start(tmp_path / "m.db", args=["--block-turns", "2"], host_handler=host)
    try:
        await client.call("turn.capture", turn(1))
        await client.call("turn.capture", turn(2))
        await client.wait_notification("jobs.changed", lambda p: p["kind"] == "block_summary" and p["status"] == "done")
        request = client.host_requests[0]
        assert request["method"] == "host.llm.complete"
        params = seen[0]
        assert params["tool"]["name"] == "stratagate_summarize_block"
        assert params["tool"]["parameters"]["type"] == "object"
        assert {"title", "summary", "key_facts"} <= set(params["tool"]["parameters"]["required"])
        assert params["messages"][0]["role"] == "system"
        assert "User message number 1" in params["messages"][-1]["content"]
        listing = await client.tool("proj", "s1", "memory_get_blocks")
        assert listing["blocks"][0]["status"] == "ready"
        info = await client.call("system.info")
        assert info["model_route"] == "host:host.llm.complete"
    finally:
        await client.close()


async def test_host_error_gives_fallback_views_and_job_retryable(tmp_path: Path):
    # Issue 12 changed this: the block no longer stays pending while the host's model fails; the rules write its
    # views (marked fallback) and the job keeps retrying to replace them.
    async def host(method: str, params: dict) -> dict:
        raise RuntimeError("no model configured in DSH")

    client = await SidecarClient.start(tmp_path / "m.db", args=["--block-turns", "1"], host_handler=host,
                                       env={"STRATAGATE_JOB_BACKOFF_BASE": "30"})
    try:
        await client.call("turn.capture", turn(1))
        note = await client.wait_notification(
            "jobs.changed", lambda p: p["kind"] == "block_summary" and p["status"] == "queued"
        )
        assert "no model configured in DSH" in note["error"]
        # Other jobs (the embedding job) may be listed too, and first: pick the summary job by kind.
        job = next(j for j in (await client.call("jobs.list"))["jobs"] if j["kind"] == "block_summary")
        assert job["status"] == "queued" and job["next_run_at"] is not None
        listing = await client.tool("proj", "s1", "memory_get_blocks")
        assert listing["blocks"][0]["status"] == "ready"
        assert (await client.call("system.info"))["counts"]["block_views"]["fallback"] == 1
    finally:
        await client.close()
