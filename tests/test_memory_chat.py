"""Memory as the user sees it: what ``activation.render_step`` says it recalled (the chat's StrataGate Memory row:
``recalled``, ``note``, ``entries``) and ``/memory`` about memory (``context.command`` status, detail, recall, search),
in English and Chinese, through a real sidecar."""

from __future__ import annotations

import re
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from conftest import turn
from stratagate.context.last_recall import LastRecall, Recalls
from stratagate.context.recalled import NOTE_HEAD, shared_words
from support.sidecar import SidecarClient

FACT = "The tests use the pnpm package manager."
QUESTION = "Which package manager do the tests use?"


@pytest.fixture
async def sidecar(tmp_path: Path) -> AsyncIterator[SidecarClient]:
    client = await SidecarClient.start(tmp_path / "memory.db")
    yield client
    await client.close()


def asked(text: str, ident: str = "m1") -> dict[str, Any]:
    return {"id": ident, "role": "user", "content": [{"type": "text", "text": text}], "source": {"kind": "user"}}


async def remember(sidecar: SidecarClient, text: str = FACT, session: str = "s0", **extra: Any) -> str:
    stored = await sidecar.call("tools.call", {"namespace": "proj", "session": session, "name": "memory_remember",
                                               "arguments": {"text": text, "type": "decision", **extra}})
    return str(stored["event"]["id"] if "event" in stored else stored["id"])


async def step(sidecar: SidecarClient, text: str = QUESTION, lang: str = "en", **extra: Any) -> dict[str, Any]:
    params = {"namespace": "proj", "session": "s1", "claimed": [asked(text)], "lang": lang, **extra}
    result: dict[str, Any] = await sidecar.call("activation.render_step", params)
    return result


async def memory(sidecar: SidecarClient, args: str, lang: str = "en") -> str:
    answer = await sidecar.call("context.command", {"namespace": "proj", "session": "s1", "args": args, "lang": lang})
    return str(answer["text"])


async def test_a_step_says_what_it_recalled_and_why(sidecar: SidecarClient):
    evt = await remember(sidecar)
    result = await step(sidecar)
    assert result["event_ids"] == [evt]
    (event,) = [i for i in result["recalled"] if i["kind"] == "event"]
    assert event["id"] == evt and event["status"] == "active" and event["title"] == FACT
    assert event["reason"] == "words" and {"package", "manager"} <= set(event["words"]), event
    assert event["why"].startswith("matches “"), event
    # Every id the render chose is listed once, in the render's order, and nothing else.
    assert [i["id"] for i in result["recalled"]] == [*result["event_ids"], *result["node_ids"], *result["block_ids"]]
    # The row: one model-facing line naming the ids (not the memory text), and the list DSH renders.
    assert result["note"].startswith(NOTE_HEAD) and evt in result["note"] and FACT not in result["note"]
    # The row comes after the runtime context: spelling the section's tag would read as a newer, empty section.
    assert "<stratagate-memory" not in result["note"] and "</stratagate-memory" not in result["note"]
    assert result["entries"][0]["name"] == evt
    assert result["entries"][0]["description"] == f"active · “{FACT}” — {event['why']}"
    zh = await step(sidecar, lang="zh")
    assert zh["text"] == result["text"] and zh["note"] == result["note"], "the model sees the same in any UI language"
    assert zh["entries"][0]["description"].startswith("有效 · ") and "相关" in zh["entries"][0]["description"], zh


async def test_nothing_recalled_means_no_row(sidecar: SidecarClient):
    await remember(sidecar)
    unrelated = await step(sidecar, "Who owns the Eiffel Tower?")
    assert unrelated["recalled"] == [] and unrelated["note"] == "" and unrelated["entries"] == []
    sub = await step(sidecar, origin="subagent")
    assert "recalled" not in sub or sub["recalled"] == [], "a subagent recalls nothing, so lists nothing"


async def test_pinned_and_safety_events_say_they_come_on_every_step(sidecar: SidecarClient):
    await remember(sidecar)
    pinned = await remember(sidecar, "Our standup is at nine every weekday.")
    await sidecar.call("tools.call", {"namespace": "proj", "session": "s0", "name": "memory_pin",
                                      "arguments": {"id": pinned, "pinned": True}})
    result = await step(sidecar)
    reasons = {i["id"]: i["reason"] for i in result["recalled"]}
    assert reasons.get(pinned) == "pinned", result["recalled"]
    (item,) = [i for i in result["recalled"] if i["id"] == pinned]
    assert item["why"] == "pinned: recalled on every step"


async def test_memory_status_names_memory_and_the_last_recall_in_both_languages(sidecar: SidecarClient):
    before = await memory(sidecar, "status")
    assert "Last recall: none yet in this session" in before
    evt = await remember(sidecar)
    await step(sidecar)
    en = await memory(sidecar, "status")
    lines = en.splitlines()
    assert lines[0] == "StrataGate memory (this project)"
    assert "Events: 1 (1 active)." in lines
    assert any(line.startswith("Blocks: ") for line in lines)
    graph = next(line for line in lines if line.startswith("Graph: "))
    assert re.fullmatch(r"Graph: \d+ nodes?, \d+ current facts?\.", graph), graph
    assert any(line.startswith("Last recall (") and QUESTION in line for line in lines), en
    assert any(line.strip().startswith(f"{evt} · active · “{FACT}” — matches “") for line in lines), en
    assert any(line.startswith("Background jobs: ") for line in lines)
    assert sum(line.startswith("Context window: ") for line in lines) == 1, "the context in one plain line"
    zh = await memory(sidecar, "状态", "zh")
    assert zh.startswith("StrataGate 记忆（本项目）\n事件：共 1 条（有效 1 条）。"), zh
    for word in ("记忆块：", "知识图谱：", "最近一次回忆（", "后台任务：", "上下文窗口："):
        assert word in zh, (word, zh)
    assert f"{evt} · 有效 · “{FACT}” — 与“" in zh


async def test_memory_recall_shows_the_last_steps_recall(sidecar: SidecarClient):
    assert (await memory(sidecar, "recall")).startswith("Last recall: none yet")
    assert (await memory(sidecar, "回忆", "zh")).startswith("最近一次回忆：本会话还没有回忆")
    evt = await remember(sidecar)
    result = await step(sidecar)
    shown = await memory(sidecar, "recall")
    count = len(result["recalled"])
    assert shown.splitlines()[0].endswith(f": {count} item{'s' if count > 1 else ''}"), shown
    assert all(i["id"] in shown for i in result["recalled"]) and evt in shown
    await step(sidecar, "Who owns the Eiffel Tower?")
    assert "nothing relevant was recalled" in await memory(sidecar, "recall"), "the LAST step's recall"
    assert "没有相关的记忆" in await memory(sidecar, "recall", "zh")


async def test_memory_detail_keeps_the_figures_in_plain_words(sidecar: SidecarClient):
    await remember(sidecar)
    await step(sidecar)
    detail = await memory(sidecar, "detail")
    status = await memory(sidecar, "status")
    assert detail.startswith(status), "detail is status plus the engine's figures"
    assert not re.search(r"\bs\d{5}\b", detail)
    assert "上下文窗口：" in await memory(sidecar, "详情", "zh")


async def test_memory_search_covers_long_term_memory_and_the_archive_grouped(sidecar: SidecarClient):
    evt = await remember(sidecar)
    en = await memory(sidecar, "search pnpm")
    head, _, archive = en.partition("\n\n")
    assert head.startswith("Long-term memory (") and f"{evt} · active · “{FACT}”" in head, en
    assert archive.startswith("This session's archive:\n"), en
    zh = await memory(sidecar, "搜索 pnpm", "zh")
    assert zh.startswith("长期记忆（") and f"{evt} · 有效" in zh and "\n\n本会话的历史存档：\n" in zh, zh
    none = await memory(sidecar, "search quokka")
    assert none.startswith("Long-term memory: nothing matches."), none


def test_shared_words_are_the_words_as_typed():
    assert shared_words("Which Package managers?", "pnpm is the package manager") == ["Package", "managers"]
    assert shared_words("anything", "") == []


def test_recalls_keep_the_newest_sessions():
    recalls = Recalls(remember=2)
    for session in ("a", "b", "c"):
        recalls.put("ns", session, LastRecall(at="t", query=session, lang="en", items=[]))
    assert recalls.get("ns", "a") is None
    assert [recalls.get("ns", s).query for s in ("b", "c")] == ["b", "c"]  # type: ignore[union-attr]


async def test_a_turns_later_steps_reuse_the_explanation(monkeypatch: pytest.MonkeyPatch):
    """The explanation is built once per message and set of ids: a tool round's words change the query, not the why."""
    import stratagate.context.recalled as recalled

    explained: list[str] = []

    async def explain(conn: Any, session: str, query: str, result: dict[str, Any], lang: str = "en") -> list[Any]:
        explained.append(query)
        return [recalled.RecalledItem(id=i, kind="event", status="active", title="t", reason="recent", words=[],
                                      why="w") for i in result["event_ids"]]

    monkeypatch.setattr(recalled, "explain", explain)
    recalls = Recalls()
    result = {"event_ids": ["evt_1"], "node_ids": [], "block_ids": []}
    await recalled.remember_step(recalls, None, "ns", "s", QUESTION, result)  # type: ignore[arg-type]
    await recalled.remember_step(recalls, None, "ns", "s", QUESTION + "\n\nbash ls tests", result)  # type: ignore[arg-type]
    assert explained == [QUESTION]
    await recalled.remember_step(recalls, None, "ns", "s", "Another question?", result)  # type: ignore[arg-type]
    await recalled.remember_step(recalls, None, "ns", "s", "Another question?", result, "zh")  # type: ignore[arg-type]
    more = {**result, "event_ids": ["evt_1", "evt_2"]}
    await recalled.remember_step(recalls, None, "ns", "s", "Another question?", more, "zh")  # type: ignore[arg-type]
    assert explained == [QUESTION, "Another question?", "Another question?", "Another question?"]
    last = recalls.get("ns", "s")
    assert last is not None and [i.id for i in last.items] == ["evt_1", "evt_2"] and last.lang == "zh"


async def test_memory_status_counts_blocks_by_the_level_they_show_at(sidecar: SidecarClient):
    sealed = []
    for i in range(1, 13):
        sealed += (await sidecar.call("turn.capture", turn(i, session="s0")))["sealed_block_ids"]
    assert sealed, "twelve turns seal blocks"
    lines = (await memory(sidecar, "status")).splitlines()
    blocks = next(line for line in lines if line.startswith("Blocks: "))
    counted = re.match(r"Blocks: (\d+) \((\d+) ready, (\d+) being summarised\)", blocks)
    assert counted, blocks
    total, ready, pending = map(int, counted.groups())
    assert total == len(sealed) == ready + pending, blocks
    shown = [int(n) for n in re.findall(r"L\d [a-z -]+ ×(\d+)", blocks)]
    assert sum(shown) == total, blocks
    zh = next(line for line in (await memory(sidecar, "status", "zh")).splitlines() if line.startswith("记忆块："))
    assert f"记忆块：共 {total} 个" in zh and "按当前层级：" in zh, zh
