"""Short-term decay by ready-block distance, and expansion that re-anchors it."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from conftest import model_env, turn
from stratagate.blocks.decay import display_level
from support.model_server import ScriptedModelServer
from support.sidecar import SidecarClient

# The published schedule from an L5 anchor with λ = 0.30.
SCHEDULE = {0: 5, 1: 5, 2: 4, 3: 3, 4: 3, 5: 2, 6: 2, 7: 1, 8: 1, 9: 0, 10: 0, 11: 0, 50: 0}


@pytest.mark.parametrize(("age", "level"), sorted(SCHEDULE.items()))
def test_schedule_from_l5(age: int, level: int):
    assert display_level(5, age, 0.30, ready=True) == level


@given(st.integers(0, 5), st.integers(0, 200), st.floats(0.01, 3))
def test_levels_only_go_down_with_age_and_never_below_zero(anchor: int, age: int, lam: float):
    now, later = display_level(anchor, age, lam, True), display_level(anchor, age + 1, lam, True)
    assert 0 <= later <= now <= anchor


def test_pending_blocks_do_not_decay():
    assert display_level(5, 40, 0.30, ready=False) == 5


async def ready_blocks(client: SidecarClient, n: int, start: int = 1) -> None:
    for i in range(start, start + n):
        await client.call("turn.capture", turn(i))
    for i in range(start, start + n):
        await client.wait_notification(
            "jobs.changed", lambda p, s=i: p["subject"] == f"blk_{s}" and p["status"] == "done"
        )


async def test_levels_follow_ready_block_distance_and_expand_reanchors(tmp_path: Path,
                                                                       model_server: ScriptedModelServer):
    client = await SidecarClient.start(tmp_path / "m.db", env=model_env(model_server), args=["--block-turns", "1"])
    try:
        await ready_blocks(client, 12)
        listing = await client.tool("proj", "s1", "memory_get_blocks")
        levels = [b["level"] for b in listing["blocks"]]
        assert levels == [SCHEDULE[11 - k] for k in range(12)]
        oldest = listing["blocks"][0]
        assert oldest["level"] == 0 and oldest["view"].startswith("Turns 1–1\nTags:")

        one_up = await client.tool("proj", "s1", "memory_expand_block", {"id": oldest["id"], "level": "next"})
        assert one_up["level"] == 1 and one_up["reanchored"] is True
        full = await client.tool("proj", "s1", "memory_expand_block", {"id": oldest["id"], "level": 5})
        assert full["level"] == 5 and "User message number 1 about topic1." in full["view"]

        listing = await client.tool("proj", "s1", "memory_get_blocks")
        assert listing["blocks"][0]["level"] == 5 and listing["blocks"][0]["age"] == 0
        # Decay resumes from the new anchor: two more ready blocks → L4.
        await ready_blocks(client, 2, start=13)
        listing = await client.tool("proj", "s1", "memory_get_blocks")
        assert listing["blocks"][0]["level"] == 4

        # Reading a shorter view never collapses a block.
        short = await client.tool("proj", "s1", "memory_expand_block", {"id": listing["blocks"][0]["id"], "level": 0})
        assert short["level"] == 0 and short["reanchored"] is False
        listing = await client.tool("proj", "s1", "memory_get_blocks")
        assert listing["blocks"][0]["level"] == 4
    finally:
        await client.close()


async def test_other_sessions_blocks_are_readable_but_not_reanchored(tmp_path: Path,
                                                                    model_server: ScriptedModelServer):
    client = await SidecarClient.start(tmp_path / "m.db", env=model_env(model_server), args=["--block-turns", "1"])
    try:
        await ready_blocks(client, 3)
        res = await client.tool("proj", "other-session", "memory_expand_block", {"id": "blk_1", "level": 5})
        assert res["reanchored"] is False and res["session"] == "s1"
        listing = await client.tool("proj", "s1", "memory_get_blocks")
        assert listing["blocks"][0]["level"] == SCHEDULE[2]
    finally:
        await client.close()


async def test_pending_block_asked_for_model_levels_shows_l3_with_a_note(tmp_path: Path):
    # The host's model never answers: the block stays pending (a failed answer would give it fallback views).
    never = asyncio.Event()

    async def host(method: str, params: dict) -> dict:
        await never.wait()
        return {}

    client = await SidecarClient.start(tmp_path / "m.db", args=["--block-turns", "1"], host_handler=host)
    try:
        (block_id,) = (await client.call("turn.capture", turn(1)))["sealed_block_ids"]
        res = await client.tool("proj", "s1", "memory_expand_block", {"id": block_id, "level": "L1"})
        assert res["level"] == 3 and "pending" in res["note"]
        assert res["available_levels"] == [3, 4, 5]
    finally:
        await client.close()
