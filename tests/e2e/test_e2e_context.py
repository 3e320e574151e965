"""StrataGate's context engine in the real host, multi-turn, through the web profile's API.

One web session created without naming a preset: the plugin's bundle patch makes its own ``stratagate`` preset
(DSH's ``standard`` with StrataGate's compaction row, written by the shim at start) the default; on a small
context window, the scripted model makes 45 real DSH ``bash`` calls over 9 turns
(cat / grep / sed over pytest logs and sources written into the workdir, each result 0.3–2K tokens), then in a
10th turn decompresses the first tool card it sees. Checked on the model requests, the session log and the
scripted server's prefix-cache accounting:

* tool cards replace finished rounds in later requests, and the requests shrink after landings;
* DSH's stock summary never ran (no compaction/summary that is not ours, no summary text in any request), and no
  request came near the stock line (0.8 · window);
* ``decompress`` of a card returns the original tool output byte for byte;
* within a turn, consecutive requests only ever append (the prefix stays byte-identical) unless a landing happened
  between them, and then the prefix before the first replaced message is unchanged.
"""

from __future__ import annotations

import itertools
import json
from pathlib import Path
from typing import Any

from support.context_agent import (
    CARD_RE,
    ScriptedSession,
    ScriptedTurn,
    bash,
    decompress_first_card,
    last_tool_text,
    tool_texts,
    workspace,
)
from support.dsh import DshHome, originals_by_call
from support.dsh_model import content_text, is_agent_request, messages
from support.dsh_web import Turn, WebSession, plan_deadline_patch, running_web
from support.model_server import ScriptedModelServer, count_tokens

WINDOW = 48_000
STOCK_LINE = 0.8 * WINDOW  # compaction-basic's thresholdRatio
TOOL_TURNS = 9
CALLS_PER_TURN = 5
OUR_PROVIDER = "stratagate-py"  # compaction/summary.provider of the shim's own brackets
PRODUCT_PRESET = "stratagate"  # shim-js/preset.js


def plan(k: int) -> list[Any]:
    return [
        bash(f"cat logs/run-{k}.log", "Show the test log"),
        bash(f"cat src/module_{k}.py", "Show the module source"),
        bash(f"grep -n FAILED logs/run-{k}*.log", "Find failed tests"),
        bash(f"cat logs/run-{k + 20}.log", "Show another test log"),
        bash(f"sed -n '1,80p' src/module_{k + 20}.py", "Show the start of a module"),
    ]


def scripted_session() -> ScriptedSession:
    turns = [
        ScriptedTurn(f"Turn {k}: look at test run {k} and its module.", plan(k), f"DONE {k}.")
        for k in range(TOOL_TURNS)
    ]
    turns.append(
        ScriptedTurn(
            "Turn 9: restore the oldest tool output you have as a card.",
            [decompress_first_card],
            lambda body: "RESTORED: " + last_tool_text(body)[:200],
        )
    )
    return ScriptedSession(turns)


def agent_bodies(server: ScriptedModelServer, turn: Turn) -> list[tuple[int, dict[str, Any]]]:
    first, last = turn.request_range
    return [(i, b) for i, b in enumerate(server.requests[first:last], start=first) if is_agent_request(b)]


def landed_in(turn: Turn) -> bool:
    """Whether anything replaced history during the turn (a card's tool/result replace or a checkpoint)."""
    return any(isinstance(e.get("surfaceOp"), dict) for e in turn.events)


def card_call_ids(log: list[dict[str, Any]]) -> dict[str, str]:
    """card ref → callId of the tool/result it replaced (from the replacement tool/result events)."""
    out: dict[str, str] = {}
    for e in log:
        if e.get("type") != "tool/result" or not isinstance(e.get("surfaceOp"), dict):
            continue
        for part in (e.get("data") or {}).get("message", {}).get("content") or []:
            texts = "".join(c.get("text", "") for c in part.get("content") or [] if c.get("type") == "text")
            found = CARD_RE.match(texts)
            if found:
                out[found.group(1)] = str(part.get("toolCallId"))
    return out


def run_session(
    home: DshHome, server: ScriptedModelServer, agent: ScriptedSession, work: Path
) -> tuple[WebSession, list[dict[str, Any]]]:
    with running_web(home, work, patches=[plan_deadline_patch(home)]) as web:
        session = web.create_session(work)  # the deployment default, as the browser does
        assert session.preset == PRODUCT_PRESET, f"web sessions do not run StrataGate's preset: {session.preset}"
        for turn in agent.turns:
            session.send(turn.prompt, timeout=240, requests=lambda: len(server.requests))
        log = session.history()
    return session, log


def test_context_engine_multi_turn_web_session(
    web_stratagate: DshHome, model_server: ScriptedModelServer, tmp_path: Path
) -> None:
    web_stratagate.set_window(WINDOW, 4096)
    work = workspace(tmp_path / "project")
    agent = scripted_session()
    model_server.default = agent

    session, log = run_session(web_stratagate, model_server, agent, work)

    assert not agent.errors, agent.errors
    assert [t.end_reason for t in session.turns] == ["completed"] * len(agent.turns), [
        t.events[-3:] for t in session.turns
    ]
    bash_calls = [c for c in agent.calls if c[1] == "bash"]
    assert len(bash_calls) == TOOL_TURNS * CALLS_PER_TURN
    usages = model_server.usages
    steps = [(turn_index, i, b) for turn_index, t in enumerate(session.turns) for i, b in agent_bodies(model_server, t)]

    # Tool cards replaced finished rounds in later requests.
    carded = [b for _, _, b in steps if any(CARD_RE.match(t) for t in tool_texts(b))]
    assert carded, "no request ever showed a tool card"

    # The stock summary never ran, and nothing came near its line.
    summaries = [e for e in log if e.get("type") == "compaction/summary"]
    stock = [e for e in summaries if (e.get("data") or {}).get("provider") != OUR_PROVIDER]
    assert not stock, stock[:2]
    assert not any("<compacted-summary>" in content_text(m.get("content")) for _, _, b in steps for m in messages(b))
    peak = max(usages[i].prompt_tokens for _, i, _ in steps)
    assert peak < STOCK_LINE, f"peak prompt {peak} tokens ≥ the stock line {STOCK_LINE:.0f}"

    # Requests shrink after landings: some step is smaller than the step before it.
    sizes = [usages[i].prompt_tokens for _, i, _ in steps]
    assert any(b < a for a, b in itertools.pairwise(sizes)), sizes
    raw_total = sum(count_tokens(v) for v in originals_by_call(log).values())
    assert raw_total > WINDOW, f"the tool outputs ({raw_total} tokens) should not fit the window on their own"

    # decompress of a card returns the original output byte for byte.
    (restore_index, restore_call) = next((t, c) for t, name, c in agent.calls if name == "decompress")
    ref = restore_call["id"]
    originals = originals_by_call(log)
    cards = card_call_ids(log)
    assert ref in cards, (ref, sorted(cards))
    last_turn_bodies = agent_bodies(model_server, session.turns[restore_index])
    # Every StrataGate tool result reaches the model as its JSON value (shim-js/tools.js render); the card's
    # original output is the value's `text`, exactly.
    restored = json.loads(last_tool_text(last_turn_bodies[-1][1]))
    assert (restored["id"], restored["kind"]) == (ref, "card"), restored
    assert restored["text"] == originals[cards[ref]], (restored["text"][:300], originals[cards[ref]][:300])

    # Within a turn, the prompt only grows, except across a landing, and then only from the replaced point on.
    for turn in session.turns:
        bodies = [b for _, b in agent_bodies(model_server, turn)]
        for before, after in itertools.pairwise(bodies):
            a, b = messages(before), messages(after)
            if b[: len(a)] == a:
                continue
            assert landed_in(turn), f"turn {turn.number}: the prompt changed mid-turn with no landing"
            same = next(k for k in range(min(len(a), len(b))) if a[k] != b[k])
            assert a[:same] == b[:same]
            assert any(m.get("role") in ("tool", "user") for m in b[same : same + 1]), b[same]


def _memory_status(web: Any, session: WebSession) -> str:
    executed = web.command(session.id, "/memory status")
    assert executed is not None, "/memory is not a registered command"
    result = executed["result"]
    assert result["kind"] == "success" and result.get("text"), result
    return str(result["text"])


def _has_cjk(text: str) -> bool:
    return any("\u4e00" <= ch <= "\u9fff" for ch in text)


def test_memory_status_answers_in_english_and_chinese(
    web_stratagate: DshHome, model_server: ScriptedModelServer, tmp_path: Path
) -> None:
    """``/memory status`` through the web API (a slash command: answered by the host, never sent to the model), in
    the UI language: English by default, Chinese when DSH's locale setting says zh. It talks about memory (events,
    blocks, graph, the last recall, jobs) and gives the context window one plain line."""
    work = workspace(tmp_path / "project", logs=2, sources=2)
    agent = ScriptedSession([ScriptedTurn("Look at test run 0.", [bash("cat logs/run-0.log", "Show the test log")])])
    model_server.default = agent
    answers = {}
    for lang, settings in (("en", ""), ("zh", "locale:\n  preference: zh\n")):
        web_stratagate.write_settings(settings)
        with running_web(web_stratagate, work) as web:
            session = web.create_session(work)
            session.send(agent.turns[0].prompt, requests=lambda: len(model_server.requests))
            last = session.last_seq()
            answers[lang] = _memory_status(web, session)
            if lang == "en":
                # The turn's last recall and a grouped search, through the same command.
                recall = web.command(session.id, "/memory recall")
                assert recall is not None and recall["result"]["text"].startswith("Last recall ("), recall
                found = web.command(session.id, "/memory search test log")
                assert found is not None, "/memory search"
                text = found["result"]["text"]
                assert text.startswith("Long-term memory") and "\n\nThis session's archive:\n" in text, text
            logged = [e["type"] for e in session.events_since(last)]
            assert "command/done" in logged and "turn/start" not in logged, logged  # answered by the host, no turn

    assert answers["en"] and not _has_cjk(answers["en"]), answers["en"]
    assert answers["zh"] and _has_cjk(answers["zh"]), answers["zh"]
    # About memory first: events, blocks, the graph, the turn's last recall, jobs; the context in one plain line.
    for word in ("Events: ", "Blocks: ", "Graph: ", "Last recall (", "Background jobs: "):
        assert f"\n{word}" in answers["en"], (word, answers["en"])
    for word in ("事件：", "记忆块：", "知识图谱：", "最近一次回忆（", "后台任务："):
        assert f"\n{word}" in answers["zh"], (word, answers["zh"])
    assert sum(line.startswith("Context window: ") for line in answers["en"].splitlines()) == 1, answers["en"]
    assert sum(line.startswith("上下文窗口：") for line in answers["zh"].splitlines()) == 1, answers["zh"]
