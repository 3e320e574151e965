"""memory_search_raw over a real sidecar: ranking, tool records, neighbours, blocks vs the open tail, filters."""

from __future__ import annotations

import pytest

from conftest import turn
from support.sidecar import RpcFailure, SidecarClient


async def search(sidecar: SidecarClient, **arguments):
    return await sidecar.tool("proj", "s1", "memory_search_raw", arguments)


async def capture_seven(sidecar: SidecarClient) -> None:
    """Turns 1–6 seal into a block (block size 6); turn 7 stays in the open tail."""
    texts = {
        2: ("Why does the nightly import crash?", "The importer ran out of memory on the largest archive."),
        4: ("Which port does staging use?", "Staging listens on port 8443 behind the proxy."),
        7: ("Remind me of the rollback plan", "Roll back by redeploying the previous container image."),
    }
    for i in range(1, 8):
        user, assistant = texts.get(i, (f"Small talk number {i}.", f"Reply number {i}."))
        extra = {}
        if i == 3:
            extra["tools"] = [{"name": "grep", "arguments": {"pattern": "zeppelin"},
                               "result": "src/airship.py:12: class ZeppelinLauncher:"}]
        await sidecar.call("turn.capture", turn(i, user=user, assistant=assistant, **extra))


async def test_tool_results_are_found_and_named(sidecar: SidecarClient):
    await capture_seven(sidecar)
    res = await search(sidecar, query="ZeppelinLauncher airship")
    top = res["hits"][0]
    assert top["role"] == "tool" and top["tool_name"] == "grep" and top["is_error"] is False
    assert "class ZeppelinLauncher" in top["text"] and top["matched"]


async def test_hits_carry_neighbours_and_where_to_read_more(sidecar: SidecarClient):
    await capture_seven(sidecar)
    res = await search(sidecar, query="staging port")
    top = res["hits"][0]
    assert top["turn"] == 4 and top["text"] == "Staging listens on port 8443 behind the proxy."
    assert top["before"]["text"] == "Which port does staging use?" and top["before"]["role"] == "user"
    assert top["after"]["text"] == "Small talk number 5." and top["after"]["turn"] == 5
    # Sealed: the block and the level that shows the source.
    assert top["block_id"] and top["block_status"] in ("pending", "ready") and top["expand_level"] == 5
    assert top["block_id"] in top["where"] and "level=5" in top["where"]
    source = await sidecar.tool("proj", "s1", "memory_expand_block", {"id": top["block_id"], "level": 5})
    assert "8443" in source["view"]
    # The open tail: no block yet, said so.
    tail = (await search(sidecar, query="rollback plan"))["hits"][0]
    assert tail["turn"] == 7 and tail["block_id"] is None and tail["expand_level"] is None
    assert tail["where"].startswith("open tail")
    assert tail["after"] is None or tail["after"]["turn"] == 7


async def test_neighbours_do_not_cross_sessions(sidecar: SidecarClient):
    await sidecar.call("turn.capture", turn(1, session="a", user="alpha widget", assistant="ok alpha"))
    await sidecar.call("turn.capture", turn(1, session="b", user="beta widget", assistant="ok beta"))
    hits = (await search(sidecar, query="beta widget"))["hits"]
    first = next(h for h in hits if h["session"] == "b" and h["role"] == "user")
    assert first["before"] is None and first["after"]["text"] == "ok beta"


async def test_words_that_match_nothing_return_nothing(sidecar: SidecarClient):
    await capture_seven(sidecar)
    res = await search(sidecar, query="kubernetes helm chart")
    assert res["hits"] == [] and "no message matches" in res["note"]
    stop = await search(sidecar, query="the and of")
    assert stop["hits"] == [] and "no searchable words" in stop["note"]


async def test_an_empty_query_needs_a_filter(sidecar: SidecarClient):
    await capture_seven(sidecar)
    for arguments in ({}, {"query": "   "}):
        with pytest.raises(RpcFailure) as err:
            await search(sidecar, **arguments)
        assert err.value.code == -32602 and "query" in err.value.message and "filter" in err.value.message


async def test_an_empty_query_with_a_filter_lists_only_matches(sidecar: SidecarClient):
    await capture_seven(sidecar)
    tools = await search(sidecar, roles=["tool"])
    assert [h["role"] for h in tools["hits"]] == ["tool"] and tools["hits"][0]["score"] is None
    late = await search(sidecar, after="2026-05-01T10:06:00Z", limit=50)
    assert late["hits"] and all(h["created_at"] >= "2026-05-01T10:06:00" for h in late["hits"])
    assert [h["created_at"] for h in late["hits"]] == sorted((h["created_at"] for h in late["hits"]), reverse=True)
    first = await search(sidecar, after="2026-05-01T10:06:00Z", temporal_intent="first", limit=50)
    assert [h["message_id"] for h in first["hits"]] == [h["message_id"] for h in reversed(late["hits"])]
    none = await search(sidecar, after="2030-01-01T00:00:00Z")
    assert none["hits"] == []


async def test_temporal_intent_orders_relevant_matches_by_time(sidecar: SidecarClient):
    plan = {
        1: "We deploy the api service on Fridays.",
        2: "Unrelated: lunch was good.",
        3: "The deploy of the api service failed twice.",
        4: "Deploy of the api service fixed and shipped.",
        5: "Nothing about that here.",
    }
    for i, text in plan.items():
        await sidecar.call("turn.capture", turn(i, user=text, assistant="noted"))
    ranked = await search(sidecar, query="api service deploy")
    assert {h["turn"] for h in ranked["hits"]} == {1, 3, 4}
    first = await search(sidecar, query="api service deploy", temporal_intent="first")
    assert [h["turn"] for h in first["hits"]] == [1, 3, 4] and "first" in first["note"]
    latest = await search(sidecar, query="api service deploy", temporal_intent="latest", limit=2)
    assert [h["turn"] for h in latest["hits"]] == [4, 3]


async def test_time_range_role_and_session_filters(sidecar: SidecarClient):
    for i in range(1, 5):
        await sidecar.call("turn.capture", turn(i, user=f"report {i} on the budget", assistant=f"budget reply {i}"))
    await sidecar.call("turn.capture", turn(1, session="other", user="budget in another session"))
    window = await search(sidecar, query="budget", after="2026-05-01T10:02:00Z", before="2026-05-01T10:04:00Z",
                          limit=50)
    assert {h["turn"] for h in window["hits"]} == {2, 3}
    assert {h["session"] for h in window["hits"]} == {"s1"}
    users = await search(sidecar, query="budget", roles=["user"], limit=50)
    assert users["hits"] and {h["role"] for h in users["hits"]} == {"user"}
    everywhere = await search(sidecar, query="budget", limit=50)
    assert {h["session"] for h in everywhere["hits"]} == {"s1", "other"}
    here = await search(sidecar, query="budget", scope="session", limit=50)
    assert {h["session"] for h in here["hits"]} == {"s1"}
    there = await search(sidecar, query="budget", session="other")
    assert [h["text"] for h in there["hits"]] == ["budget in another session"]
    with pytest.raises(RpcFailure) as err:
        await search(sidecar, query="budget", after="2026-05-02T00:00:00Z", before="2026-05-01T00:00:00Z")
    assert err.value.code == -32602 and "before" in err.value.message
    with pytest.raises(RpcFailure) as err:
        await search(sidecar, query="budget", after="2026-05-01T10:00:00")
    assert err.value.code == -32602 and "timezone" in err.value.message


async def test_dates_and_word_forms_match(sidecar: SidecarClient):
    await sidecar.call("turn.capture", turn(1, user="The contract was signed on 2023-05-08.", assistant="Filed."))
    await sidecar.call("turn.capture", turn(2, user="She was painting the fence.", assistant="Nice."))
    await sidecar.call("turn.capture", turn(3, user="Renewal is due in June 2024.", assistant="Noted."))
    may = await search(sidecar, query="May 2023")
    assert [h["turn"] for h in may["hits"]] == [1]
    assert [h["turn"] for h in (await search(sidecar, query="8 May 2023 contract"))["hits"]][:1] == [1]
    assert [h["turn"] for h in (await search(sidecar, query="who painted it"))["hits"]] == [2]
    assert [h["turn"] for h in (await search(sidecar, query="2024-06"))["hits"]] == [3]


async def test_a_query_naming_a_period_favours_messages_written_then(sidecar: SidecarClient):
    await sidecar.call("turn.capture", turn(1, user="We went hiking in the hills.", assistant="Lovely.",
                                            started_at="2023-05-20T10:00:00Z", ended_at="2023-05-20T10:01:00Z"))
    await sidecar.call("turn.capture", turn(2, user="We went hiking by the lake.", assistant="Great.",
                                            started_at="2023-07-02T10:00:00Z", ended_at="2023-07-02T10:01:00Z"))
    july = await search(sidecar, query="hiking in July")
    assert [h["turn"] for h in july["hits"]] == [2, 1]
    may = await search(sidecar, query="hiking in May 2023")
    assert [h["turn"] for h in may["hits"]] == [1, 2]


async def test_an_answer_after_a_matching_question_is_a_hit(sidecar: SidecarClient):
    await sidecar.call("turn.capture", turn(1, user="Which database do we use for the billing service?",
                                            assistant="Postgres 15, on the managed cluster."))
    await sidecar.call("turn.capture", turn(2, user="Thanks, noted.", assistant="You're welcome."))
    res = await search(sidecar, query="billing service database")
    assert [h["turn"] for h in res["hits"]] == [1, 1]
    question, answer = res["hits"]
    assert question["role"] == "user" and set(question["matched"]) == {"bill", "servic", "databas"}
    assert answer["text"] == "Postgres 15, on the managed cluster." and answer["matched"] == []
    assert answer["answers"] == question["message_id"]
    # A statement (no question mark) does not pull in the message after it.
    await sidecar.call("turn.capture", turn(3, user="The cache runs on Redis.", assistant="Understood."))
    cache = await search(sidecar, query="cache")
    assert [h["text"] for h in cache["hits"]] == ["The cache runs on Redis."]
