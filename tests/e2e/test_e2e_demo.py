"""The offline demo of `npm start` in the real DeepSeek Harness (web profile): the demo model (scripts/demo_model.py,
started the way start.sh starts it), the settings and environment start.sh writes (scripts/demo_settings.py: the
same code path), StrataGate in zero-model mode (``STRATAGATE_MODEL_ROUTE=none``) with the demo's small blocks.

A newcomer's conversation: npm → pnpm → "finish the prototype next week", then a question. Checked: the demo model
acknowledges each message, the session title reads naturally, blocks become ready with rule-written (extractive)
titles, and the recall of the last turn — which the demo model repeats in its reply — shows the pnpm event current
with the npm one it superseded, and the prototype planned.
"""

from __future__ import annotations

import re
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from support.dsh import REPO, DshHome, DshInstall, repo_python
from support.dsh_web import WebSession, running_web

sys.path.insert(0, str(REPO / "scripts"))

import demo_settings  # scripts/ is no package: imported from its folder

# The e2e overrides of tests/e2e/conftest.py except the block size: the demo's own (demo_settings) is under test.
DEMO_TEST_ENV = {
    "STRATAGATE_PYTHON": str(repo_python()),
    "STRATAGATE_JOB_BACKOFF_BASE": "0.05",
    "STRATAGATE_JOB_BACKOFF_CAP": "0.2",
    "PYTHONPATH": str(REPO / "sidecar"),  # this tree's sidecar, not the venv's editable install
}
MESSAGES = [
    "We use npm for this project.",
    "Let's switch to pnpm, npm is too slow.",
    "We need to finish the prototype next week.",
    "Keep the README short.",
]
QUESTION = "Do we still use npm, and when is the prototype due?"
SETTLE_SECONDS = 90
POLL_SECONDS = 0.2


@pytest.fixture
def demo_model() -> Iterator[str]:
    """The demo model as start.sh runs it: ``demo_model.py`` prints ``listening <base_url>``."""
    proc = subprocess.Popen(
        [str(repo_python()), str(REPO / "scripts" / "demo_model.py")], stdout=subprocess.PIPE, text=True
    )
    try:
        assert proc.stdout is not None
        word, url = proc.stdout.readline().split()
        assert word == "listening", word
        yield url
    finally:
        proc.terminate()
        proc.wait(timeout=10)


@pytest.fixture
def demo_home(tmp_path: Path, dsh_install: DshInstall, demo_model: str, stratagate_tgz: Path) -> Iterator[DshHome]:
    home = DshHome(tmp_path / "dsh-home", dsh_install, demo_model, logs=tmp_path / "logs")
    try:
        demo_settings.write(home.path, demo_model)  # replaces the scripted-provider settings DshHome wrote
        home.extra_env.update(DEMO_TEST_ENV)
        home.extra_env.update(demo_settings.demo_env({}))
        home.extra_env["STRATAGATE_SHIM_LOG"] = str(home.logs / "shim.log")
        home.add_plugin(stratagate_tgz, "web")
        yield home
    finally:
        home.kill_all()


def reply_of(turn_events: list[dict[str, Any]]) -> str:
    """The assistant's text in one turn's events."""
    texts = []
    for event in turn_events:
        if event.get("type") != "assistant/message":
            continue
        content = ((event.get("data") or {}).get("message") or {}).get("content") or []
        texts.extend(part.get("text", "") for part in content if isinstance(part, dict) and part.get("type") == "text")
    return "\n".join(texts)


def wait_for(what: str, check: Callable[[], Any], timeout: float = SETTLE_SECONDS) -> Any:
    """Poll ``check`` until it returns something truthy (state written by background jobs), with a deadline."""
    deadline = time.monotonic() + timeout
    last: Any = None
    while time.monotonic() < deadline:
        last = check()
        if last:
            return last
        time.sleep(POLL_SECONDS)  # polling the database / the session log until the background work is done
    raise AssertionError(f"{what} did not happen within {timeout}s (last: {last!r})")


def settled(home: DshHome, blocks: int) -> bool:
    """``blocks`` blocks sealed and ready, their events extracted, and no job left to run (summaries, extraction,
    graph, embeddings). The extraction check closes the gap between a summary job's commit and its follow-up."""
    if not home.db_path.exists():
        return False
    ready = home.query("SELECT count(*) AS n FROM blocks WHERE status = 'ready'")[0]["n"]
    unextracted = home.query(
        "SELECT count(*) AS n FROM blocks WHERE status = 'ready' AND has_durable_facts = 1 AND events_source IS NULL"
    )[0]["n"]
    # Due work only: a periodic job (maintenance) waits queued for its next run.
    busy = home.query(
        "SELECT count(*) AS n FROM jobs WHERE status = 'running'"
        " OR (status = 'queued' AND next_run_at <= CAST(strftime('%s', 'now') AS INTEGER))"
    )[0]["n"]
    return ready >= blocks and unextracted == 0 and busy == 0


def title_of(session: WebSession) -> str | None:
    titles = [e["data"].get("title") for e in session.history() if e.get("type") == "session/title"]
    return titles[-1] if titles else None


def test_offline_demo_acknowledges_titles_and_recalls_what_changed(demo_home: DshHome, tmp_path: Path) -> None:
    work = tmp_path / "project"
    assert demo_settings.demo_env({})["STRATAGATE_BLOCK_TURNS"] == "1"  # the waits below count one-turn blocks
    with running_web(demo_home, work) as web:
        session = web.create_session(work)
        replies = []
        for number, message in enumerate(MESSAGES, start=1):
            turn = session.send(message)
            assert turn.end_reason == "completed", turn.events[-5:]
            replies.append(reply_of(turn.events))
            # Its block sealed: let its summary and extraction finish before the next turn (a user's typing pace).
            wait_for(f"block {number} ready with its jobs done", lambda n=number: settled(demo_home, n))
        last = session.send(QUESTION)
        recall_reply = reply_of(last.events)
        title = wait_for("a session title", lambda: title_of(session))

    # The demo model acknowledges what was said; it says once that it is a demo model.
    assert replies[0].startswith("(Offline demo model"), replies[0]
    for message, text in zip(MESSAGES, replies, strict=True):
        assert f"You said: “{message}”" in text, text
    assert all("demo model" not in text.lower() for text in replies[1:]), replies
    assert "Recall brought nothing for this step yet" in replies[0]

    # The session title comes from the first message, naturally.
    assert title == "We use npm for this project", title

    # Blocks: ready, written by rule (no model route), titled from their content.
    blocks = demo_home.query("SELECT seq, status, l0_title, summary_source, summary_model FROM blocks ORDER BY seq")
    sealed = blocks[: len(MESSAGES)]
    assert [(b["status"], b["summary_source"]) for b in sealed] == [("ready", "extractive")] * len(MESSAGES), [
        dict(b) for b in blocks
    ]
    assert all(b["summary_model"] == "rules:extractive" for b in sealed), [dict(b) for b in blocks]
    for block in sealed:
        title_text = block["l0_title"] or ""
        assert title_text and "e2e" not in title_text.lower() and not title_text.startswith("Turns "), title_text
    for block, word in zip(sealed, ["npm", "pnpm", "prototype", "README"], strict=True):
        assert word.lower() in block["l0_title"].lower(), [b["l0_title"] for b in sealed]

    # Events written by rule: pnpm current, npm superseded by it, the prototype planned next week.
    events = [dict(e) for e in demo_home.query("SELECT id, type, status, successor_id, title, time_status FROM events")]
    npm = [e for e in events if re.search(r"\bnpm\b", e["title"]) and "pnpm" not in e["title"]]
    pnpm = [e for e in events if "pnpm" in e["title"]]
    plan = [e for e in events if "prototype" in e["title"]]
    assert npm and pnpm and plan, events
    assert npm[0]["status"] == "superseded" and npm[0]["successor_id"] == pnpm[0]["id"], events
    assert pnpm[0]["status"] == "active", events
    assert plan[0]["time_status"] == "planned", events

    # Recall, as the demo model read it from each step's request and repeated it. "Keep the README short." is about
    # none of the stored memories: below the relevance floor, recall brings nothing for that step. The question about
    # npm and the prototype recalls pnpm current, naming the npm event it replaced (or npm on its own line as
    # superseded by it; a query that matches a superseded event ranks its current successor), and the plan with its
    # window.
    npm_id, pnpm_id = f"evt_{npm[0]['id']}", f"evt_{pnpm[0]['id']}"
    assert "Recall brought nothing for this step" in replies[3], replies[3]
    after = recall_reply.splitlines()
    current = [ln for ln in after if f"({pnpm_id}, " in ln]
    assert current and ", current" in current[0], recall_reply
    assert f"replaces {npm_id}" in current[0] or any(
        f"({npm_id}, " in ln and f"superseded by {pnpm_id}" in ln for ln in after
    ), recall_reply
    plan_line = r"prototype.*\(evt_\d+, plan, current, planned \d{4}-\d{2}-\d{2}"
    assert re.search(plan_line, recall_reply), recall_reply
    # Nothing stale poses as current: once pnpm is stored, no recall shows the npm event as current.
    for text in [*replies[2:], recall_reply]:
        assert not any(f"({npm_id}, " in ln and ", current" in ln for ln in text.splitlines()), text
