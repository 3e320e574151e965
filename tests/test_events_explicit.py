"""Explicit long-term memory (memory_remember & co.), driven over JSON-RPC like the DSH shim does."""

from __future__ import annotations

import asyncio
import json
import os
import sys
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from stratagate.events.store import fingerprint
from support.sidecar import REPO, RpcFailure, SidecarClient

NS = "proj"


async def tool(client: SidecarClient, name: str, args: dict[str, Any], session: str = "s1", ns: str = NS) -> Any:
    return await client.tool(ns, session, name, args)


async def rpc_error(client: SidecarClient, name: str, args: dict[str, Any], session: str = "s1") -> RpcFailure:
    with pytest.raises(RpcFailure) as err:
        await tool(client, name, args, session)
    return err.value


async def run_cli(*args: str) -> tuple[int, str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("STRATAGATE_")}
    env["PYTHONPATH"] = str(REPO / "sidecar")
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "stratagate", *args, env=env,
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
    )
    out, err = await proc.communicate()
    return proc.returncode or 0, out.decode(), err.decode()


async def test_tools_are_listed_with_schemas(sidecar: SidecarClient):
    specs = {t["name"]: t for t in await sidecar.call("tools.list")}
    for name in ("memory_remember", "memory_forget", "memory_restore", "memory_pin", "memory_search_events",
                 "memory_expand_event"):
        assert name in specs and specs[name]["parameters"]["type"] == "object"
    remember = specs["memory_remember"]["parameters"]
    assert remember["required"] == ["text"] and remember["properties"]["text"]["maxLength"] == 4000
    assert "memory_search_raw" in specs and "memory_get_blocks" in specs


async def test_npm_to_pnpm_supersession_keeps_history_visible_and_marked(sidecar: SidecarClient):
    npm = await tool(sidecar, "memory_remember", {
        "text": "The project uses npm as its package manager.", "type": "decision", "when": "last Friday",
        "happened": "occurred", "tags": ["tooling"],
    })
    assert npm["id"] == "evt_1" and npm["status"] == "active" and npm["duplicate"] is False
    assert npm["temporal"]["original"] == "last Friday" and npm["temporal"]["precision"] == "day"
    assert npm["temporal"]["happened_start"] < npm["temporal"]["mentioned_at"]
    pnpm = await tool(sidecar, "memory_remember", {
        "text": "Switched the package manager from npm to pnpm.", "type": "change", "supersedes": [npm["id"]],
    })
    assert pnpm["id"] == "evt_2" and pnpm["status"] == "active"
    assert pnpm["supersedes"] == [{"id": "evt_1", "status": "superseded", "superseded": True,
                                   "prior_status": "active", "successor_id": "evt_2"}]

    current = await tool(sidecar, "memory_search_events", {"query": "package manager"})
    assert [h["id"] for h in current["hits"]] == ["evt_2"]  # superseded is not shown by default

    both = await tool(sidecar, "memory_search_events", {"query": "npm pnpm", "include_inactive": True})
    hits = {h["id"]: h for h in both["hits"]}
    assert [h["id"] for h in both["hits"]] == ["evt_2", "evt_1"]  # the current one first
    assert hits["evt_2"]["status"] == "active" and hits["evt_2"]["successor_id"] is None
    old = hits["evt_1"]
    assert old["status"] == "superseded" and old["successor_id"] == "evt_2"
    assert old["successor_title"] == "Switched the package manager from npm to pnpm."
    assert "not current" in old["note"]

    expanded = await tool(sidecar, "memory_expand_event", {"id": "evt_1"})
    assert expanded["narrative"] == "The project uses npm as its package manager."  # content untouched
    assert expanded["title"] == npm["title"] and expanded["temporal"] == npm["temporal"]
    assert expanded["created_at"] == npm["created_at"] and expanded["tags"] == ["tooling"]
    assert expanded["weight_cap"] == 0.1 and expanded["prior_status"] == "active"
    assert [e["id"] for e in expanded["successor_chain"]] == ["evt_2"]
    assert expanded["sources"][0]["quote"] == npm["narrative"] and expanded["sources"][0]["message_id"] is None
    newer = await tool(sidecar, "memory_expand_event", {"id": "evt_2"})
    assert [e["id"] for e in newer["supersedes"]] == ["evt_1"] and newer["successor_chain"] == []


async def test_forget_tombstone_supersede_and_restore_prior_status(sidecar: SidecarClient):
    old = await tool(sidecar, "memory_remember", {"text": "Deploys go out on Tuesdays."})
    new = await tool(sidecar, "memory_remember", {"text": "Deploys go out on Thursdays.", "supersedes": [old["id"]]})
    forgotten = await tool(sidecar, "memory_forget", {"id": old["id"], "reason": "user asked"})
    assert forgotten["status"] == "forgotten" and forgotten["prior_status"] == "superseded"
    assert forgotten["narrative"] == "Deploys go out on Tuesdays."
    again = await tool(sidecar, "memory_forget", {"id": old["id"]})
    assert again["unchanged"] is True and again["status"] == "forgotten"

    # Forgotten never appears in search unless asked for by status.
    for args in ({"query": "deploys tuesdays", "include_inactive": True}, {"include_inactive": True}):
        assert old["id"] not in [h["id"] for h in (await tool(sidecar, "memory_search_events", args))["hits"]]
    explicit = await tool(sidecar, "memory_search_events", {"query": "deploys", "status": ["forgotten"]})
    assert [h["id"] for h in explicit["hits"]] == [old["id"]]

    # A restatement (any case or spacing) is refused, naming the tombstone and the way back.
    err = await rpc_error(sidecar, "memory_remember", {"text": "  deploys GO out\non   tuesdays. "})
    assert err.code == -32602
    assert "tombstone evt_1" in err.message and "memory_restore" in err.message
    assert err.data == {"tombstone": "evt_1"}

    # Superseding a forgotten event leaves it forgotten.
    third = await tool(sidecar, "memory_remember", {"text": "Deploys go out daily.", "supersedes": ["evt_1", "evt_2"]})
    outcome = {o["id"]: o for o in third["supersedes"]}
    assert outcome["evt_1"]["superseded"] is False and "stays forgotten" in outcome["evt_1"]["note"]
    assert outcome["evt_2"]["superseded"] is True
    still = await tool(sidecar, "memory_expand_event", {"id": "evt_1"})
    assert still["status"] == "forgotten" and still["successor_id"] == new["id"]  # link from before forgetting

    # Restore brings back the prior status (superseded), not 'active'; the tombstone is gone.
    restored = await tool(sidecar, "memory_restore", {"id": "evt_1"})
    assert restored["status"] == "superseded" and restored["successor_id"] == "evt_2"
    err = await rpc_error(sidecar, "memory_restore", {"id": "evt_1"})
    assert err.code == -32602 and "not forgotten" in err.message
    restated = await tool(sidecar, "memory_remember", {"text": "Deploys go out on Tuesdays."})
    assert restated["duplicate"] is False and restated["status"] == "active"  # allowed again

    # An active event comes back active.
    fact = await tool(sidecar, "memory_remember", {"text": "The staging database is called orchid."})
    await tool(sidecar, "memory_forget", {"id": fact["id"]})
    assert (await tool(sidecar, "memory_restore", {"id": fact["id"]}))["status"] == "active"


async def test_duplicates_pins_and_audit_cli(sidecar: SidecarClient, tmp_path: Path):
    first = await tool(sidecar, "memory_remember", {"text": "Use tabs for indentation in Makefiles.",
                                                    "type": "preference", "criticality": "preference"})
    dup = await tool(sidecar, "memory_remember", {"text": "use TABS for  indentation in makefiles."})
    assert dup["duplicate"] is True and dup["id"] == first["id"] and "already remembered" in dup["note"]
    hits = (await tool(sidecar, "memory_search_events", {"query": "indentation makefiles"}))["hits"]
    assert [h["id"] for h in hits] == [first["id"]]

    pinned = await tool(sidecar, "memory_pin", {"id": first["id"], "pinned": True})
    assert pinned["pinned"] is True and pinned["unchanged"] is False
    assert (await tool(sidecar, "memory_pin", {"id": first["id"], "pinned": True}))["unchanged"] is True
    assert (await tool(sidecar, "memory_expand_event", {"id": first["id"]}))["pinned"] is True
    assert (await tool(sidecar, "memory_pin", {"id": first["id"], "pinned": False}))["pinned"] is False
    second = await tool(sidecar, "memory_remember", {"text": "Indentation elsewhere is four spaces.",
                                                     "supersedes": [first["id"]]})
    await tool(sidecar, "memory_forget", {"id": second["id"], "reason": "wrong"})
    await tool(sidecar, "memory_restore", {"id": second["id"]})
    await tool(sidecar, "memory_remember", {"text": "another namespace"}, ns="other")

    code, out, err = await run_cli("audit", "--db", str(tmp_path / "memory.db"), "--namespace", NS, "--json",
                                   "--limit", "50")
    assert code == 0, err
    entries = json.loads(out)
    assert [e["id"] for e in entries] == sorted((e["id"] for e in entries), reverse=True)  # newest first
    assert all(e["namespace"] == NS and e["actor"] == "agent" for e in entries)
    actions = [(e["action"], e["subject_id"]) for e in reversed(entries) if e["action"].startswith("event.")]
    # The graph projection of these events is audited too (nodes and facts), interleaved with them.
    assert {e["action"] for e in entries} - {a for a, _ in actions} <= {"node.created", "fact.asserted",
                                                                         "fact.superseded", "fact.archived",
                                                                         "fact.active", "fact.updated"}
    assert actions == [
        ("event.remember", "evt_1"),
        ("event.pinned", "evt_1"),
        ("event.unpinned", "evt_1"),
        ("event.remember", "evt_2"),
        ("event.superseded", "evt_1"),
        ("event.forgotten", "evt_2"),
        ("event.restored", "evt_2"),
    ]
    by_action = {e["action"]: e for e in entries}
    assert by_action["event.remember"]["before"] is None and by_action["event.remember"]["after"]["status"] == "active"
    sup = by_action["event.superseded"]
    assert sup["before"]["status"] == "active" and sup["after"] == sup["before"] | {
        "status": "superseded", "prior_status": "active", "successor_id": "evt_2", "weight_cap": 0.1}
    gone = by_action["event.forgotten"]
    assert gone["before"]["status"] == "active" and gone["after"]["status"] == "forgotten"
    assert gone["after"]["note"] == {"reason": "wrong"}
    assert by_action["event.restored"]["after"]["status"] == "active"
    assert by_action["event.pinned"]["before"]["pinned"] is False and by_action["event.pinned"]["after"]["pinned"]

    code, out, _ = await run_cli("audit", "--db", str(tmp_path / "memory.db"), "--limit", "2")
    lines = [ln for ln in out.splitlines() if ln.startswith("#")]
    assert code == 0 and len(lines) == 2 and "event.remember event:evt_3 ns=other" in lines[0]
    code, _, err = await run_cli("audit", "--db", str(tmp_path / "missing.db"))
    assert code == 2 and "no database" in err


async def test_session_scope_is_enforced(sidecar: SidecarClient):
    private = await tool(sidecar, "memory_remember", {"text": "Scratch note: try the orchid flag.", "scope": "session"},
                         session="A")
    shared = await tool(sidecar, "memory_remember", {"text": "Shared note: the orchid service is on port 9000."},
                        session="A")
    assert private["scope"] == "session" and private["session"] == "A" and shared["session"] is None
    from_a = await tool(sidecar, "memory_search_events", {"query": "orchid"}, session="A")
    assert {h["id"] for h in from_a["hits"]} == {private["id"], shared["id"]}
    from_b = await tool(sidecar, "memory_search_events", {"query": "orchid"}, session="B")
    assert [h["id"] for h in from_b["hits"]] == [shared["id"]]
    listing = await tool(sidecar, "memory_search_events", {}, session="B")
    assert [h["id"] for h in listing["hits"]] == [shared["id"]]
    for name, args in (
        ("memory_expand_event", {"id": private["id"]}),
        ("memory_forget", {"id": private["id"]}),
        ("memory_pin", {"id": private["id"], "pinned": True}),
        ("memory_remember", {"text": "Replacement.", "supersedes": [private["id"]]}),
    ):
        err = await rpc_error(sidecar, name, args, session="B")
        assert err.code == -32004 and f"unknown event {private['id']}" in err.message, name
    # Another namespace sees nothing either.
    with pytest.raises(RpcFailure) as other:
        await tool(sidecar, "memory_expand_event", {"id": shared["id"]}, ns="elsewhere")
    assert other.value.code == -32004
    assert (await tool(sidecar, "memory_search_events", {"query": "orchid"}, ns="elsewhere"))["hits"] == []
    assert (await tool(sidecar, "memory_expand_event", {"id": private["id"]}, session="A"))["id"] == private["id"]


async def test_queries_only_return_matches(sidecar: SidecarClient):
    await tool(sidecar, "memory_remember", {"text": "We chose PostgreSQL for the main store.", "type": "decision"})
    await tool(sidecar, "memory_remember", {"text": "Plan to migrate CI to GitHub Actions.", "type": "plan"})
    assert (await tool(sidecar, "memory_search_events", {"query": "kubernetes helm"}))["hits"] == []
    stop = await tool(sidecar, "memory_search_events", {"query": "the and of"})
    assert stop["hits"] == [] and "no searchable words" in stop["note"]
    plans = await tool(sidecar, "memory_search_events", {"type": "plan"})
    assert [h["type"] for h in plans["hits"]] == ["plan"]
    assert (await tool(sidecar, "memory_search_events", {"query": "postgresql", "type": "plan"}))["hits"] == []
    assert len((await tool(sidecar, "memory_search_events", {"limit": 1}))["hits"]) == 1
    assert (await tool(sidecar, "memory_search_events", {"status": ["archived"]}))["hits"] == []


async def test_bad_ids_and_arguments_get_clear_errors(sidecar: SidecarClient):
    await tool(sidecar, "memory_remember", {"text": "Something to point at."})
    cases = [
        ("memory_remember", {}, -32602, "text"),
        ("memory_remember", {"text": "   "}, -32602, "blank"),
        ("memory_remember", {"text": "x" * 4001}, -32602, "text"),
        ("memory_remember", {"text": "ok", "type": "rumour"}, -32602, "type"),
        ("memory_remember", {"text": "ok", "scope": "world"}, -32602, "scope"),
        ("memory_remember", {"text": "ok", "supersedes": ["12"]}, -32602, "evt_12"),
        ("memory_remember", {"text": "ok", "supersedes": ["evt_999"]}, -32004, "unknown event evt_999"),
        ("memory_remember", {"text": "ok", "bogus": 1}, -32602, "bogus"),
        ("memory_forget", {"id": "blk_1"}, -32602, "evt_12"),
        ("memory_forget", {"id": "evt_999"}, -32004, "unknown event evt_999"),
        ("memory_restore", {"id": "evt_1"}, -32602, "evt_1 is active, not forgotten"),
        ("memory_pin", {"id": "evt_1"}, -32602, "pinned"),
        ("memory_expand_event", {"id": "evt_0"}, -32602, "evt_12"),
        ("memory_expand_event", {}, -32602, "id"),
        ("memory_search_events", {"limit": 21}, -32602, "limit"),
        ("memory_search_events", {"status": ["deleted"]}, -32602, "status"),
        ("memory_search_events", {"status": []}, -32602, "status"),
    ]
    for name, args, code, fragment in cases:
        err = await rpc_error(sidecar, name, args)
        assert err.code == code, (name, args, err.message)
        assert fragment in err.message, (name, args, err.message)
    # A refused remember stores nothing (the transaction rolled back).
    listing = await tool(sidecar, "memory_search_events", {"include_inactive": True})
    assert [h["id"] for h in listing["hits"]] == ["evt_1"]


_WORD = st.text(
    alphabet=st.sampled_from("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789.,;:!?-'\"/记忆管理包"),
    min_size=1,
    max_size=12,
)
_SPACE = st.text(alphabet=st.sampled_from(" \t\n\r\u3000\xa0"), min_size=1, max_size=4)


@given(words=st.lists(_WORD, min_size=1, max_size=12), seps=st.lists(_SPACE, min_size=13, max_size=13),
       flips=st.lists(st.booleans(), min_size=12, max_size=12))
def test_fingerprint_is_stable_under_whitespace_and_case(words: list[str], seps: list[str], flips: list[bool]):
    canonical = " ".join(w.lower() for w in words)
    varied = seps[-1] + "".join(
        (w.upper() if flip else w) + sep for w, sep, flip in zip(words, seps, flips, strict=False)
    )
    assert fingerprint(varied) == fingerprint(canonical)
    assert fingerprint(canonical + "x") != fingerprint(canonical)
    if len(words) > 1:
        assert fingerprint("".join(words)) != fingerprint(canonical)


async def test_event_search_filters_and_temporal_intent(sidecar: SidecarClient):
    async def remember(text: str, **extra: Any) -> str:
        return (await tool(sidecar, "memory_remember", {"text": text, **extra}))["id"]

    kickoff = await remember("Kickoff meeting for the billing service.", when="2026-03-02", happened="occurred",
                             type="event", tags=["billing"])
    review = await remember("Design review of the billing service.", when="2026-04-14", happened="occurred",
                            type="event")
    launch = await remember("Launch of the billing service.", when="2026-06-01", happened="planned", type="plan")
    stripe = await remember("Billing uses Stripe.", type="fact", scope="session")  # said now: latest of all

    async def ids_of(**args: Any) -> list[str]:
        return [h["id"] for h in (await tool(sidecar, "memory_search_events", args))["hits"]]

    assert await ids_of(query="billing service", temporal_intent="first") == [kickoff, review, launch, stripe]
    assert await ids_of(query="billing service", temporal_intent="latest") == [stripe, launch, review, kickoff]
    assert await ids_of(query="billing", type="plan") == [launch]
    assert await ids_of(type="event", temporal_intent="first") == [kickoff, review]  # empty query + filter
    assert await ids_of(after="2026-04-01", before="2026-05-01") == [review]
    assert await ids_of(query="billing", after="2026-05-01", type="event") == []
    assert await ids_of(scope="session") == [stripe]
    assert await ids_of(query="xylophone zebra quartz") == []  # no match → nothing, never recency
    err = await rpc_error(sidecar, "memory_search_events", {"after": "soon"})
    assert err.code == -32602 and "not a date" in err.message
