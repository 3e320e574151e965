"""The issue 12 scenario end to end over JSON-RPC with no model route (STRATAGATE_MODEL_ROUTE=none): a real
sidecar, a real SQLite file, no model server. npm → pnpm → "finish the prototype next week", in English and in
Chinese: blocks become ready by rule, the rule events are admitted (the pnpm change supersedes the npm event),
recall shows the labelled superseded/current pair, the plan keeps its planned window, and the graph's project has
pnpm as its package manager."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import AsyncIterator
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from conftest import model_env, summary_arguments, turn
from support.model_server import ScriptedModelServer, auto_tool_call, http_error, tool_call
from support.sidecar import SidecarClient

EN = "project:shop:0123456789abcdef"
ZH = "project:商店:fedcba9876543210"


@pytest.fixture
async def client(tmp_path: Path) -> AsyncIterator[SidecarClient]:
    c = await SidecarClient.start(
        # The dense channel is not part of the scenario (its embedding job would only slow the settling down).
        tmp_path / "memory.db", env={"STRATAGATE_MODEL_ROUTE": "none", "STRATAGATE_DENSE": "off"},
        args=["--block-turns", "1"],
    )
    yield c
    await c.close()


async def settled(c: SidecarClient, failed: bool = False) -> None:
    await c.settled(failed=failed)


async def converse(c: SidecarClient, ns: str, pairs: list[tuple[str, str]], failed: bool = False) -> None:
    """One turn (= one block) at a time, each block's jobs finished before the next turn: a later block's related
    events are then the earlier blocks' (as in a conversation with a human pace), whatever the job order."""
    for i, (user, assistant) in enumerate(pairs, 1):
        await c.call("turn.capture", turn(i, namespace=ns, user=user, assistant=assistant))
        await settled(c, failed)


async def events(c: SidecarClient, ns: str) -> dict[str, dict[str, Any]]:
    """Every event of the namespace, expanded, by its first quote."""
    hits = (await c.tool(ns, "s1", "memory_search_events", {"include_inactive": True, "limit": 20}))["hits"]
    out = {}
    for hit in hits:
        full = await c.tool(ns, "s1", "memory_expand_event", {"id": hit["id"]})
        out[full["quotes"][0]] = full
    return out


def next_iso_week(mentioned_at: str) -> tuple[datetime, datetime]:
    said = datetime.fromisoformat(mentioned_at)
    monday = (said - timedelta(days=said.weekday())).replace(hour=0, minute=0, second=0, microsecond=0)
    return monday + timedelta(days=7), monday + timedelta(days=14)


async def check_scenario(
    c: SidecarClient, db: Path, ns: str, old: str, new: str, plan: str, query: str, mode: str = "none"
) -> None:
    blocks = (await c.tool(ns, "s1", "memory_get_blocks", {}))["blocks"]
    assert len(blocks) == 3 and all(b["status"] == "ready" for b in blocks)

    found = await events(c, ns)
    npm, pnpm, prototype = found[old], found[new], found[plan]
    assert (npm["status"], npm["successor_id"]) == ("superseded", pnpm["id"])
    assert (pnpm["status"], pnpm["type"]) == ("active", "change")
    assert [(x["object"], x.get("slot")) for x in pnpm["claims"]] == [("pnpm", "package manager")]
    # Provenance: the quote is the user's sentence exactly as written, cited from its message.
    assert pnpm["quotes"] == [new] and pnpm["origin"] == "extraction"
    window = prototype["temporal"]
    assert (prototype["type"], window["status"]) == ("plan", "planned")
    stored = (datetime.fromisoformat(window["happened_start"]), datetime.fromisoformat(window["happened_end"]))
    assert stored == next_iso_week(window["mentioned_at"])
    assert window["original"] and window["original"] in plan

    # Recall: the current event names what it replaced; the old one is never shown as current.
    out = await c.call("activation.render", {"namespace": ns, "session": "s2", "query": query})
    heading = next(line for line in out["text"].splitlines() if line.startswith(f"[{pnpm['id']} "))
    assert f"current · replaces {npm['id']} · \"{npm['title']}\"" in heading
    assert not any(line.startswith(f"[{npm['id']} ") for line in out["text"].splitlines())
    assert out["longterm_tokens"] <= 900
    plan_out = await c.call("activation.render", {"namespace": ns, "session": "s2", "query": plan})
    plan_heading = next(line for line in plan_out["text"].splitlines() if line.startswith(f"[{prototype['id']} "))
    assert f"planned {window['happened_start'][:10]}–{window['happened_end'][:10]}" in plan_heading

    # The graph: the project's package manager is pnpm now; npm's fact is history.
    hits = (await c.tool(ns, "s1", "memory_search_graph", {"query": "pnpm"}))["hits"]
    pnpm_node = next(h for h in hits if h["name"] == "pnpm")
    assert pnpm_node["category"] == "package manager"
    assert any(f["statement"].endswith("uses pnpm") and f["status"] == "active" for f in pnpm_node["current_state"])
    npm_hits = (await c.tool(ns, "s1", "memory_search_graph", {"query": "npm"}))["hits"]
    npm_node = next(h for h in npm_hits if h["name"] == "npm")
    assert not any(f["statement"].endswith("uses npm") for f in npm_node["current_state"])

    # Every block and event is marked as written by rule: in zero-model mode, or as the fallback of a failed model.
    info = await c.call("system.info")
    assert info["model_mode"] == mode
    routes, marks = rule_marks(db)
    if mode == "none":
        assert routes == {("rules:events", "rules")} and marks == {("extractive", "rules")}
    else:
        assert routes == {("rules:events", "fallback")} and marks == {("fallback", "fallback")}


def rule_marks(db: Path) -> tuple[set[tuple[str, str]], set[tuple[str | None, str | None]]]:
    """(route, source) of every block.events_extracted audit row, and (summary_source, events_source) of every
    block, read from the database file itself (read-only)."""
    conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    try:
        reports = [json.loads(r[0]) for r in conn.execute(
            "SELECT after FROM audit_log WHERE action = 'block.events_extracted'")]
        blocks = set(conn.execute("SELECT summary_source, events_source FROM blocks"))
    finally:
        conn.close()
    return {(r["route"], r["source"]) for r in reports}, blocks


async def test_english_npm_then_pnpm_then_a_plan(client: SidecarClient, tmp_path: Path):
    old, new, plan = "We use npm for this repo.", "Let's switch to pnpm.", "We need to finish the prototype next week."
    await converse(client, EN, [
        (old, "Noted: the repo uses npm."),
        (new, "Okay, I'll switch to pnpm and update the lockfile."),
        (plan, "Got it, the prototype is due next week."),
    ])
    query = "which package manager do we install with?"
    await check_scenario(client, tmp_path / "memory.db", EN, old, new, plan, query)
    # A question that names only the old value is answered by what replaced it (never by the old one as current).
    found = await events(client, EN)
    npm, pnpm = found[old], found[new]
    out = await client.call("activation.render", {"namespace": EN, "session": "s2", "query": "Do we still use npm?"})
    lines = out["text"].splitlines()
    heading = next(line for line in lines if line.startswith(f"[{pnpm['id']} "))
    assert f"current · replaces {npm['id']}" in heading
    assert not any(line.startswith(f"[{npm['id']} ") for line in lines)


async def test_chinese_npm_then_pnpm_then_a_plan(client: SidecarClient, tmp_path: Path):
    old, new, plan = "我们用 npm。", "改用 pnpm。", "下周完成原型。"
    await converse(client, ZH, [
        (old, "好的，记下了：项目使用 npm。"),
        (new, "好的，我会把包管理器换成 pnpm。"),
        (plan, "明白，原型下周完成。"),
    ])
    await check_scenario(client, tmp_path / "memory.db", ZH, old, new, plan, "用哪个包管理器 pnpm npm 安装依赖？")


class DownThenBack:
    """Every model request fails (HTTP 500) while ``down``; then summaries are answered and extraction finds
    nothing new (the fallback's rule events stay)."""

    def __init__(self) -> None:
        self.down = True
        self.summary = auto_tool_call(summary_arguments)

    def __call__(self, body: dict[str, Any]) -> Any:
        if self.down:
            return http_error(500, "model is down")
        if body["tool_choice"]["function"]["name"] == "stratagate_extract_events":
            return tool_call("stratagate_extract_events", {"events": []})
        return self.summary(body)


async def test_a_failing_model_falls_back_to_the_rules_and_a_restart_upgrades(
    tmp_path: Path, model_server: ScriptedModelServer
):
    model = DownThenBack()
    model_server.default = model
    db = tmp_path / "memory.db"
    env = model_env(model_server, STRATAGATE_JOB_MAX_ATTEMPTS="1")
    old, new, plan = "We use npm for this repo.", "Let's switch to pnpm.", "We need to finish the prototype next week."
    c = await SidecarClient.start(db, env=env, args=["--block-turns", "1"])
    try:
        await converse(c, EN, [(old, "Noted."), (new, "Okay."), (plan, "Got it.")], failed=True)
        await check_scenario(c, db, EN, old, new, plan, "which package manager do we install with?", mode="auto")
        before = await events(c, EN)
    finally:
        await c.close()

    model.down = False  # the next start re-queues the failed jobs of fallback blocks: the upgrade
    c = await SidecarClient.start(db, env=env, args=["--block-turns", "1"])
    try:
        await settled(c)
        after = await events(c, EN)
        assert {q: (e["id"], e["status"]) for q, e in after.items()} == {
            q: (e["id"], e["status"]) for q, e in before.items()
        }
    finally:
        await c.close()
    routes, marks = rule_marks(db)
    assert marks == {("model", "model")}
    assert ("rules:events", "fallback") in routes and any(source == "model" for _, source in routes)


async def test_a_change_within_one_block_supersedes_the_event_before_it(tmp_path: Path):
    """npm and pnpm in the same block: the pnpm draft is admitted after the npm one, naming the event it became."""
    c = await SidecarClient.start(
        tmp_path / "memory.db", env={"STRATAGATE_MODEL_ROUTE": "none", "STRATAGATE_DENSE": "off"},
        args=["--block-turns", "3"],
    )
    try:
        await converse(c, EN, [("We use npm.", "Ok."), ("Hmm, replace npm with pnpm.", "Ok."), ("Thanks!", "Sure.")])
        found = await events(c, EN)
        npm, pnpm = found["We use npm."], found["Hmm, replace npm with pnpm."]
        assert (npm["status"], npm["successor_id"], pnpm["status"]) == ("superseded", pnpm["id"], "active")
        assert npm["block_id"] == pnpm["block_id"] and len(found) == 2
    finally:
        await c.close()


async def test_turns_captured_at_once_still_supersede_in_block_order(client: SidecarClient, tmp_path: Path):
    """The same conversation captured without waiting between turns (an import of a session, a fast agent): the
    three blocks' jobs are all queued together, and a namespace's extraction runs in block order
    (jobs/pipeline.py EXTRACTION_ORDER), so the pnpm change still finds the npm event it replaces."""
    old, new, plan = "We use npm for this repo.", "Let's switch to pnpm.", "We need to finish the prototype next week."
    for i, (user, assistant) in enumerate([(old, "Noted."), (new, "Okay."), (plan, "Got it.")], 1):
        await client.call("turn.capture", turn(i, namespace=EN, user=user, assistant=assistant))
    await settled(client)
    query = "which package manager do we install with?"
    await check_scenario(client, tmp_path / "memory.db", EN, old, new, plan, query)
