"""Event extraction from ready blocks (job kind event_extraction), driven over JSON-RPC with a scripted model."""

from __future__ import annotations

import json
import threading
from collections import deque
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from conftest import model_env, summary_arguments, turn
from support.model_server import ScriptedModelServer, delay, tool_call
from support.sidecar import SidecarClient
from test_events_explicit import run_cli

EXTRACT = "stratagate_extract_events"
NS = "proj"


def forced_tool(body: dict[str, Any]) -> str:
    choice = body.get("tool_choice")
    if isinstance(choice, dict) and (choice.get("function") or {}).get("name"):
        return str(choice["function"]["name"])
    return str(body["tools"][0]["function"]["name"])


class Script:
    """Summaries are answered from the transcript; extraction requests take the next queued answer (a dict, a
    callable of the payload, a raw string, or a ready behaviour), else an empty events list."""

    def __init__(self) -> None:
        self.durable = True
        self.answers: deque[Any] = deque()
        self.payloads: list[dict[str, Any]] = []
        self.systems: list[str] = []

    def __call__(self, body: dict[str, Any]) -> Any:
        name = forced_tool(body)
        if name != EXTRACT:
            return tool_call(name, summary_arguments(name, body) | {"has_durable_facts": self.durable})
        first_user = next(m for m in body["messages"] if m["role"] == "user")
        if len(body["messages"]) <= 2:  # not a correction retry
            self.payloads.append(json.loads(first_user["content"]))
            self.systems.append(body["messages"][0]["content"])
        answer = self.answers.popleft() if self.answers else {"events": []}
        if hasattr(answer, "respond"):
            return answer
        if callable(answer):
            answer = answer(self.payloads[-1])
        return tool_call(EXTRACT, answer)


@pytest.fixture
def script(model_server: ScriptedModelServer) -> Script:
    s = Script()
    model_server.default = s
    return s


@pytest.fixture
async def client(tmp_path: Path, model_server: ScriptedModelServer, script: Script) -> AsyncIterator[SidecarClient]:
    c = await SidecarClient.start(tmp_path / "memory.db", env=model_env(model_server), args=["--block-turns", "1"])
    yield c
    await c.close()


def user_msg(payload: dict[str, Any]) -> str:
    return next(m["id"] for m in payload["messages"] if m["role"] == "user")


def draft(summary: str, source: str | list[str], **extra: Any) -> dict[str, Any]:
    return {
        "title": extra.pop("title", summary[:60]),
        "summary": summary,
        "source_message_ids": [source] if isinstance(source, str) else source,
        **extra,
    }


async def capture(client: SidecarClient, i: int, text: str, **extra: Any) -> str:
    res = await client.call("turn.capture", turn(i, user=text, **extra))
    (block,) = res["sealed_block_ids"]
    return block


async def job_note(client: SidecarClient, block: str, status: str = "done", kind: str = "event_extraction") -> dict:
    return await client.wait_notification(
        "jobs.changed", lambda p: p["kind"] == kind and p["subject"] == block and p["status"] == status
    )


async def events(client: SidecarClient, **args: Any) -> list[dict[str, Any]]:
    return (await client.tool(NS, "s1", "memory_search_events", args))["hits"]


async def expand(client: SidecarClient, event_id: str) -> dict[str, Any]:
    return await client.tool(NS, "s1", "memory_expand_event", {"id": event_id})


async def audit_entries(tmp_path: Path) -> list[dict[str, Any]]:
    code, out, err = await run_cli("audit", "--db", str(tmp_path / "memory.db"), "--namespace", NS, "--json",
                                   "--limit", "200")
    assert code == 0, err
    return list(reversed(json.loads(out)))


async def test_npm_decision_then_pnpm_supersedes_it(client: SidecarClient, script: Script):
    script.answers.append(lambda p: {"events": [draft(
        "The repository uses npm as its package manager.", user_msg(p), title="Use npm", type="decision",
        quotes=["We use npm for this repository."], tags=["tooling"], time_status="ongoing")]})
    first_block = await capture(client, 1, "We use npm for this repository.")
    await job_note(client, first_block)

    (hit,) = await events(client, query="npm package manager")
    assert hit["status"] == "active" and hit["type"] == "decision" and hit["title"] == "Use npm"
    npm = await expand(client, hit["id"])
    assert npm["origin"] == "extraction" and npm["block_id"] == first_block
    first_payload = script.payloads[0]
    (source,) = npm["sources"]
    assert source["message_id"] == user_msg(first_payload) and source["quote"] == "We use npm for this repository."
    assert npm["temporal"]["mentioned_at"].startswith("2026-05-01T10:01:00")  # the user message's timestamp
    assert first_payload["related_events"] == [] and first_payload["block"] == first_block
    assert [m["text"] for m in first_payload["messages"]] == ["We use npm for this repository.", "Assistant reply 1."]
    system = script.systems[0]
    for phrase in ("supersedes", "conflicts_with", "never compute", "filled in by code", "never evidence",
                   "never instructions"):
        assert phrase in system.replace("Never compute", "never compute")

    def switch(p: dict[str, Any]) -> dict[str, Any]:
        related = {e["title"]: e for e in p["related_events"]}
        assert related["Use npm"]["status"] == "active" and related["Use npm"]["summary"].startswith("The repository")
        return {"events": [draft("The repository switched from npm to pnpm.", user_msg(p), title="Switch to pnpm",
                                 type="change", quotes=["switch to pnpm"], supersedes=[related["Use npm"]["id"]])]}

    script.answers.append(switch)
    second_block = await capture(client, 2, "Let's switch to pnpm instead of npm.")
    await job_note(client, second_block)
    # The first block's key facts were shown as context.
    assert script.payloads[1]["neighbour_key_facts"][0]["block"] == first_block

    (current,) = await events(client, query="npm pnpm")
    assert current["title"] == "Switch to pnpm" and current["status"] == "active"
    old = await expand(client, npm["id"])
    assert old["status"] == "superseded" and old["successor_id"] == current["id"]
    assert old["summary"] == npm["summary"] and old["narrative"] == npm["narrative"] and old["quotes"] == npm["quotes"]
    assert old["sources"] == npm["sources"]
    assert [e["id"] for e in old["successor_chain"]] == [current["id"]]


async def test_plan_gets_a_code_resolved_window(client: SidecarClient, script: Script):
    script.answers.append(lambda p: {"events": [draft(
        "Finish the prototype next week.", user_msg(p), type="plan", quotes=["Finish the prototype next week"],
        time_original="next week", time_status="occurred")]})  # 'occurred' for a future window is downgraded
    block = await capture(client, 1, "Finish the prototype next week", started_at="2026-05-06T10:00:00Z",
                          ended_at="2026-05-06T10:00:30Z")
    await job_note(client, block)
    (hit,) = await events(client, query="prototype")
    t = hit["temporal"]
    assert t["status"] == "planned" and t["precision"] == "week" and t["basis"] == "relative"
    assert t["original"] == "next week"
    assert t["mentioned_at"].startswith("2026-05-06T10:00:00")
    assert t["happened_start"].startswith("2026-05-11T00:00:00") and t["happened_end"].startswith("2026-05-18T00:00:00")


async def test_forgotten_event_restated_by_extraction_stays_forgotten(client: SidecarClient, script: Script,
                                                                       tmp_path: Path):
    fact = "Deploys go out on Tuesdays."
    script.answers.append(lambda p: {"events": [draft(fact, user_msg(p))]})
    b1 = await capture(client, 1, "Deploys go out on Tuesdays.")
    await job_note(client, b1)
    (hit,) = await events(client, query="deploys")
    await client.tool(NS, "s1", "memory_forget", {"id": hit["id"], "reason": "wrong"})

    script.answers.append(lambda p: {"events": [draft("deploys go OUT on  Tuesdays.", user_msg(p))]})
    b2 = await capture(client, 2, "Reminder: deploys go out on Tuesdays.")
    await job_note(client, b2)
    assert await events(client, query="deploys", include_inactive=True) == []
    gone = await events(client, query="deploys", status=["forgotten"])
    assert [h["id"] for h in gone] == [hit["id"]]
    entries = await audit_entries(tmp_path)
    suppressed = [e for e in entries if e["action"] == "event.suppressed"]
    assert len(suppressed) == 1 and suppressed[0]["subject_id"] == hit["id"]
    assert suppressed[0]["after"]["block"] == b2 and "Tuesdays" not in json.dumps(suppressed[0])


async def test_drafts_failing_code_checks_are_dropped(client: SidecarClient, script: Script, tmp_path: Path):
    def answer(p: dict[str, Any]) -> dict[str, Any]:
        mine = user_msg(p)
        return {"events": [
            draft("Staging database is called orchid.", mine, quotes=["staging  database\nis called orchid"]),
            draft("Production runs on port 9000.", [mine, "msg_999"]),
            draft("The team prefers tabs.", mine, quotes=["we love tabs"]),
            draft("Logging uses JSON.", mine, supersedes=["evt_77"]),
        ]}

    script.answers.append(answer)
    block = await capture(client, 1, "The staging database is called orchid. Production runs on port 9000.")
    await job_note(client, block)
    hits = await events(client, include_inactive=True)
    assert [h["title"] for h in hits] == ["Staging database is called orchid."]
    entries = await audit_entries(tmp_path)
    dropped = {e["after"]["title"]: e["after"]["reason"] for e in entries if e["action"] == "event.extraction_dropped"}
    assert "msg_999" in dropped["Production runs on port 9000."]
    assert "not verbatim" in dropped["The team prefers tabs."]
    assert "evt_77" in dropped["Logging uses JSON."]
    summary = next(e for e in entries if e["action"] == "block.events_extracted")
    assert summary["subject_id"] == block and summary["after"]["dropped"] == 3
    assert len(summary["after"]["inserted"]) == 1


async def test_malformed_output_fails_the_attempt_and_admits_the_rule_fallback_once(tmp_path: Path, script: Script,
                                                                      model_server: ScriptedModelServer):
    hold = threading.Event()
    script.answers.extend([
        "not json at all",
        '{"events": [{"title": "x"}]}',
        delay(120, tool_call(EXTRACT, {"events": []}), until=hold),
    ])
    # The second attempt is held at the model until the checks below are done: its request must not time out
    # meanwhile (a loaded machine may take seconds for them), or a third attempt would run.
    env = model_env(model_server, STRATAGATE_MODEL_TIMEOUT="180")
    client = await SidecarClient.start(tmp_path / "memory.db", env=env, args=["--block-turns", "1"])
    try:
        with model_server.gate(hold):
            block = await capture(client, 1, "We use npm for this repository.")
            failed = await job_note(client, block, "queued")
            assert failed["attempts"] == 1 and f"not a valid {EXTRACT} call" in failed["error"]
            # The failed attempt committed the rule proposer's events as the block's fallback (issue 12).
            fallback = await events(client, include_inactive=True)
            assert [h["summary"] for h in fallback] == ["We use npm for this repository."]
            jobs = (await client.call("jobs.list", {"namespace": NS}))["jobs"]
            extraction = next(j for j in jobs if j["kind"] == "event_extraction")
            assert extraction["subject"] == block and extraction["last_error"]
            # With a short backoff the retry may already be running (held at the model): next_run_at is only
            # reported while the job waits.
            assert extraction["status"] in ("queued", "running")
            assert bool(extraction["next_run_at"]) == (extraction["status"] == "queued")
            hold.set()
        done = await job_note(client, block)
        assert done["attempts"] == 2
        # The model answered (nothing durable): the fallback events stay, the rules did not run a second time.
        again = await events(client, include_inactive=True)
        assert [(h["id"], h["summary"], h["status"]) for h in again] == [
            (h["id"], h["summary"], h["status"]) for h in fallback
        ]
        runs = [e["after"] for e in await audit_entries(tmp_path) if e["action"] == "block.events_extracted"]
        assert [(r["source"], r["route"]) for r in runs] == [("fallback", "rules:events"), ("model", runs[1]["route"])]
        assert runs[1]["route"] != "rules:events"
    finally:
        await client.close()


async def test_block_without_durable_facts_gets_no_extraction(client: SidecarClient, script: Script,
                                                              model_server: ScriptedModelServer):
    script.durable = False
    block = await capture(client, 1, "Hello there.")
    await job_note(client, block, kind="block_summary")
    jobs = (await client.call("jobs.list", {"namespace": NS}))["jobs"]
    assert [j["kind"] for j in jobs] == ["block_summary"]
    assert all(forced_tool(b) != EXTRACT for b in model_server.requests) and script.payloads == []



async def test_conflicting_extraction_disputes_both_and_a_duplicate_merges_sources(client: SidecarClient,
                                                                                     script: Script):
    script.answers.append(lambda p: {"events": [draft(
        "Deploys go out on Fridays.", user_msg(p), title="Deploy day", type="decision",
        quotes=["Deploys go out on Fridays."])]})
    first = await capture(client, 1, "Deploys go out on Fridays.")
    await job_note(client, first)
    (friday,) = await events(client, query="deploys fridays")

    def conflict_and_duplicate(p: dict[str, Any]) -> dict[str, Any]:
        related = [e["id"] for e in p["related_events"]]
        assert friday["id"] in related
        return {"events": [
            draft("Deploys go out on Mondays.", user_msg(p), title="Deploy day (Monday)", type="decision",
                  conflicts_with=[friday["id"]]),
            draft("Deploys go out on Fridays.", user_msg(p), title="Deploy day again"),
        ]}

    script.answers.append(conflict_and_duplicate)
    second = await capture(client, 2, "Deploys go out on Mondays. Deploys go out on Fridays, someone said.")
    await job_note(client, second)

    hits = {h["title"]: h for h in await events(client, query="deploys mondays fridays")}
    assert hits["Deploy day"]["status"] == "disputed"
    assert hits["Deploy day (Monday)"]["status"] == "disputed"
    assert "Deploy day again" not in hits  # the exact restatement merged into the existing event
    merged = await expand(client, friday["id"])
    cited_blocks = {s.get("message_id") for s in merged["sources"]}
    assert len(cited_blocks) == 2  # one source from each block


async def test_extracted_claims_are_projected_by_a_batch_job_and_conflicts_dispute_facts(client: SidecarClient,
                                                                                           script: Script):
    deploy_day = {"subject": "this project", "predicate": "deploy_day", "value": "Friday"}
    script.answers.append(lambda p: {"events": [draft(
        "Deploys go out on Fridays.", user_msg(p), title="Deploy day", type="decision", claims=[
            deploy_day, {"subject": "Dana", "subject_kind": "person", "predicate": "member_of", "object": "Ops"},
            {"subject": "", "predicate": "broken"}])]})  # a malformed claim is dropped, the event kept
    first = await capture(client, 1, "Deploys go out on Fridays. Dana from Ops runs them.")
    await job_note(client, first)
    done = await client.wait_notification(
        "jobs.changed", lambda p: p["kind"] == "graph_projection" and p["status"] == "done")
    assert done["subject"].startswith("batch_")
    (friday,) = await events(client, query="deploys fridays")
    assert [c["predicate"] for c in (await expand(client, friday["id"]))["claims"]] == ["deploy_day", "member_of"]
    project = await client.tool(NS, "s1", "memory_expand_graph_node", {"node": "this project"})
    assert [(f["statement"], f["status"]) for f in project["current_state"]] == [("project deploy day: Friday",
                                                                                  "active")]
    dana = await client.tool(NS, "s1", "memory_expand_graph_node", {"node": "dana"})
    assert dana["kind"] == "person" and dana["current_state"][0]["statement"] == "Dana member of Ops"

    def conflict(p: dict[str, Any]) -> dict[str, Any]:
        return {"events": [draft("Deploys go out on Mondays.", user_msg(p), title="Deploy day (Monday)",
                                 type="decision", conflicts_with=[friday["id"]],
                                 claims=[deploy_day | {"value": "Monday"}])]}

    script.answers.append(conflict)
    second = await capture(client, 2, "Deploys go out on Mondays.")
    await job_note(client, second)
    await client.wait_notification(
        "jobs.changed", lambda p: p["kind"] == "graph_projection" and p["status"] == "done" and p["subject"] != done[
            "subject"])
    project = await client.tool(NS, "s1", "memory_expand_graph_node", {"node": "this project"})
    # Both events are disputed, so neither day is settled: the Friday fact is disputed, and Monday comes in
    # disputed (it does not silently replace Friday).
    assert sorted((f["statement"], f["status"]) for f in project["current_state"]) == [
        ("project deploy day: Friday", "disputed"), ("project deploy day: Monday", "disputed")]
    assert all("disputed" in f["note"] for f in project["current_state"])
