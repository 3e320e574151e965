"""Issue 12's acceptance with phrasings the scenario test does not use, end to end over JSON-RPC with no model route
(STRATAGATE_MODEL_ROUTE=none): a real sidecar and SQLite file. A topic-subject statement ("Our CI runs on Jenkins",
"我们的测试框架用 Jest") is an event, a change worded another way ("moving CI to …", "Replace … please", "换成 … 吧")
supersedes it and recall labels the pair, a deadline plan ("by the end of March") keeps its planned window, and a
question in the category's own words ("测试框架用什么？") recalls the change though the change never names it."""

from __future__ import annotations

import test_zero_model_scenario as scenario
from support.sidecar import SidecarClient
from test_zero_model_scenario import converse, events

client = scenario.client  # the scenario's zero-model sidecar, one turn per block

EN = "project:unseen:0123456789abcdef"
ZH = "project:未见:fedcba9876543210"


async def heading(c: SidecarClient, ns: str, query: str, event_id: str) -> str:
    out = await c.call("activation.render", {"namespace": ns, "session": "s2", "query": query})
    lines = out["text"].splitlines()
    return next(line for line in lines if line.startswith(f"[{event_id} "))


async def test_english_topic_subjects_changes_and_a_deadline(client: SidecarClient):
    said = [
        "Our CI runs on Jenkins right now.", "We're moving CI to GitHub Actions.",
        "Tests are written with Jest.", "Replace Jest with Vitest please.",
        "We plan to ship v2 by the end of March.", "What if we used Bun instead",
    ]
    await converse(client, EN, [(s, "ok") for s in said])
    found = await events(client, EN)
    assert set(found) == set(said[:5]), "the hypothetical is no event"
    for old, new in ((said[0], said[1]), (said[2], said[3])):
        assert (found[old]["status"], found[old]["successor_id"]) == ("superseded", found[new]["id"])
        assert (found[new]["status"], found[new]["type"]) == ("active", "change")
    line = await heading(client, EN, "which CI do we use?", found[said[1]]["id"])
    assert f"current · replaces {found[said[0]]['id']}" in line
    plan = found[said[4]]["temporal"]
    assert (plan["status"], plan["original"]) == ("planned", "by the end of March.")
    assert (plan["happened_start"][:10], plan["happened_end"][:10]) == ("2027-03-01", "2027-04-01")


async def test_chinese_topic_first_then_a_change_recalled_by_its_category(client: SidecarClient):
    said = ["我们的测试框架用 Jest。", "换成 Vitest 吧。", "数据库决定用 PostgreSQL。", "不用 PostgreSQL 了，用 SQLite",
            "我们计划月底前发布 2.0。", "如果改用 pnpm 会更快"]
    await converse(client, ZH, [(s, "好的") for s in said])
    found = await events(client, ZH)
    assert set(found) == set(said[:5])
    for old, new in ((said[0], said[1]), (said[2], said[3])):
        assert (found[old]["status"], found[old]["successor_id"]) == ("superseded", found[new]["id"])
    line = await heading(client, ZH, "测试框架用什么？", found[said[1]]["id"])
    assert f"current · replaces {found[said[0]]['id']}" in line
    plan = found[said[4]]["temporal"]
    assert (plan["status"], plan["original"]) == ("planned", "月底")
    assert (plan["happened_start"][:10], plan["happened_end"][:10]) == ("2026-05-01", "2026-06-01")
