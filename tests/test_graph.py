"""The knowledge graph: projection of remembered events, slots, validity windows, as-of reads in valid and transaction
time, lifecycle following (forget, restore, supersede), scope, and the batched projection job."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from support.sidecar import RpcFailure, SidecarClient

NS = "project:shop:0123456789abcdef"


@pytest.fixture
async def sidecar(tmp_path: Path) -> AsyncIterator[SidecarClient]:
    client = await SidecarClient.start(tmp_path / "memory.db")
    yield client
    await client.close()


async def tool(c: SidecarClient, name: str, args: dict[str, Any], session: str = "s1") -> dict[str, Any]:
    return await c.tool(NS, session, name, args)


async def tool_error(c: SidecarClient, name: str, args: dict[str, Any]) -> RpcFailure:
    with pytest.raises(RpcFailure) as err:
        await tool(c, name, args)
    return err.value


async def node(c: SidecarClient, ref: str, session: str = "s1", **args: Any) -> dict[str, Any]:
    return await tool(c, "memory_expand_graph_node", {"node": ref, **args}, session)


def statements(items: list[dict[str, Any]]) -> list[str]:
    return [f["statement"] for f in items]


async def test_npm_then_pnpm_acceptance(sidecar: SidecarClient):
    npm = await tool(sidecar, "memory_remember", {"text": "The project uses npm"})
    assert npm["graph"]["facts"] == ["fct_1"]
    pnpm = await tool(sidecar, "memory_remember", {"text": "Switch to pnpm", "supersedes": [npm["id"]]})
    assert pnpm["supersedes"][0] == {
        "id": npm["id"],
        "status": "superseded",
        "superseded": True,
        "prior_status": "active",
        "successor_id": pnpm["id"],
    }
    assert pnpm["graph"]["superseded_facts"] == ["fct_1"]

    # Search by what the tools are: both events, each with its status and successor.
    hits = (await tool(sidecar, "memory_search_events", {"query": "package manager", "include_inactive": True}))["hits"]
    assert [(h["id"], h["status"], h["successor_id"]) for h in hits] == [
        (pnpm["id"], "active", None),
        (npm["id"], "superseded", pnpm["id"]),
    ]

    project = await node(sidecar, "this project")
    assert project["name"] == "shop" and project["kind"] == "project"  # named after the project folder
    assert statements(project["current_state"]) == ["shop uses pnpm"]
    old, new = project["facts"]
    assert (old["statement"], old["status"], old["superseded_by"]) == ("shop uses npm", "superseded", new["id"])
    assert (new["statement"], new["status"], new["valid_to"]) == ("shop uses pnpm", "active", None)
    assert old["valid_to"] == new["valid_from"] is not None and old["valid_from"] is None  # start unknown
    assert [(e["id"], e["role"], e["status"]) for e in old["events"]] == [
        (npm["id"], "supports", "superseded"),
        (pnpm["id"], "ends", "active"),
    ]
    assert old["slot"] == new["slot"] == "package manager"

    # Valid time: before the switch the project used npm; after it, pnpm.
    before = await node(sidecar, project["id"], as_of="2026-01-01")
    assert statements(before["as_of"]["state"]) == ["shop uses npm"]
    assert before["as_of"]["state"][0]["status_now"] == "superseded"
    just_before = await node(sidecar, project["id"], as_of=_minus_ms(new["valid_from"]))
    assert statements(just_before["as_of"]["state"]) == ["shop uses npm"]
    after = await node(sidecar, project["id"], as_of=new["valid_from"])
    assert statements(after["as_of"]["state"]) == ["shop uses pnpm"]

    # Transaction time: what memory believed between the two remembers, and before anything.
    then = await node(sidecar, project["id"], known_at=_minus_ms(pnpm["created_at"]))
    assert statements(then["known_at"]["state"]) == ["shop uses npm"]
    assert then["known_at"]["facts"][0]["status"] == "active"
    nothing = await node(sidecar, project["id"], known_at="2020-01-01")
    assert nothing["known_at"]["state"] == [] and nothing["known_at"]["facts"] == []

    # The tool nodes: kind and category from the lexicon, aliases resolve, graph search by category.
    found = await tool(sidecar, "memory_search_graph", {"query": "package manager"})
    assert {h["name"] for h in found["hits"]} >= {"npm", "pnpm"}
    pnpm_node = next(h for h in found["hits"] if h["name"] == "pnpm")
    assert pnpm_node["kind"] == "tool" and pnpm_node["category"] == "package manager"
    assert statements(pnpm_node["current_state"]) == ["shop uses pnpm"]
    incoming = await node(sidecar, "pnpm")
    assert incoming["facts"][0]["direction"] == "in"
    counts = (await sidecar.call("system.info"))["counts"]
    assert counts["graph_nodes"] == 3 and counts["graph_facts"] == {"active": 1, "superseded": 1, "disputed": 0,
                                                                    "archived": 0}


def _minus_ms(stamp: str) -> str:
    from datetime import datetime, timedelta

    moment = datetime.fromisoformat(stamp.replace("Z", "+00:00")) - timedelta(milliseconds=1)
    return moment.isoformat()


async def test_a_switch_without_explicit_supersedes_supersedes_by_slot(sidecar: SidecarClient):
    npm = await tool(sidecar, "memory_remember", {"text": "We use npm."})
    docker = await tool(sidecar, "memory_remember", {"text": "The project uses npm and Docker."})
    assert docker["graph"]["facts"] == ["fct_1"]  # "npm and Docker" reads as npm: an existing fact gains support
    switched = await tool(
        sidecar,
        "memory_remember",
        {"text": "We switched from npm to pnpm last week.", "when": "last week", "happened": "occurred"},
    )
    assert switched["graph"]["superseded_events"] == [npm["id"], docker["id"]]
    again = await tool(sidecar, "memory_expand_event", {"id": npm["id"]})
    assert again["status"] == "superseded" and again["successor_id"] == switched["id"]
    state = (await node(sidecar, "project"))["current_state"]
    assert statements(state) == ["shop uses pnpm"]
    # "last week": the switch took effect then, not when it was said.
    assert state[0]["valid_from"] < switched["temporal"]["mentioned_at"]


async def test_forget_and_restore_move_facts_with_their_events(sidecar: SidecarClient):
    yarn = await tool(sidecar, "memory_remember", {"text": "The project uses yarn."})
    redis = await tool(sidecar, "memory_remember", {"text": "The API depends on Redis."})
    api = await node(sidecar, "API")
    assert statements(api["current_state"]) == ["API depends on redis"]

    await tool(sidecar, "memory_forget", {"id": redis["id"]})
    with pytest.raises(RpcFailure) as gone:
        await node(sidecar, "API")  # nothing left that anyone may see
    assert gone.value.code == -32004
    hidden = await tool(sidecar, "memory_search_graph", {"query": "redis"})
    assert hidden["hits"] == []
    await tool(sidecar, "memory_restore", {"id": redis["id"]})
    assert statements((await node(sidecar, "API"))["current_state"]) == ["API depends on redis"]

    # Forgetting the successor leaves the replaced fact superseded: the old event stays superseded (restorable).
    pnpm = await tool(sidecar, "memory_remember", {"text": "Switch to pnpm.", "supersedes": [yarn["id"]]})
    await tool(sidecar, "memory_forget", {"id": pnpm["id"]})
    project = await node(sidecar, "this project")
    assert project["current_state"] == []
    assert [(f["statement"], f["status"]) for f in project["facts"]] == [("shop uses yarn", "superseded")]
    with_archived = await node(sidecar, "this project", include_archived=True)
    assert [(f["statement"], f["status"]) for f in with_archived["facts"]] == [
        ("shop uses yarn", "superseded"),
        ("shop uses pnpm", "archived"),
    ]
    await tool(sidecar, "memory_restore", {"id": pnpm["id"]})
    assert statements((await node(sidecar, "this project"))["current_state"]) == ["shop uses pnpm"]


async def test_session_scoped_facts_stay_in_their_session(sidecar: SidecarClient):
    await tool(sidecar, "memory_remember", {"text": "We use vitest.", "scope": "session"}, session="s1")
    mine = await node(sidecar, "vitest", session="s1")
    assert statements(mine["facts"]) == ["shop uses vitest"]
    with pytest.raises(RpcFailure) as other:
        await node(sidecar, "vitest", session="s2")
    assert other.value.code == -32004
    assert (await tool(sidecar, "memory_search_graph", {"query": "vitest"}, session="s2"))["hits"] == []
    # A project-wide jest fact in another session is not replaced by the session's vitest.
    await tool(sidecar, "memory_remember", {"text": "The project uses jest."}, session="s2")
    assert statements((await node(sidecar, "project", session="s2"))["current_state"]) == ["shop uses jest"]
    s1_state = statements((await node(sidecar, "project", session="s1"))["current_state"])
    assert sorted(s1_state) == ["shop uses jest", "shop uses vitest"]


async def test_plans_and_unclear_text_project_nothing(sidecar: SidecarClient):
    plan = await tool(
        sidecar, "memory_remember", {"text": "Switch to bun next week.", "when": "next week", "happened": "planned"}
    )
    assert plan["graph"]["facts"] == [] and "planned" in plan["graph"]["skipped"]
    chat = await tool(sidecar, "memory_remember", {"text": "The build sometimes uses too much memory."})
    assert chat["graph"] == {"facts": [], "superseded_facts": [], "superseded_events": [], "skipped": "no claims"}
    assert (await tool(sidecar, "memory_search_graph", {}))["hits"] == []


async def test_explicit_claims_and_attributes(sidecar: SidecarClient):
    first = await tool(
        sidecar,
        "memory_remember",
        {
            "text": "Alice leads the checkout rewrite; the deadline is 2026-06-30.",
            "claims": [
                {
                    "subject": "Alice",
                    "subject_kind": "person",
                    "predicate": "works_on",
                    "object": "checkout rewrite",
                    "object_kind": "project",
                },
                {"subject": "checkout rewrite", "predicate": "deadline", "value": "2026-06-30"},
            ],
        },
    )
    assert first["claims"][1]["value"] == "2026-06-30"
    later = await tool(
        sidecar,
        "memory_remember",
        {
            "text": "The checkout rewrite deadline moved to 2026-07-15.",
            "claims": [{"subject": "checkout rewrite", "predicate": "deadline", "value": "2026-07-15"}],
        },
    )
    assert later["graph"]["superseded_events"] == []  # the first event still holds Alice's work: not replaced
    rewrite = await node(sidecar, "Checkout Rewrite")  # names match case-insensitively
    assert rewrite["kind"] == "project"
    assert sorted(statements(rewrite["current_state"])) == [
        "Alice works on checkout rewrite",
        "checkout rewrite deadline: 2026-07-15",
    ]
    old = next(f for f in rewrite["facts"] if f.get("value") == "2026-06-30")
    assert old["status"] == "superseded" and old["slot"] == "deadline"
    alice = (await tool(sidecar, "memory_search_graph", {"query": "Alice", "kind": "person"}))["hits"]
    assert [h["name"] for h in alice] == ["Alice"]

    err = await tool_error(sidecar, "memory_remember", {"text": "x", "claims": [{"subject": "a", "predicate": "uses"}]})
    assert err.code == -32602 and "exactly one of object" in err.message


async def test_bad_as_of_and_unknown_nodes_are_clear_errors(sidecar: SidecarClient):
    await tool(sidecar, "memory_remember", {"text": "The project uses npm"})
    for args, needle in (
        ({"node": "project", "as_of": "last tuesday"}, "not a date"),
        ({"node": "project", "known_at": "2026-13-01"}, "not a date"),
        ({"node": "nod_999"}, "unknown graph node"),
        ({"node": "nobody"}, "unknown graph node"),
    ):
        err = await tool_error(sidecar, "memory_expand_graph_node", args)
        assert needle in err.message, (args, err.message)
    other = await sidecar.tool("project:other:ffffffffffffffff", "s1", "memory_search_graph", {"query": "npm"})
    assert other["hits"] == []  # namespaces never see each other's graph


async def test_graph_mutations_are_audited_with_full_fact_state(sidecar: SidecarClient, tmp_path: Path):
    npm = await tool(sidecar, "memory_remember", {"text": "The project uses npm"})
    await tool(sidecar, "memory_remember", {"text": "Switch to pnpm", "supersedes": [npm["id"]]})
    from test_events_explicit import run_cli

    code, out, err = await run_cli("audit", "--db", str(tmp_path / "memory.db"), "--namespace", NS, "--json")
    assert code == 0, err
    entries = list(reversed(json.loads(out)))
    graph = [(e["action"], e["subject_id"]) for e in entries if e["subject_type"] in ("node", "fact")]
    assert graph == [
        ("node.created", "nod_1"),
        ("node.created", "nod_2"),
        ("fact.asserted", "fct_1"),
        ("node.created", "nod_3"),
        ("fact.asserted", "fct_2"),
        ("fact.superseded", "fct_1"),
    ]
    sup = next(e for e in entries if e["action"] == "fact.superseded")
    assert sup["before"]["status"] == "active" and sup["after"]["status"] == "superseded"
    assert sup["after"]["superseded_by"] == 2 and sup["after"]["valid_to"]


@settings(max_examples=300, deadline=None)
@given(st.text(max_size=300))
def test_the_claim_reader_never_fails_and_only_returns_valid_claims(text: str):
    from stratagate.events.claims import Claim, read_claims

    claims = read_claims(text)
    assert claims == read_claims(text)  # deterministic
    for claim in claims:
        assert Claim.model_validate(claim.model_dump()) == claim
        assert claim.object is not None and claim.object.strip() == claim.object


@settings(max_examples=200, deadline=None)
@given(
    st.sampled_from(["npm", "pnpm", "yarn", "bun"]),
    st.sampled_from(["npm", "pnpm", "yarn", "bun"]),
    st.sampled_from(["We switched from {a} to {b}.", "Replace {a} with {b}.", "Switch from {a} to {b}"]),
)
def test_switch_sentences_end_the_old_tool_and_start_the_new(a: str, b: str, template: str):
    from stratagate.events.claims import read_claims

    claims = read_claims(template.format(a=a, b=b))
    assert [(c.object, c.ended, c.slot) for c in claims] == (
        [(a, True, "package manager"), (b, False, "package manager")]
        if a != b
        else [(a, True, "package manager"), (a, False, "package manager")]
    )


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        # A trailing reason after a comma: the clause holds the claim.
        ("Let's switch to pnpm, npm is too slow.", [("this project", "pnpm", False)]),
        ("We should move to yarn, pnpm breaks our CI.", [("this project", "yarn", False)]),
        ("After the migration, we use pnpm.", [("this project", "pnpm", False)]),
        # The whole sentence's own shape wins over its clauses.
        ("Use pnpm, not npm.", [("this project", "npm", True), ("this project", "pnpm", False)]),
        # Negated or conditional: no claim, whatever the clauses say.
        ("Don't switch to pnpm.", []),
        ("Don't switch to pnpm, npm is fine.", []),
        ("Before we switch to pnpm, we need to fix CI.", []),
        ("If we had time, we would use Rust.", []),
    ],
)
def test_claims_of_clauses_and_negations(text: str, expected: list[tuple[str, str, bool]]):
    from stratagate.events.claims import read_claims

    assert [(c.subject, c.object, c.ended) for c in read_claims(text)] == expected


async def test_near_duplicates_merge_but_negations_and_other_numbers_do_not(sidecar: SidecarClient):
    first = await tool(sidecar, "memory_remember", {"text": "The staging server runs on port 8080 behind nginx."})
    near = await tool(sidecar, "memory_remember", {"text": "the staging server runs on port 8080, behind nginx!"})
    assert near["duplicate"] is True and near["id"] == first["id"] and "merged" in near["note"]
    sources = (await tool(sidecar, "memory_expand_event", {"id": first["id"]}))["sources"]
    assert [s["quote"] for s in sources] == [
        "The staging server runs on port 8080 behind nginx.",
        "the staging server runs on port 8080, behind nginx!",
    ]
    other_port = await tool(sidecar, "memory_remember", {"text": "The staging server runs on port 9090 behind nginx."})
    negated = await tool(sidecar, "memory_remember", {"text": "The staging server does not run behind nginx on 8080."})
    assert other_port["duplicate"] is False and negated["duplicate"] is False
    assert len({first["id"], other_port["id"], negated["id"]}) == 3


@settings(max_examples=200, deadline=None)
@given(st.text(min_size=1, max_size=120), st.text(min_size=1, max_size=120))
def test_near_same_is_symmetric_and_reflexive_for_wordy_texts(a: str, b: str):
    from stratagate.events.store import near_same
    from stratagate.text.terms import terms

    assert near_same(a, b) == near_same(b, a)
    if len(set(terms(a))) >= 3:
        assert near_same(a, a)
