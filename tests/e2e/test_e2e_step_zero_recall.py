"""Step-0 recall inside the real DeepSeek Harness: the memory the shim injects into the FIRST model request of a
turn is chosen by that turn's new human message, not by the previous one.

In DSH 0.1.0-rc.8 the new prompt is not in the session log yet when the step-0 prompt is assembled (the loop
claims it from the inbox, assembles, and only then appends it as a ``user/message``: agent-loop/src/agent.ts
``preStep``/``turn``). These tests seed two long-term memories on different topics with ``memory_remember``,
then look at the runtime-context snapshot of each turn's first agent request: its long-term section
("Long-term memory relevant to this step (events):") must rank the memory of *that* turn's prompt first.
The long-term section is ranked by the query only (cross-session blocks are shown whatever the query, so they
are not what is checked here).
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from support.dsh import DshHome, Run
from support.dsh_model import (
    DshModel,
    content_text,
    is_agent_request,
    is_injected,
    is_runtime_context,
    messages,
    tool_messages,
)
from support.model_server import ScriptedModelServer

E2E_DIR = Path(__file__).resolve().parent
FOLLOWUP_PLUGIN = E2E_DIR / "followup-plugin.mjs"
LONGTERM_TITLE = "Long-term memory relevant to this step (events):"

PACKAGES = {
    "title": "Package manager decision",
    "text": "Decision: this repository installs its dependencies with pnpm, never npm.",
    "type": "decision",
    "scope": "project",
}
STAGING = {
    "title": "Staging database port",
    "text": "The staging database listens on port 6543.",
    "type": "fact",
    "scope": "project",
}
PACKAGES_PROMPT = "Which package manager installs the dependencies?"
STAGING_PROMPT = "What port does the staging database listen on?"


# ----------------------------------------------------------------------------------------- helpers


# The recall deadline (activationTimeoutMs, 1.5 s) is product behaviour: on timeout a step runs without memory. What
# these tests check is the ranking, so a loaded machine must not turn a slow render into "nothing recalled".
PATIENT_RECALL = "- id: stratagate\n  config:\n    activationTimeoutMs: 60000\n"


def patient(home: DshHome) -> Path:
    patch = home.logs / "patient-recall.patch.yml"
    patch.write_text(PATIENT_RECALL)
    return patch


def headless(home: DshHome, server: ScriptedModelServer, task: str, cwd: Path, **kw: Any) -> Run:
    return home.headless(task, cwd, requests=lambda: len(server.requests), **kw)


def ok(run: Run) -> None:
    assert run.returncode == 0, run.describe()
    assert not run.leftovers, f"processes outlived the headless run:\n{run.describe()}"


def agent_steps(server: ScriptedModelServer, run: Run) -> list[dict[str, Any]]:
    first, last = run.request_range
    return [b for b in server.requests[first:last] if is_agent_request(b)]


def newest_prompt(body: dict[str, Any]) -> str:
    """The newest human-looking user message of a request (not the runtime context, not a tool result)."""
    for m in reversed(messages(body)):
        if m.get("role") == "user" and not is_injected(m):
            return content_text(m.get("content"))
    return ""


def current_runtime_context(body: dict[str, Any]) -> str:
    """The newest runtime-context snapshot of a request: the one DSH says supersedes the earlier ones."""
    snapshots = [content_text(m.get("content")) for m in messages(body) if is_runtime_context(m)]
    return snapshots[-1] if snapshots else ""


def longterm_event_ids(context: str) -> list[str]:
    """Event ids of the long-term section of a runtime context, in the order the sidecar ranked them."""
    start = context.find(LONGTERM_TITLE)
    if start < 0:
        return []
    section = context[start:].split("\n\n", 1)[0]
    return re.findall(r"^\[(evt_\d+) ·", section, flags=re.MULTILINE)


def first_request_of(server: ScriptedModelServer, run: Run, prompt: str) -> dict[str, Any]:
    """The first agent request whose newest human message is ``prompt``: step 0 of the turn that prompt opened."""
    for body in agent_steps(server, run):
        if newest_prompt(body) == prompt:
            return body
    seen = [newest_prompt(b)[:80] for b in agent_steps(server, run)]
    raise AssertionError(f"no agent request for the prompt {prompt!r}; newest prompts seen: {seen}\n{run.describe()}")


def remember(home: DshHome, model: DshModel, server: ScriptedModelServer, cwd: Path, memory: dict[str, str]) -> str:
    """A headless turn in which the model calls memory_remember; returns the stored event's id."""
    model.tool, model.arguments = "memory_remember", memory
    try:
        run = headless(home, server, f"Please remember: {memory['text']}", cwd)
    finally:
        model.tool, model.arguments = None, {}
    ok(run)
    results = [m for body in agent_steps(server, run) for m in tool_messages(body)]
    assert results, f"the model never got the memory_remember result\n{run.describe()}"
    content = content_text(results[0]["content"])
    assert not content.startswith("Error:"), content
    event_id = json.loads(content)["id"]
    assert re.fullmatch(r"evt_\d+", event_id), content
    return str(event_id)


def seed_two_topics(home: DshHome, model: DshModel, server: ScriptedModelServer, cwd: Path) -> tuple[str, str]:
    return remember(home, model, server, cwd, PACKAGES), remember(home, model, server, cwd, STAGING)


def ranked_in(body: dict[str, Any]) -> list[str]:
    return longterm_event_ids(current_runtime_context(body))


# ----------------------------------------------------------------------------------------- scenarios


def test_step_zero_of_a_one_shot_session_recalls_the_memory_of_its_prompt(
    stratagate: DshHome, model: DshModel, model_server: ScriptedModelServer, tmp_path: Path
) -> None:
    """A fresh session's very first request already carries the memory its prompt is about (before the fix the
    query at step 0 was empty: the new prompt is not in DSH's log yet, and a query that matches nothing recalls
    nothing)."""
    work = tmp_path / "project"
    packages, staging = seed_two_topics(stratagate, model, model_server, work)

    run = headless(stratagate, model_server, PACKAGES_PROMPT, work, patches=[patient(stratagate)])

    ok(run)
    first = agent_steps(model_server, run)[0]
    assert newest_prompt(first) == PACKAGES_PROMPT, messages(first)
    ranked = ranked_in(first)
    assert ranked[:1] == [packages], (
        f"step 0 did not recall {packages} ({PACKAGES['title']!r}) first; long-term ids {ranked} "
        f"(staging is {staging}). Runtime context:\n{current_runtime_context(first)}"
    )


def test_second_turn_step_zero_recalls_the_new_prompt_not_the_previous_one(
    stratagate: DshHome, model: DshModel, model_server: ScriptedModelServer, tmp_path: Path
) -> None:
    """Two turns in ONE session on different topics (the followup plugin queues turn 2's prompt as turn 1 closes):
    each turn's first request ranks the memory of its own prompt first. Before the fix turn 2's first request was
    rendered for turn 1's prompt, so the staging memory won the slot there."""
    work = tmp_path / "project"
    packages, staging = seed_two_topics(stratagate, model, model_server, work)
    patch = stratagate.logs / "followup.patch.yml"
    config = {"followups": [PACKAGES_PROMPT]}
    patch.write_text(
        "- insert:\n"
        "    - id: e2e-followup\n"
        f"      name: {json.dumps(str(FOLLOWUP_PLUGIN))}\n"
        f"      config: {json.dumps(config)}\n"
        + PATIENT_RECALL
    )

    run = headless(stratagate, model_server, STAGING_PROMPT, work, patches=[patch])

    ok(run)
    turn1 = first_request_of(model_server, run, STAGING_PROMPT)
    turn2 = first_request_of(model_server, run, PACKAGES_PROMPT)
    assert STAGING_PROMPT in [content_text(m.get("content")) for m in messages(turn2)], (
        "turn 2 is not in the same session as turn 1"
    )
    ranked1, ranked2 = ranked_in(turn1), ranked_in(turn2)
    problems = []
    if ranked2[:1] != [packages]:
        problems.append(
            f"turn 2 step 0 did not recall {packages} ({PACKAGES['title']!r}) first: {ranked2} (turn 1's memory is "
            f"{staging}). Runtime context:\n{current_runtime_context(turn2)}"
        )
    if ranked1[:1] != [staging]:
        problems.append(f"turn 1 step 0 did not recall {staging} first: {ranked1}\n{current_runtime_context(turn1)}")
    assert not problems, "\n\n".join(problems)
