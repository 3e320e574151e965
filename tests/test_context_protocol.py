"""context.plan / context.landed / context.settings.* through a real sidecar process (real SQLite file)."""

from __future__ import annotations

import itertools
import json
import sqlite3
import sys
from pathlib import Path

import pytest

from conftest import model_env, turn
from support.sidecar import REPO, RpcFailure, SidecarClient
from support.surfaces import apply_ops, build_surface, plan_params


@pytest.fixture
async def client(tmp_path: Path):
    c = await SidecarClient.start(tmp_path / "memory.db")
    yield c
    await c.close()


async def test_plan_landed_round_trip(client: SidecarClient, tmp_path: Path):
    secret = "sk-proj-Abc123Def456Ghi789Jkl012Mno345"
    built = build_surface(turns=4, rounds_per_turn=4, output_tokens=1500, secret=secret)
    # Above the force line: the batch lands regardless of the cost rule.
    result = await client.call("context.plan", plan_params(built, window=24_000))
    assert result["archived_through"] == built.last_seq
    assert result["ops"], result["decision"]
    kinds = {op["kind"] for op in result["ops"]}
    assert "card" in kinds
    card = next(op for op in result["ops"] if op["kind"] == "card")
    assert card["ref"].startswith("c") and card["start"] == card["end"]
    assert card["text"].startswith(f"[stratagate:card id={card['ref']} · older context, not an instruction")
    assert card["tokens"] < card["shadowed_tokens"]

    surface, landed_ops = apply_ops(built.events, result["ops"], built.last_seq)
    done = await client.call("context.landed", {"namespace": "proj", "session": "s1", "ops": landed_ops})
    assert done == {"landed": len(landed_ops), "failed": 0}

    # The next plan: the shim omits data up to archived_through; the replacements map back to their layers.
    through = result["archived_through"]
    sent = [e if e["seq"] > through else {k: v for k, v in e.items() if k != "data"} for e in surface]
    again = await client.call("context.plan", plan_params(sent, window=24_000, turn=4))
    assert again["used_tokens"] < result["used_tokens"]
    refs = {op["ref"] for op in again["ops"]}
    assert not refs & {op["ref"] for op in result["ops"]}, "a landed layer is never planned again"

    db = sqlite3.connect(tmp_path / "memory.db")
    texts = [r[0] for r in db.execute("SELECT text FROM context_nodes")]
    assert not any("SECRET_PROMPT_TEXT" in t for t in texts), "runtime context is never archived"
    assert "[runtime context omitted]" in texts
    assert not any("sk-proj-Abc123" in t for t in texts), "secrets are redacted before storing"
    states = dict(db.execute("SELECT ref, state FROM context_layers"))
    assert all(states[op["ref"]] in ("landed", "superseded") for op in result["ops"])
    db.close()


async def test_bad_input_is_one_json_rpc_error(client: SidecarClient):
    built = build_surface(turns=1, rounds_per_turn=1)
    no_data = [{k: v for k, v in e.items() if k != "data"} for e in built.events]
    with pytest.raises(RpcFailure) as exc:
        await client.call("context.plan", plan_params(no_data, window=10_000))
    assert exc.value.code == -32602 and "never archived" in exc.value.message
    with pytest.raises(RpcFailure) as exc:
        await client.call("context.plan", {**plan_params(built, window=10_000), "window": 0})
    assert exc.value.code == -32602 and "window" in exc.value.message
    await client.call("context.plan", plan_params(built, window=100_000))
    with pytest.raises(RpcFailure) as exc:
        await client.call("context.landed", {"namespace": "proj", "session": "s1",
                                             "ops": [{"ref": "c999", "replacement_seq": 5}]})
    assert exc.value.code == -32602 and "c999" in exc.value.message
    with pytest.raises(RpcFailure) as exc:
        await client.call("context.landed", {"namespace": "proj", "session": "nobody", "ops": []})
    assert exc.value.code == -32602 and "context.plan was never called" in exc.value.message
    with pytest.raises(RpcFailure) as exc:
        await client.call("context.plan", {**plan_params(built, window=10_000), "surface": built.events * 2})
    assert exc.value.code == -32602 and "appears twice" in exc.value.message
    with pytest.raises(RpcFailure) as exc:
        await client.call("context.plan", {**plan_params(built, window=10_000), "phase": "later"})
    assert exc.value.code == -32602 and "phase" in exc.value.message
    assert (await client.call("system.ping")) is not None


async def test_settings_get_set_apply_without_restart(client: SidecarClient):
    first = await client.call("context.settings.get", {})
    assert first["mode"] == "cost" and first["auto_fold"] is True and first["force_line"] == 0.75
    quality = await client.call("context.settings.set", {"settings": {"mode": "quality"}})
    assert quality["mode"] == "quality" and quality["mid_turn_cards"] is True and quality["digest_line"] == 0.25
    custom = await client.call("context.settings.set", {"settings": {"cardMinTokens": 500}})
    assert custom["mode"] == "custom" and custom["card_min_tokens"] == 500
    reset = await client.call("context.settings.set", {"settings": {"card_min_tokens": None, "mode": None}})
    assert reset["mode"] == "cost" and reset["card_min_tokens"] == 200
    await client.call("context.settings.set", {"settings": {"digest_line": 0.4, "reminders": False}})
    preset = await client.call("context.settings.set", {"settings": {"mode": "quality"}})
    assert preset["mode"] == "quality" and preset["digest_line"] == 0.25, "a preset resets the thresholds"
    assert preset["reminders"] is False, "but keeps the switches"
    with pytest.raises(RpcFailure) as exc:
        await client.call("context.settings.set", {"settings": {"force_line": 7}})
    assert exc.value.code == -32602 and "force_line" in exc.value.message
    with pytest.raises(RpcFailure) as exc:
        await client.call("context.settings.set", {"settings": {"no_such_knob": 1}})
    assert exc.value.code == -32602 and "no_such_knob" in exc.value.message


async def test_plugin_config_is_the_default_under_stored_settings(tmp_path: Path):
    env = {"STRATAGATE_CONTEXT_CONFIG": json.dumps({"mode": "quality", "autoFold": False})}
    c = await SidecarClient.start(tmp_path / "memory.db", env=env)
    try:
        got = await c.call("context.settings.get", {})
        assert got["mode"] == "quality" and got["auto_fold"] is False
        got = await c.call("context.settings.set", {"settings": {"mode": "cost"}})
        assert got["mode"] == "cost" and got["auto_fold"] is False
    finally:
        await c.close()


def test_bad_plugin_config_is_a_start_up_error(tmp_path: Path):
    import os
    import subprocess

    env = {k: v for k, v in os.environ.items() if not k.startswith("STRATAGATE_")}
    env.update(PYTHONPATH=str(REPO / "sidecar"), STRATAGATE_CONTEXT_CONFIG="{not json",
               STRATAGATE_DB=str(tmp_path / "m.db"))
    proc = subprocess.run([sys.executable, "-m", "stratagate", "serve"], env=env, capture_output=True, text=True,
                          stdin=subprocess.DEVNULL, timeout=60)
    assert proc.returncode == 2
    assert "STRATAGATE_CONTEXT_CONFIG is not valid JSON" in proc.stderr


async def ready(client: SidecarClient, block_id: str) -> None:
    await client.wait_notification("jobs.changed", lambda p: p["subject"] == block_id and p["status"] == "done")


async def test_ready_blocks_replace_their_turns_and_recall_stops_repeating_them(tmp_path: Path, model_server):
    client = await SidecarClient.start(tmp_path / "m.db", env=model_env(model_server), args=["--block-turns", "1"])
    try:
        for i in range(1, 9):
            res = await client.call("turn.capture", turn(i, session="s1", receipt=f"dsh:s1:turn:{i}"))
            await ready(client, res["sealed_block_ids"][0])
        before = await client.call("activation.render", {"namespace": "proj", "session": "s1"})
        assert "Earlier blocks of this session" in before["text"]

        built = build_surface(turns=9, rounds_per_turn=2, output_tokens=900)
        result = await client.call("context.plan", plan_params(built, window=40_000))
        blocks = [op for op in result["ops"] if op["kind"] == "block"]
        assert blocks, result["decision"]
        first = blocks[0]
        assert first["ref"] == "blk_1"
        assert first["text"].startswith("[stratagate:block id=blk_1 level=L")
        assert "not an instruction" in first["text"].splitlines()[0]
        # The block covers its DSH turn exactly: turn 1's nodes, whole rounds.
        turn2 = next(i for i, e in enumerate(built.events) if "Turn 2:" in json.dumps(e["data"]))
        assert (first["start"], first["end"]) == (built.events[0]["seq"], built.events[turn2 - 1]["seq"])
        spans = sorted((op["start"], op["end"]) for op in result["ops"])
        assert all(a[1] < b[0] for a, b in itertools.pairwise(spans)), "ops never overlap"

        # Managed by the engine now: recall no longer repeats this session's blocks (each piece of history once).
        after = await client.call("activation.render", {"namespace": "proj", "session": "s1"})
        assert "Earlier blocks of this session" not in after["text"]
        step = await client.call("activation.render_step", {"namespace": "proj", "session": "s1"})
        assert "Earlier blocks of this session" not in step["text"]
    finally:
        await client.close()


async def test_reminder_rides_with_the_step_recall(client: SidecarClient):
    built = build_surface(turns=6, rounds_per_turn=5, output_tokens=2000)
    # A window large enough that nothing is forced, small enough that the foldable growth (> 50K) reminds.
    result = await client.call("context.plan", plan_params(built, window=1_000_000))
    assert result["reminder"] and result["reminder"].startswith("[stratagate:reminder")
    step = await client.call("activation.render_step", {"namespace": "proj", "session": "s1"})
    assert step["text"].endswith(result["reminder"])
    subagent = await client.call("activation.render_step", {"namespace": "proj", "session": "s1",
                                                            "origin": "subagent"})
    assert subagent["text"] == ""


async def test_a_landed_block_is_re_landed_shorter_when_it_decays(tmp_path: Path, model_server):
    client = await SidecarClient.start(tmp_path / "m.db", env=model_env(model_server), args=["--block-turns", "1"])
    try:
        await client.call("context.settings.set", {"settings": {"mode": "quality"}})  # no cost rule: land all
        for i in range(1, 4):
            res = await client.call("turn.capture", turn(i, session="s1", receipt=f"dsh:s1:turn:{i}"))
            await ready(client, res["sealed_block_ids"][0])
        built = build_surface(turns=12, rounds_per_turn=1, output_tokens=300)
        first = await client.call("context.plan", plan_params(built, window=1_000_000))
        blk1 = next(op for op in first["ops"] if op["ref"] == "blk_1")
        assert "level=L4" in blk1["text"].splitlines()[0]
        surface, landed_ops = apply_ops(built.events, first["ops"], built.last_seq)
        await client.call("context.landed", {"namespace": "proj", "session": "s1", "ops": landed_ops})

        for i in range(4, 10):  # six more ready blocks: blk_1 decays to L1
            res = await client.call("turn.capture", turn(i, session="s1", receipt=f"dsh:s1:turn:{i}"))
            await ready(client, res["sealed_block_ids"][0])
        second = await client.call("context.plan", plan_params(surface, window=1_000_000, turn=12))
        # Blocks that became ready since land too: an earlier block's checkpoint belongs to the turn it replaced.
        assert {"blk_4", "blk_5"} <= {op["ref"] for op in second["ops"]}
        again = next(op for op in second["ops"] if op["ref"] == "blk_1")
        replaced = next(o["replacement_seq"] for o in landed_ops if o["ref"] == "blk_1")
        assert again["start"] == again["end"] == replaced, "re-landed in place of its own replacement"
        assert "level=L1" in again["text"].splitlines()[0] and again["tokens"] < again["shadowed_tokens"]
        surface, landed_again = apply_ops(surface, second["ops"], built.last_seq + 100)
        done = await client.call("context.landed", {"namespace": "proj", "session": "s1", "ops": landed_again})
        assert done["failed"] == 0
        third = await client.call("context.plan", plan_params(surface, window=1_000_000, turn=12))
        assert "blk_1" not in {op["ref"] for op in third["ops"]}
    finally:
        await client.close()
