"""The scripted model server reports prompt size and prefix-cache hits like DeepSeek's API (and OpenAI's field)."""

from __future__ import annotations

import json
import urllib.request
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from stratagate.tokens import count_tokens
from support.model_server import (
    ScriptedModelServer,
    common_prefix,
    conversation_key,
    serialize_prompt,
    text,
    tool_call,
)

TOOLS = [{"type": "function", "function": {"name": "bash", "parameters": {"type": "object"}}}]


def _post(server: ScriptedModelServer, body: dict[str, Any]) -> list[dict[str, Any]]:
    """POST one chat request; return the decoded stream chunks (or the one JSON body)."""
    req = urllib.request.Request(
        server.base_url + "/chat/completions",
        data=json.dumps(body).encode(),
        headers={"Content-Type": "application/json"},
        method="POST",
    )
    with urllib.request.urlopen(req, timeout=10) as resp:
        raw = resp.read().decode()
    if not body.get("stream"):
        return [json.loads(raw)]
    lines = [ln.removeprefix("data: ") for ln in raw.splitlines() if ln.startswith("data: ")]
    return [json.loads(ln) for ln in lines if ln != "[DONE]"]


def _usage(chunks: list[dict[str, Any]]) -> dict[str, Any]:
    usages = [c["usage"] for c in chunks if c.get("usage")]
    assert len(usages) == 1, chunks
    return usages[0]


def _body(messages: list[dict[str, Any]], *, stream: bool = True) -> dict[str, Any]:
    return {"model": "scripted-model", "stream": stream, "tools": TOOLS, "messages": messages}


SYSTEM = {"role": "system", "content": "You are an AI agent powered by DeepSeek Harness."}
USER = {"role": "user", "content": "Please list the files."}


def test_growing_conversation_hits_its_previous_prompt() -> None:
    with ScriptedModelServer() as server:
        server.push(tool_call("bash", {"command": "ls"}), text("done"))
        first = _body([SYSTEM, USER])
        u1 = _usage(_post(server, first))
        second = _body(
            [
                SYSTEM,
                USER,
                {"role": "assistant", "content": None, "tool_calls": [{"id": "c1", "type": "function"}]},
                {"role": "tool", "tool_call_id": "c1", "content": "a.txt\nb.txt\n" * 50},
            ]
        )
        u2 = _usage(_post(server, second))

    assert u1["prompt_tokens"] == count_tokens(serialize_prompt(first))
    assert u1["prompt_cache_hit_tokens"] == 0 and u1["prompt_cache_miss_tokens"] == u1["prompt_tokens"]
    assert u2["prompt_tokens"] == count_tokens(serialize_prompt(second))
    # The whole first prompt is a prefix of the second (give or take the token that merges across the join).
    assert u1["prompt_tokens"] - 2 <= u2["prompt_cache_hit_tokens"] <= u1["prompt_tokens"]
    assert u2["prompt_cache_hit_tokens"] + u2["prompt_cache_miss_tokens"] == u2["prompt_tokens"]
    assert u2["prompt_tokens_details"] == {"cached_tokens": u2["prompt_cache_hit_tokens"]}
    assert u2["total_tokens"] == u2["prompt_tokens"] + u2["completion_tokens"]
    assert [u.prompt_tokens for u in server.usages] == [u1["prompt_tokens"], u2["prompt_tokens"]]


def test_other_conversations_neither_hit_nor_disturb_the_session() -> None:
    """A title request or a plugin's summary call has its own system prompt: its own cache line."""
    with ScriptedModelServer() as server:
        server.push(text("a"), text("b"), text("c"))
        step = _body([SYSTEM, USER])
        _post(server, step)
        title = {"model": "m", "stream": True, "messages": [{"role": "system", "content": "Write a title."}, USER]}
        ut = _usage(_post(server, title))
        step2 = _body([SYSTEM, USER, {"role": "assistant", "content": "ok"}, {"role": "user", "content": "more"}])
        u2 = _usage(_post(server, step2))

    assert ut["prompt_cache_hit_tokens"] == 0
    assert u2["prompt_cache_hit_tokens"] >= count_tokens(serialize_prompt(step)) - 2
    assert conversation_key(step) == conversation_key(step2) != conversation_key(title)


def test_a_replaced_history_region_misses_from_the_change_on() -> None:
    big = "line of a long tool output\n" * 200
    history = [SYSTEM, USER, {"role": "assistant", "content": "calling"}, {"role": "tool", "content": big}]
    with ScriptedModelServer() as server:
        server.push(text("a"), text("b"))
        _post(server, _body([*history, {"role": "user", "content": "next"}]))
        folded = [SYSTEM, USER, {"role": "user", "content": "[stratagate:card id=c1] bash ls"}]
        u = _usage(_post(server, _body([*folded, {"role": "user", "content": "next"}], stream=False)))

    unchanged = count_tokens(serialize_prompt({"tools": TOOLS, "messages": [SYSTEM, USER]}))
    # The hit ends inside the first changed message (its leading {"content": " still matches).
    assert unchanged <= u["prompt_cache_hit_tokens"] <= unchanged + 8
    assert u["prompt_tokens"] < count_tokens(serialize_prompt(_body(history)))


@given(st.lists(st.integers(0, 5), max_size=40), st.lists(st.integers(0, 5), max_size=40))
def test_common_prefix_is_the_longest_equal_prefix(a: list[int], b: list[int]) -> None:
    n = 0
    while n < min(len(a), len(b)) and a[n] == b[n]:
        n += 1
    assert common_prefix(a, b) == n
