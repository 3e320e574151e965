"""Bounded work per request: level 5 of a huge block comes in pages, rendered off the event loop; the recall query
of activation.render is cut to its first 4,000 characters. Judged by results and reply order, never wall time."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from conftest import model_env, turn
from stratagate.blocks.views import L5_PAGE_CHARS, L5_PAGE_MAX_MESSAGES, L5_PAGE_MESSAGES
from support.model_server import ScriptedModelServer
from support.sidecar import RpcFailure, SidecarClient

TOOLS = 2000
NS, SESSION = "proj", "s1"


def huge_turn() -> dict[str, Any]:
    tools = [
        {"name": "bash", "arguments": {"command": f"grep -rn pattern{i} src/"}, "call_id": f"call_{i}",
         "result": {"stdout": "\n".join(f"src/file{j}.py:{j}: pattern{i} here" for j in range(8)), "code": 0}}
        for i in range(TOOLS)
    ]
    return turn(1, session=SESSION, tools=tools)


@pytest.fixture
async def huge(tmp_path: Path, model_server: ScriptedModelServer) -> Any:
    client = await SidecarClient.start(tmp_path / "memory.db", env=model_env(model_server),
                                       args=["--block-turns", "1"])
    try:
        sealed = (await client.call("turn.capture", huge_turn(), timeout=300))["sealed_block_ids"]
        assert sealed == ["blk_1"]
        yield client
    finally:
        await client.close()


async def expand(client: SidecarClient, **arguments: Any) -> dict[str, Any]:
    return await client.tool(NS, SESSION, "memory_expand_block", {"id": "blk_1", "level": 5} | arguments)


def page_chars(messages: list[dict[str, Any]]) -> int:
    return sum(len(m.get("content", "")) + len(json.dumps(m.get("arguments"), ensure_ascii=False))
               + len(json.dumps(m.get("result"), ensure_ascii=False)) for m in messages)


async def test_level_5_of_a_block_with_2000_tool_calls_is_read_page_by_page(huge: SidecarClient) -> None:
    total = TOOLS + 2  # the user message, every tool call, the assistant reply
    seen: list[str] = []
    pages = 0
    offset: int | None = 0
    while offset is not None:
        result = await expand(huge, offset=offset)
        page = result["page"]
        assert page["offset"] == offset and page["total"] == total
        assert 1 <= page["count"] == len(result["messages"]) <= L5_PAGE_MESSAGES
        # A page is bounded in size too, not only in messages (the JSON spelling differs slightly from storage).
        assert page_chars(result["messages"]) <= L5_PAGE_CHARS * 1.1
        assert page["more"] is (page["next_offset"] is not None)
        # The view is this page's transcript: its first and last tool calls, with a turn header.
        assert result["view"].startswith("[turn 1 · ")
        for msg in (result["messages"][0], result["messages"][-1]):
            if msg["role"] == "tool":
                assert msg["arguments"]["command"] in result["view"].replace("&amp;", "&")
        assert result["level"] == 5 and result["view_tokens"] > 0
        seen += [m["id"] for m in result["messages"]]
        offset = page["next_offset"]
        pages += 1
    assert len(seen) == len(set(seen)) == total
    assert pages > total // L5_PAGE_MESSAGES
    # The pages together are the block, in order: the same messages as one read of the source.
    roles = [m["role"] for m in (await expand(huge, offset=0, limit=1))["messages"]]
    assert roles == ["user"]
    last = await expand(huge, offset=total - 1)
    assert [m["role"] for m in last["messages"]] == ["assistant"] and last["page"]["more"] is False
    assert last["page"]["next_offset"] is None


async def test_a_ping_is_answered_while_a_huge_expansion_renders(huge: SidecarClient) -> None:
    expansion = await huge.request("tools.call", {"namespace": NS, "session": SESSION, "name": "memory_expand_block",
                                                  "arguments": {"id": "blk_1", "level": 5,
                                                                "limit": L5_PAGE_MAX_MESSAGES}})
    ping = await huge.request("system.ping")
    ping_reply, expansion_reply = await ping, await expansion
    assert ping_reply["result"]["pong"] is True and "result" in expansion_reply
    lines = [json.loads(line).get("id") for line in huge.raw_lines]
    assert lines.index(ping_reply["id"]) < lines.index(expansion_reply["id"])


BAD_PAGES = [
    ({"offset": 5000}, "offset 5000 is past the end of blk_1, which has 2002 messages"),
    ({"offset": 1, "level": 3}, "offset pages level 5"),
    ({"limit": 0}, "limit"),
    ({"limit": L5_PAGE_MAX_MESSAGES + 1}, "limit"),
    ({"offset": -1}, "offset"),
]


async def test_bad_pages_are_one_clear_error(huge: SidecarClient) -> None:
    for arguments, words in BAD_PAGES:
        with pytest.raises(RpcFailure) as failure:
            await expand(huge, **arguments)
        assert failure.value.code == -32602 and words in failure.value.message, (arguments, failure.value)


async def test_a_small_block_is_one_page_with_its_stored_token_count(sidecar: SidecarClient) -> None:
    await sidecar.call("turn.capture", turn(1, tools=[{"name": "bash", "arguments": {"command": "ls"},
                                                       "result": "a\nb\n"}]))
    listing = None
    for i in range(2, 7):
        listing = await sidecar.call("turn.capture", turn(i))
    assert listing is not None and listing["sealed_block_ids"] == ["blk_1"]
    result = await sidecar.tool("proj", "s1", "memory_expand_block", {"id": "blk_1", "level": 5})
    assert result["page"] == {"offset": 0, "count": 13, "total": 13, "next_offset": None, "more": False}
    assert result["view_tokens"] == result["tokens"]["L5"]


async def test_activation_uses_the_first_4000_characters_of_a_200000_character_query(
    sidecar: SidecarClient,
) -> None:
    for i in range(1, 4):
        await sidecar.call("turn.capture", turn(i, session="s0"))
    await sidecar.call("turn.capture", turn(4, session="s1"))
    query = " ".join(f"topic{i % 50} word{i}" for i in range(20_000))[:200_000]

    async def render(q: str) -> str:
        return (await sidecar.call("activation.render", {"namespace": "proj", "session": "s1", "query": q}))["text"]

    # What is rendered depends on the first 4,000 characters only: the rest is never tokenised or searched.
    assert await render(query) == await render(query[:4_000])
    assert await render(query[:4_000] + " unrelated" * 10_000) == await render(query[:4_000])
