"""Zero-model block views (issue 12): blocks written by rule with no model route, the fallback while the model fails,
and the upgrade to the model's views when it answers again. Real sidecar processes, real SQLite files, the scripted
model server for the fallback."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from conftest import model_env, summary_arguments
from stratagate.app import App
from stratagate.blocks.extractive import extractive_summary
from stratagate.blocks.source import SourceMessage
from stratagate.blocks.summarize import requeue_fallbacks
from stratagate.config import Settings
from stratagate.jobs.runner import PermanentJobError
from stratagate.storage.db import Database
from stratagate.text.cues import language
from support.model_server import ScriptedModelServer, auto_tool_call, http_error, tool_call
from support.sidecar import SidecarClient

EN = [
    ("[e2e] We use npm for this repo right now.", "Noted: the repo uses npm."),
    ("Let's switch the package manager to pnpm.", "Okay, I'll switch to pnpm and update the lockfile."),
    ("ok", "Anything else?"),
    ("We need to finish the prototype next week.", "Got it, the prototype is due next week."),
    ("Also the CI on main is red, can you look at the failing test in api/user.test.ts?",
     "The failure comes from a missing env var."),
]
ZH = [
    ("我们现在用 npm 管理依赖。", "好的，记下了：项目使用 npm。"),
    ("包管理器改用 pnpm。", "好的，我会把包管理器换成 pnpm。"),
    ("下周完成原型。", "明白，原型下周完成。"),
    ("我喜欢用两个空格缩进。", "好的，以后用两个空格缩进。"),
]


def messages(pairs: list[tuple[str, str]]) -> list[SourceMessage]:
    out = []
    for turn_seq, (user, assistant) in enumerate(pairs, 1):
        for role, text in (("user", user), ("assistant", assistant)):
            out.append(SourceMessage(id=len(out) + 1, turn_seq=turn_seq, role=role, content=text,
                                     created_at="2026-05-01T10:00:00Z"))
    return out


def capture_params(i: int, user: str, assistant: str, session: str = "s1") -> dict[str, Any]:
    return {
        "namespace": "proj", "session": session, "receipt": f"dsh:{session}:turn:{i}", "user": user,
        "assistant": assistant, "started_at": f"2026-05-01T10:{i:02d}:00Z", "ended_at": f"2026-05-01T10:{i:02d}:30Z",
        "end_reason": "stop",
    }


# --- the rules, pure ------------------------------------------------------------------------------------------------


def test_english_block_views_cover_every_topic_in_order():
    s = extractive_summary(messages(EN))
    assert s.title == "We use npm for this repo right now; switch the package manager to pnpm"
    assert "e2e" not in s.title.lower() and "e2e" not in [t.lower() for t in s.tags]
    assert {"npm", "pnpm"} <= set(s.tags)
    # One clause per user request, in order; the acknowledgement is not a topic.
    parts = ["we use npm", "switch the package manager to pnpm", "finish the prototype next week", "CI on main"]
    positions = [s.summary.find(p) for p in parts]
    assert all(p >= 0 for p in positions) and positions == sorted(positions), s.summary
    assert s.summary.startswith("The user raised 4 topics")
    # Key facts are verbatim sentences: the decision, the change, the plan (and the request without a cue).
    for fact in ("We use npm for this repo right now.", "Let's switch the package manager to pnpm.",
                 "We need to finish the prototype next week."):
        assert fact in s.key_facts
    assert s.has_durable_facts


def test_chinese_block_gets_a_chinese_summary():
    s = extractive_summary(messages(ZH))
    assert language(s.summary) == "zh"
    assert s.summary.startswith("用户依次提出了 4 个话题：")
    for part in ("我们现在用 npm 管理依赖", "包管理器改用 pnpm", "下周完成原型", "我喜欢用两个空格缩进"):
        assert part in s.summary
    assert s.title.startswith("我们现在用 npm 管理依赖；")
    assert "包管理器改用 pnpm。" in s.key_facts and "下周完成原型。" in s.key_facts
    assert {"npm", "pnpm"} <= set(s.tags)


def test_single_topic_title_is_the_request_as_a_headline():
    s = extractive_summary(messages([("Please switch the package manager to pnpm; prototype next week", "Sure.")]))
    assert s.title == "Switch the package manager to pnpm; prototype next week"


NOTES = ("Tool calls:", "No text", "工具调用：", "本块没有文字")
_texts = st.one_of(
    st.text(max_size=300),
    st.text(alphabet=st.sampled_from(list("abc 下周改用。.!?\n[]`*-😀🎉")), max_size=300),
    st.sampled_from(["", " ", "\n\n", "ok", "好的", "?", "[e2e]", "```", "😀" * 50, "x" * 5000, "下" * 3000]),
)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.tuples(st.sampled_from(["user", "assistant", "tool"]), _texts), max_size=12))
def test_any_text_gives_a_valid_summary(items: list[tuple[str, str]]):
    msgs = [
        SourceMessage(id=i + 1, turn_seq=i // 2 + 1, role=role, content=text, created_at="2026-05-01T10:00:00Z",
                      **({"tool_name": "bash", "tool_result": json.dumps(text)} if role == "tool" else {}))
        for i, (role, text) in enumerate(items)
    ]
    s = extractive_summary(msgs)  # validated by the BlockSummary model itself: lengths, counts, non-empty
    assert s.title and s.summary and s.key_facts
    said = "\n".join(m.content for m in msgs)
    for fact in s.key_facts:  # verbatim up to whitespace, or a clipped verbatim sentence, or a rule-written note
        core = fact.removesuffix("…")
        assert " ".join(core.split()) in " ".join(said.split()) or fact.startswith(NOTES)


def test_huge_block_is_fast_and_bounded():
    big = [(f"Topic {i}: let's switch service{i} to pnpm. " + "log line " * 3000, "ok") for i in range(60)]
    s = extractive_summary(messages(big))
    assert len(s.summary) <= 2000 and len(s.key_facts) <= 20 and len(s.title) <= 120
    assert "and 20 more" in s.summary  # 40 topics shown, the rest counted


# --- zero-model mode over JSON-RPC ------------------------------------------------------------------------------------


def test_zero_model_app_never_builds_a_model_gateway(tmp_path: Path):
    app = App(Settings(db=tmp_path / "m.db", model_route="none", dense=False))
    with pytest.raises(PermanentJobError, match="zero-model mode"):
        app.gateway()  # a stage that still asks for the model fails at once instead of calling it
    assert app._gateway is None and app.model_route() == "none:rules"


class NoModelHost:
    """The fake DSH host: any host.llm.complete fails the test."""

    def __init__(self) -> None:
        self.calls: list[str] = []

    async def __call__(self, method: str, params: dict[str, Any]) -> Any:
        self.calls.append(method)
        raise AssertionError(f"zero-model mode sent {method}")


async def _views(client: SidecarClient, block: str) -> dict[int, Any]:
    return {lv: await client.tool("proj", "s1", "memory_expand_block", {"id": block, "level": lv}) for lv in range(6)}


async def _ready(client: SidecarClient, block: str) -> None:
    await client.wait_notification("jobs.changed", lambda p: p["kind"] == "block_summary" and p["subject"] == block
                                   and p["status"] == "done")


@pytest.mark.parametrize(("pairs", "topics"), [
    (EN, ["we use npm", "switch the package manager to pnpm", "finish the prototype next week", "CI on main"]),
    (ZH, ["我们现在用 npm 管理依赖", "包管理器改用 pnpm", "下周完成原型", "我喜欢用两个空格缩进"]),
])
async def test_mode_none_blocks_become_ready_by_rule_without_any_model_call(tmp_path: Path, pairs, topics):
    host = NoModelHost()
    env = {"STRATAGATE_MODEL_ROUTE": "none", "STRATAGATE_DENSE": "off"}
    client = await SidecarClient.start(tmp_path / "m.db", env=env, args=["--block-turns", str(len(pairs))],
                                       host_handler=host)
    try:
        sealed = []
        for i, (user, assistant) in enumerate(pairs, 1):
            sealed += (await client.call("turn.capture", capture_params(i, user, assistant)))["sealed_block_ids"]
        (block,) = sealed
        before = {lv: (await client.tool("proj", "s1", "memory_expand_block", {"id": block, "level": lv}))["view"]
                  for lv in (3, 4, 5)}
        await _ready(client, block)
        views = await _views(client, block)
        assert views[1]["status"] == "ready"
        summary = views[1]["view"]
        positions = [summary.find(t) for t in topics]
        assert all(p >= 0 for p in positions) and positions == sorted(positions), summary
        assert "pnpm" in views[0]["view"] and "e2e" not in views[0]["view"]
        change = "Let's switch the package manager to pnpm." if pairs is EN else "包管理器改用 pnpm。"
        assert change in views[2]["view"]
        assert {lv: views[lv]["view"] for lv in (3, 4, 5)} == before  # nothing lost: L3–L5 as sealed
        info = await client.call("system.info")
        assert info["model_mode"] == "none" and info["model_route"] == "none:rules"
        assert info["counts"]["block_views"] == {"model": 0, "extractive": 1, "fallback": 0}
        # The events half follows up for every rule-written block.
        jobs = (await client.call("jobs.list", {"namespace": "proj"}))["jobs"]
        assert any(j["kind"] == "event_extraction" and j["subject"] == block for j in jobs)
        await client.wait_for(lambda: any(
            n["method"] == "jobs.changed" and n["params"]["kind"] == "event_extraction"
            and n["params"]["status"] in ("done", "failed") for n in client.notifications))
    finally:
        await client.close()
    assert host.calls == [] and not any(r["method"] == "host.llm.complete" for r in client.host_requests)
    with sqlite3.connect(tmp_path / "m.db") as conn:
        row = conn.execute("SELECT summary_source, summary_model FROM blocks").fetchone()
        assert row == ("extractive", "rules:extractive")
        audit = conn.execute("SELECT actor, after FROM audit_log WHERE action = 'block.summarized'").fetchone()
        assert audit[0] == "system" and json.loads(audit[1])["route"] == "rules:extractive"


# --- the fallback and the upgrade -------------------------------------------------------------------------------------


class FlakyModel:
    """Summary requests fail while ``down`` (HTTP 500), else answer from the transcript; extraction finds nothing."""

    def __init__(self) -> None:
        self.down = True
        self.good = auto_tool_call(summary_arguments)

    def __call__(self, body: dict[str, Any]) -> Any:
        if body["tool_choice"]["function"]["name"] == "stratagate_extract_events":
            return tool_call("stratagate_extract_events", {"events": []})
        return http_error(500, "model is down") if self.down else self.good(body)


@pytest.fixture
def flaky(model_server: ScriptedModelServer) -> FlakyModel:
    model = FlakyModel()
    model_server.default = model
    return model


def _job_notes(client: SidecarClient, kind: str, block: str, status: str) -> Callable[[], list[dict[str, Any]]]:
    """The jobs.changed notes of one job in one status."""
    return lambda: [n["params"] for n in client.notifications if n["method"] == "jobs.changed"
                    and n["params"]["kind"] == kind and n["params"]["subject"] == block
                    and n["params"]["status"] == status]


async def test_failed_model_gives_fallback_views_then_a_restart_upgrades_them(
    tmp_path: Path, model_server: ScriptedModelServer, flaky: FlakyModel
):
    db = tmp_path / "m.db"
    env = model_env(model_server, STRATAGATE_JOB_MAX_ATTEMPTS="2")
    client = await SidecarClient.start(db, env=env, args=["--block-turns", "2"])
    try:
        await client.call("turn.capture", capture_params(1, EN[1][0], EN[1][1]))
        (block,) = (await client.call("turn.capture", capture_params(2, EN[3][0], EN[3][1])))["sealed_block_ids"]
        await client.wait_for(_job_notes(client, "block_summary", block, "failed"))
        fallback = await _views(client, block)
        assert fallback[0]["view"].startswith("Switch the package manager to pnpm; finish the prototype next week")
        assert "finish the prototype next week" in fallback[1]["view"]
        info = await client.call("system.info")
        assert info["counts"]["block_views"]["fallback"] == 1 and info["model_mode"] == "auto"
        # The events half runs on the fallback views too.
        await client.wait_for(_job_notes(client, "event_extraction", block, "done"))
    finally:
        await client.close()
    with sqlite3.connect(db) as conn:
        (after,) = conn.execute("SELECT after FROM audit_log WHERE action = 'block.summary_fallback'").fetchone()
        assert "model is down" in json.loads(after)["error"]
        assert conn.execute("SELECT summary_source, summary_model FROM blocks").fetchone() == (
            "fallback", "rules:extractive")

    flaky.down = False  # the model is back: the next start re-queues the block's failed job
    client = await SidecarClient.start(db, env=env, args=["--block-turns", "2"])
    try:
        await _ready(client, block)
        upgraded = await _views(client, block)
        assert upgraded[0]["view"].startswith("Turns 1–2")  # the scripted model's title
        assert {lv: upgraded[lv]["view"] for lv in (3, 4, 5)} == {lv: fallback[lv]["view"] for lv in (3, 4, 5)}
        # The block's extraction runs again on the model's views (re-queued by the upgrade's commit; it was done in
        # the first process, so this run is that re-queue's).
        await client.wait_for(_job_notes(client, "event_extraction", block, "done"))
        info = await client.call("system.info")
        assert info["counts"]["block_views"] == {"model": 1, "extractive": 0, "fallback": 0}
    finally:
        await client.close()
    with sqlite3.connect(db) as conn:
        (after,) = conn.execute("SELECT after FROM audit_log WHERE action = 'block.summarized'").fetchone()
        after = json.loads(after)
        assert after["upgraded_from"] == "fallback" and after["summary_source"] == "model"
        extraction = conn.execute("SELECT status, attempts FROM jobs WHERE kind = 'event_extraction'").fetchone()
        assert extraction == ("done", 1)


async def test_a_model_success_upgrades_earlier_fallback_blocks(
    tmp_path: Path, model_server: ScriptedModelServer, flaky: FlakyModel
):
    env = model_env(model_server, STRATAGATE_JOB_MAX_ATTEMPTS="1")
    client = await SidecarClient.start(tmp_path / "m.db", env=env, args=["--block-turns", "1"])
    try:
        (first,) = (await client.call("turn.capture", capture_params(1, *EN[1])))["sealed_block_ids"]
        await client.wait_for(_job_notes(client, "block_summary", first, "failed"))
        flaky.down = False
        (second,) = (await client.call("turn.capture", capture_params(2, *EN[3])))["sealed_block_ids"]
        await _ready(client, second)
        await _ready(client, first)  # re-queued by the second block's success
        info = await client.call("system.info")
        assert info["counts"]["block_views"] == {"model": 2, "extractive": 0, "fallback": 0}
    finally:
        await client.close()


async def test_requeue_fallbacks_is_idempotent(tmp_path: Path, model_server: ScriptedModelServer, flaky: FlakyModel):
    db_path = tmp_path / "m.db"
    env = model_env(model_server, STRATAGATE_JOB_MAX_ATTEMPTS="1")
    client = await SidecarClient.start(db_path, env=env, args=["--block-turns", "1"])
    try:
        (block,) = (await client.call("turn.capture", capture_params(1, *EN[1])))["sealed_block_ids"]
        await client.wait_for(_job_notes(client, "block_summary", block, "failed"))
    finally:
        await client.close()
    db = Database(db_path)
    await db.open()
    try:
        assert await requeue_fallbacks(db, 3) == 1
        assert await requeue_fallbacks(db, 3) == 0  # already queued: left as it is
        row = await db.fetchone("SELECT status, attempts, max_attempts FROM jobs WHERE kind = 'block_summary'")
        assert (row["status"], row["attempts"], row["max_attempts"]) == ("queued", 0, 3)
        assert await db.scalar("SELECT summary_source FROM blocks") == "fallback"  # the views stay until upgraded
    finally:
        await db.close()
