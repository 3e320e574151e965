"""Memory visible in the chat of the real DeepSeek Harness (``dsh web`` with the plugin): session A's model stores a
decision (``memory_remember``); session B of the same project asks about it. Its step recalls the event, and the
chat shows a "Context injection" row labelled **StrataGate Memory** whose expanded list names the recalled id with
its status and why it came (DSH's own ``catalog`` context form, rendered by DSH's web UI in headless chromium:
tests/browser/dsh-chat-row.mjs). The memory text itself stays in DSH's runtime context; the row's model-facing text
is one line naming the ids."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pytest

from support.dsh import REPO, DshHome
from support.dsh_model import MEMORY_ROW_HEAD, DshModel, content_text, is_agent_request, is_runtime_context, messages
from support.dsh_web import browser_run, running_web
from support.model_server import ScriptedModelServer

DRIVER = REPO / "tests" / "browser" / "dsh-chat-row.mjs"
FACT = "The project uses pnpm as its package manager."
QUESTION = "Which package manager does the project use?"
TITLE_B = "Package manager question"


@pytest.fixture
def model() -> DshModel:
    return DshModel(tool="memory_remember", arguments={"text": FACT, "type": "decision"})


def memory_rows(events: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The logged StrataGate Memory messages (user/message events whose source names our label)."""
    out = []
    for e in events:
        message = (e.get("data") or {}) if e.get("type") == "user/message" else {}
        source = message.get("source") or {}
        if source.get("kind") == "plugin" and source.get("plugin") == "StrataGate Memory":
            out.append(message)
    return out


def test_the_chat_shows_what_memory_recalled(
    web_stratagate: DshHome, model_server: ScriptedModelServer, model: DshModel, tmp_path: Path
) -> None:
    run = browser_run(web_stratagate, tmp_path, "dsh-chat-memory-row.png")
    node, work, shot = run.node, run.work, run.shot
    requests = lambda: len(model_server.requests)  # noqa: E731
    with running_web(web_stratagate, work) as web:
        a = web.create_session(work)
        stored = a.send("Remember which package manager we use.", requests=requests)
        assert stored.end_reason == "completed", stored.events[-5:]
        (event,) = web_stratagate.query("SELECT id FROM events WHERE status = 'active'")
        evt = f"evt_{event['id']}"

        model.tool = None  # session B only asks
        model.title = TITLE_B
        b = web.create_session(work)
        asked = b.send(QUESTION, requests=requests)
        assert asked.end_reason == "completed", asked.events[-5:]
        rows = memory_rows(asked.events)
        assert len(rows) == 1, rows
        source = rows[0]["source"]
        assert source["form"] == "catalog", source
        listed = {e["name"]: e["description"] for e in source["entries"]}
        assert evt in listed and "active" in listed[evt], source["entries"]
        # The model read the memory in the runtime context and, after it, the row's one line naming the id.
        first, last = asked.request_range
        body = next(b for b in model_server.requests[first:last] if is_agent_request(b))
        said = messages(body)
        snapshot = max(i for i, m in enumerate(said) if is_runtime_context(m))
        assert FACT in content_text(said[snapshot].get("content")), "the memory text stays in the runtime context"
        note = content_text(said[snapshot + 1].get("content"))
        assert note.startswith(MEMORY_ROW_HEAD) and evt in note and FACT not in note, note
        assert "stratagate-memory>" not in note, "the row names ids; an unclosed section tag would read as memory"

        url = f"http://127.0.0.1:{web.port}/"
        driven = subprocess.run(
            [node, str(DRIVER), "--url", url, "--title", TITLE_B, "--screenshot", str(shot)],
            cwd=REPO, capture_output=True, text=True, timeout=180, check=False,
        )
    assert driven.returncode == 0, f"driver exit {driven.returncode}\n{driven.stdout}\n{driven.stderr}"
    report = json.loads(driven.stdout.strip().splitlines()[-1])
    assert "failure" not in report, f"{report.get('failure')}\nsteps: {report['steps']}\nscreenshot: {shot}"
    assert report["errors"] == [], report["errors"]
    # The chat: one StrataGate Memory row beside DSH's own runtime-context row, expandable to the recalled ids.
    assert report["rows"] == 1, report
    assert "@deepseek-ai/dsh-system-prompt" in report["sources"], report["sources"]
    row = report["row"]
    assert row is not None and row["visible"], report
    assert row["header"].startswith("Context injection"), row
    assert row["form"] == "catalog", row
    # One context gauge on screen: DSH's; ours gives no second percentage beside it.
    assert report["dsh_gauge"], report
    assert report["dock"] is None or "%" not in report["dock"], report["dock"]
    shown = {e["name"]: e["description"] for e in row["entries"]}
    assert shown == listed, row  # the list the sidecar gave, as DSH renders it
    assert "active" in shown[evt] and "“package”" in shown[evt] and FACT in shown[evt], shown
