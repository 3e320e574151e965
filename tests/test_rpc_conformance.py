"""JSON-RPC conformance under any input: every request with an id gets exactly one strict-JSON reply, and the
sidecar keeps serving. Hand-written malformed frames per finding of the fuzzing run, then a hypothesis fuzzer.

Real sidecar process, real SQLite; synchronisation only on replies (no sleeps, no timing assertions).
"""

from __future__ import annotations

import asyncio
import json
import math
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from conftest import turn
from stratagate.rpc.peer import MAX_DEPTH, encode_line
from support.sidecar import SidecarClient

NULL = object()  # "the reply must carry id null"


def _no_constant(name: str) -> Any:
    raise ValueError(f"non-standard JSON constant {name}")


def strict(raw: bytes) -> Any:
    """Parse one reply line the way Node's JSON.parse would: UTF-8, no NaN/Infinity, no surrogate escapes."""
    text = raw.decode("utf-8")  # raises on invalid UTF-8 (a lone surrogate cannot be in valid UTF-8)
    return json.loads(text, parse_constant=_no_constant)


def _surrogates_paired(value: Any) -> bool:
    if isinstance(value, str):
        return not any(0xD800 <= ord(c) <= 0xDFFF for c in value)
    if isinstance(value, dict):
        return all(_surrogates_paired(k) and _surrogates_paired(v) for k, v in value.items())
    if isinstance(value, list):
        return all(_surrogates_paired(v) for v in value)
    return True


def assert_reply(message: Any, request_id: Any, code: int | None = None, fragment: str = "") -> None:
    """A conformant JSON-RPC 2.0 response object (error with ``code`` if given, else either kind)."""
    assert isinstance(message, dict), message
    assert message.get("jsonrpc") == "2.0"
    assert "id" in message
    assert message["id"] == (None if request_id is NULL else request_id)
    assert ("result" in message) != ("error" in message), message
    assert set(message) <= {"jsonrpc", "id", "result", "error"}
    assert _surrogates_paired(message)
    if "error" in message:
        err = message["error"]
        assert isinstance(err["code"], int) and not isinstance(err["code"], bool)
        assert isinstance(err["message"], str)
        assert set(err) <= {"code", "message", "data"}
    if code is not None:
        assert "error" in message, message
        assert message["error"]["code"] == code, message
        assert fragment in message["error"]["message"], message["error"]["message"]


def replies(client: SidecarClient, start: int = 0) -> list[Any]:
    """Every reply line since ``start`` (host requests and notifications left out), strictly parsed."""
    out = []
    for raw in client.raw_lines[start:]:
        message = strict(raw)
        if isinstance(message, dict) and "method" in message:
            continue
        out.append(message)
    return out


async def send(client: SidecarClient, line: bytes, request_id: Any) -> Any:
    """Send one raw line and return the reply for ``request_id`` (NULL: the first reply with id null)."""
    start = len(client.raw_lines)
    await client.send_line(line)
    wanted = None if request_id is NULL else request_id

    def found() -> Any:
        for message in replies(client, start):
            if isinstance(message, list):
                if request_id is NULL:
                    return message
                continue  # a late batch reply to an earlier frame
            if message.get("id") == wanted and (request_id is NULL or wanted is not None):
                return message
        return None

    return await client.wait_for(found)


async def still_serving(client: SidecarClient) -> None:
    assert (await client.call("system.ping"))["pong"] is True


def assert_exactly_one_reply_each(client: SidecarClient, ours: Callable[[Any], bool] = lambda _id: True) -> None:
    """No id is answered twice (``ours`` picks the ids this test made unique)."""
    seen: dict[Any, int] = {}
    for message in replies(client):
        for item in message if isinstance(message, list) else [message]:
            if item.get("id") is not None and ours(item["id"]):
                seen[json.dumps(item["id"])] = seen.get(json.dumps(item["id"]), 0) + 1
    assert all(n == 1 for n in seen.values()), {k: n for k, n in seen.items() if n != 1}


def frame(request_id: Any, method: str, params: Any = None, *, id_json: str | None = None) -> bytes:
    head = '{"jsonrpc":"2.0","id":' + (id_json if id_json is not None else json.dumps(request_id))
    body = ',"method":' + json.dumps(method)
    if params is not None:
        body += ',"params":' + (params if isinstance(params, str) else json.dumps(params))
    return (head + body + "}").encode()


# --- 1. lone surrogates in anything echoed --------------------------------------------------------------------------


async def test_lone_surrogates_in_echoed_fields_always_get_an_encodable_reply(sidecar: SidecarClient):
    # An id that is not valid Unicode is not a valid id: answered with id null.
    reply = await send(sidecar, frame(None, "system.ping", id_json='"\\ud800"'), NULL)
    assert_reply(reply, NULL, -32600, '"id"')
    # A method name the error message echoes.
    reply = await send(sidecar, frame(11, "no.such.\ud800method"), 11)
    assert_reply(reply, 11, -32601, "unknown method")
    # Params that validation errors would echo.
    reply = await send(sidecar, frame(12, "tools.call", {"namespace": "\udc00", "session": "s",
                                                          "name": "memory_get_blocks"}), 12)
    assert_reply(reply, 12, -32602, "namespace")
    reply = await send(sidecar, frame(13, "turn.capture", turn(1, user="half an emoji \ud83d")), 13)
    assert_reply(reply, 13, -32602, "user")
    reply = await send(sidecar, frame(14, "tools.call", {"namespace": "proj", "session": "s1",
                                                          "name": "memory_search_raw",
                                                          "arguments": {"query": "x\udfff"}}), 14)
    assert_reply(reply, 14, -32602, "arguments.query")
    reply = await send(sidecar, frame(15, "system.ping", {"\ud800key": 1}), 15)
    assert_reply(reply, 15, -32602, "surrogate")
    await still_serving(sidecar)
    assert_exactly_one_reply_each(sidecar)


# --- 2. strict JSON in and out --------------------------------------------------------------------------------------


@pytest.mark.parametrize("number", ["NaN", "Infinity", "-Infinity", "1e400", "-1e400"])
async def test_non_finite_numbers_are_a_parse_error(sidecar: SidecarClient, number: str):
    reply = await send(sidecar, frame(21, "system.ping", '{"x":' + number + "}"), 21)
    assert_reply(reply, 21, -32700, "not valid JSON")  # the id is a top-level member before the bad value
    reply = await send(sidecar, frame(None, "system.ping", id_json=number), NULL)
    assert_reply(reply, NULL, -32700)
    await still_serving(sidecar)
    assert_exactly_one_reply_each(sidecar)


def test_a_result_that_cannot_be_encoded_becomes_an_internal_error():
    line = encode_line({"jsonrpc": "2.0", "id": 7, "result": {"score": math.nan}})
    reply = strict(line)
    assert_reply(reply, 7, -32603, "cannot be encoded")
    line = encode_line({"jsonrpc": "2.0", "id": 8, "result": {"x": object()}})
    assert_reply(strict(line), 8, -32603, "cannot be encoded")
    line = encode_line([{"jsonrpc": "2.0", "id": 9, "result": math.inf}, {"jsonrpc": "2.0", "id": 10, "result": 1}])
    batch = strict(line)
    assert_reply(batch[0], 9, -32603)
    assert batch[1]["result"] == 1
    assert strict(encode_line({"jsonrpc": "2.0", "id": 1, "result": "a\ud800b"}))["result"] == "a\ufffdb"


# --- 3. depth and integer limits ------------------------------------------------------------------------------------


async def test_deep_nesting_and_huge_integers_are_parse_errors_with_the_id_recovered(sidecar: SidecarClient):
    deep = "[" * 1000 + "]" * 1000
    reply = await send(sidecar, frame(31, "system.ping", '{"a":' + deep + "}"), 31)
    assert_reply(reply, 31, -32700, f"limit is {MAX_DEPTH}")
    reply = await send(sidecar, deep.encode(), NULL)
    assert_reply(reply, NULL, -32700, "deep")
    reply = await send(sidecar, ('{"a":' * 5000 + "1" + "}" * 5000).encode(), NULL)
    assert_reply(reply, NULL, -32700)
    # Brackets inside strings do not count.
    reply = await send(sidecar, frame(32, "no.such", {"s": "[" * 5000}), 32)
    assert_reply(reply, 32, -32601)
    # Nesting within the limit parses (and is then refused by the method's params model).
    nested = "[" * (MAX_DEPTH - 2) + "]" * (MAX_DEPTH - 2)
    reply = await send(sidecar, frame(33, "system.ping", '{"a":' + nested + "}"), 33)
    assert_reply(reply, 33, -32602, "a")
    reply = await send(sidecar, frame(34, "system.ping", '{"n":' + "9" * 4300 + "}"), 34)
    assert_reply(reply, 34, -32700, "digit")
    reply = await send(sidecar, frame(None, "system.ping", id_json="1" * 5000), NULL)
    assert_reply(reply, NULL, -32700)
    await still_serving(sidecar)
    assert_exactly_one_reply_each(sidecar)


# --- 4. batches -----------------------------------------------------------------------------------------------------


async def test_batch_items_that_are_not_requests_get_their_own_invalid_request(sidecar: SidecarClient):
    reply = await send(sidecar, b'[[{"jsonrpc":"2.0","id":41,"method":"system.ping"}]]', NULL)
    assert isinstance(reply, list) and len(reply) == 1
    assert_reply(reply[0], NULL, -32600, "list")
    reply = await send(sidecar, b'[1,{"jsonrpc":"2.0","id":42,"method":"system.ping"},[],"x"]', NULL)
    assert isinstance(reply, list) and len(reply) == 4
    assert [r["id"] for r in reply].count(42) == 1
    for item in reply:
        if item["id"] == 42:
            assert_reply(item, 42)
            assert item["result"]["pong"] is True
        else:
            assert_reply(item, NULL, -32600)
    reply = await send(sidecar, b"[]", NULL)
    assert_reply(reply, NULL, -32600, "empty batch")  # one error object, not an array
    reply = await send(sidecar, b'[{"jsonrpc":"2.0","id":"\\udfff","method":"system.ping"}]', NULL)
    assert_reply(reply[0], NULL, -32600, '"id"')
    await still_serving(sidecar)
    assert_exactly_one_reply_each(sidecar)


# --- 5. client mistakes are -32602 naming the field -----------------------------------------------------------------


@pytest.mark.parametrize(
    ("method", "params", "fragment"),
    [
        ("turn.capture", turn(1, started_at="9999-99-99T00:00:00Z"), "started_at"),
        ("turn.capture", turn(1, started_at="9999-12-31T23:59:59-05:00"), "started_at"),
        ("turn.capture", turn(1, ended_at="0001-01-01T00:00:00+01:00"), "ended_at"),
        ("turn.capture", turn(1, started_at="10000-01-01T00:00:00Z"), "started_at"),
        ("turn.capture", turn(1, started_at="0000-01-01T00:00:00Z"), "started_at"),
        ("import.run", {"namespace": "proj", "path": "/tmp/a\u0000b"}, "path"),
        ("turn.capture", turn(1, assistant="\udc80"), "assistant"),
        ("turn.capture", turn(1, tools=[{"name": "t", "result": {"out": "\ud800"}}]), "tools.0.result"),
        ("activation.render", {"namespace": "proj", "session": "s1", "query": "\ud800"}, "query"),
        ("namespace.resolve", {"cwd": "\ud800"}, "cwd"),
    ],
)
async def test_out_of_range_values_nuls_and_surrogates_are_invalid_params(sidecar: SidecarClient, method, params,
                                                                          fragment):
    reply = await send(sidecar, frame(51, method, params), 51)
    assert_reply(reply, 51, -32602, fragment)
    await still_serving(sidecar)
    assert_exactly_one_reply_each(sidecar)


# --- 6. storage full ------------------------------------------------------------------------------------------------


async def test_retrieval_still_answers_on_a_full_database_and_writes_say_storage_full(tmp_path: Path):
    client = await SidecarClient.start(tmp_path / "m.db", env={"STRATAGATE_DB_MAX_MB": "1"})
    try:
        stored = 0
        for i in range(1, 400):
            reply = await send(client, frame(1000 + i, "turn.capture",
                                             turn(i, user=f"turn {i} " + "lorem ipsum dolor " * 200)), 1000 + i)
            if "error" in reply:
                assert_reply(reply, 1000 + i, -32010, "full")
                break
            stored += 1
        assert stored > 0
        # Each search writes a batch row; once even that does not fit, the search answers without a batch.
        unbatched = None
        for i in range(3000):
            reply = await send(client, frame(5000 + i, "tools.call", {
                "namespace": "proj", "session": "s1", "name": "memory_search_raw",
                "arguments": {"query": "lorem", "limit": 50}}), 5000 + i)
            assert_reply(reply, 5000 + i)
            assert "error" not in reply, reply  # never -32603 (nor any error) on a full disk
            if reply["result"]["batch_id"] is None:
                unbatched = reply["result"]
                break
        assert unbatched is not None
        assert len(unbatched["hits"]) == min(50, stored)
        assert "storage is full" in unbatched["note"]
        assert unbatched["evidence_refs"]
        # Writes are refused with -32010 (the same adapter everywhere), and the sidecar keeps serving.
        big = turn(9001, user="big " + "lorem ipsum dolor " * 400)
        reply = await send(client, frame(9001, "turn.capture", big), 9001)
        assert_reply(reply, 9001, -32010, "full")
        render = await client.call("activation.render", {"namespace": "proj", "session": "s2", "query": "lorem"})
        assert isinstance(render["text"], str)
        await still_serving(client)
        assert_exactly_one_reply_each(client)
    finally:
        await client.close()


# --- 7. backpressure ------------------------------------------------------------------------------------------------


@pytest.mark.slow
async def test_a_flood_of_pipelined_searches_keeps_memory_bounded(tmp_path: Path):
    import psutil

    # Zero-model mode and a settled pipeline: the measurement is of the flood, not of the background jobs of the
    # captured turns (a dense model loading for their embeddings in the middle of it is ~100 MB of RSS).
    client = await SidecarClient.start(tmp_path / "m.db", env={"STRATAGATE_MODEL_ROUTE": "none"}, process=True)
    try:
        for i in range(1, 21):
            await client.call("turn.capture", turn(i, user=f"flood {i} lorem ipsum " * 20))
        await client.settled(timeout=300)
        proc = psutil.Process(client.proc.pid)
        await client.tool("proj", "s1", "memory_search_raw", {"query": "lorem", "limit": 20})  # warm up
        before = proc.memory_info().rss
        peak = before
        futures = []
        params = {"namespace": "proj", "session": "s1", "name": "memory_search_raw",
                  "arguments": {"query": "lorem ipsum", "limit": 20}}
        for i in range(5000):
            futures.append(await client.request("tools.call", params))
            if i % 250 == 0:
                peak = max(peak, proc.memory_info().rss)
        done = 0
        for future in futures:
            reply = await asyncio.wait_for(future, 600)
            assert "result" in reply, reply
            done += 1
            if done % 250 == 0:
                peak = max(peak, proc.memory_info().rss)
        growth_mb = (peak - before) / 2**20
        print(f"RSS growth during a flood of 5000 pipelined searches: {growth_mb:.1f} MB")
        assert growth_mb < 150
        await still_serving(client)
    finally:
        await client.close()


# --- 8. bounded work per request ------------------------------------------------------------------------------------


async def test_a_huge_activation_query_is_answered(sidecar: SidecarClient):
    for i in range(1, 4):
        await sidecar.call("turn.capture", turn(i, session="s0"))
    await sidecar.call("turn.capture", turn(4, session="s1"))
    query = " ".join(f"topic{i % 50} word{i}" for i in range(20_000))[:200_000]
    reply = await send(sidecar, frame(81, "activation.render", {"namespace": "proj", "session": "s1",
                                                                "query": query}), 81)
    assert_reply(reply, 81)
    assert isinstance(reply["result"]["text"], str)
    reply = await send(sidecar, frame(82, "activation.render", {"namespace": "proj", "session": "s1",
                                                                "query": "x" * 200_001}), 82)
    assert_reply(reply, 82, -32602, "query")
    await still_serving(sidecar)


# --- fuzzing --------------------------------------------------------------------------------------------------------

METHODS = [
    "system.ping", "system.info", "turn.capture", "namespace.resolve", "activation.render", "tools.list",
    "tools.call", "jobs.list", "jobs.retry", "import.list", "import.get", "memory.weights",
    "evidence.open_batches", "no.such", "", "\ud800",
]  # never system.shutdown or erasing methods: the sidecar must stay up across examples
TEXT = st.text(max_size=12) | st.sampled_from(["\ud800", "a\udfff", "\x00", "proj", "s1", "memory_search_raw"])
SCALARS = (
    st.none() | st.booleans() | st.integers(min_value=-(10**30), max_value=10**30) | TEXT
    | st.floats(allow_nan=True, allow_infinity=True)
)
JSONISH = st.recursive(SCALARS, lambda inner: st.lists(inner, max_size=4) | st.dictionaries(TEXT, inner, max_size=4),
                       max_leaves=12)
FINITE = st.recursive(
    st.none() | st.booleans() | st.integers(min_value=-(10**30), max_value=10**30) | TEXT | st.floats(allow_nan=False,
                                                                                                      allow_infinity=False),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(TEXT, inner, max_size=4), max_leaves=12)
"""Any JSON value (no NaN/Infinity: a line holding one is a parse error as a whole)."""
_ENVELOPE = {"jsonrpc", "method", "params", "id"}
RID = "@@rid@@"  # replaced by a unique id per request object


def _valid_notification(item: Any) -> bool:
    """JSON-RPC 2.0, section 4.1: a well-formed request without an id, the only item that gets no reply."""
    if not isinstance(item, dict) or "id" in item or set(item) - {"jsonrpc", "method", "params"}:
        return False
    method = item.get("method")
    return (item.get("jsonrpc") == "2.0" and isinstance(method, str) and method != ""
            and ("params" not in item or isinstance(item["params"], dict | list)))


@st.composite
def envelopes(draw: st.DrawFn, request_id: Any = None) -> dict[str, Any]:
    """A request object whose every member may be any JSON value, nested (or a valid one); ``request_id`` if given."""
    request: dict[str, Any] = {}
    if draw(st.integers(0, 4)):
        request["jsonrpc"] = draw(st.sampled_from(["2.0", "2.0", "2.0", "1.0"]) | FINITE)
    if draw(st.integers(0, 5)):
        request["method"] = draw(st.sampled_from(METHODS) | FINITE)
    if draw(st.booleans()):
        request["params"] = draw(FINITE)
    if request_id is not None:
        request["id"] = request_id
    elif draw(st.booleans()):
        request["id"] = draw(FINITE)
    if draw(st.integers(0, 6)) == 0:
        request[draw(TEXT.filter(lambda k: k not in {*_ENVELOPE, "result", "error"}))] = draw(FINITE)
    return request


@st.composite
def any_member_frames(draw: st.DrawFn) -> tuple[bytes, int]:
    """(line, number of replies a conformant server sends): a request or a batch of mixed items, where the method,
    params, id and version are values of any JSON type. Batch items that are request objects carry RID markers."""
    if draw(st.booleans()):
        return json.dumps(draw(envelopes(request_id=RID))).encode(), 1
    items = draw(st.lists(envelopes(request_id=RID) | envelopes() | FINITE, min_size=1, max_size=5))
    return json.dumps(items).encode(), sum(not _valid_notification(item) for item in items)


@st.composite
def frames(draw: st.DrawFn) -> tuple[bytes, str]:
    """(line, id kind): kind 'valid' means the runner gives the request a unique valid id and expects its reply."""
    kind = draw(st.sampled_from(["bytes", "request", "request", "request", "batch", "deep", "value"]))
    if kind == "bytes":
        return draw(st.binary(max_size=200)).replace(b"\n", b" "), "none"
    if kind == "value":
        return json.dumps(draw(JSONISH)).encode(), "none"
    if kind == "deep":
        n = draw(st.integers(min_value=MAX_DEPTH - 2, max_value=2000))
        return ('{"jsonrpc":"2.0","id":ID,"method":"system.ping","params":{"a":' + "[" * n + "]" * n + "}}").encode(), \
            "valid"
    request: dict[str, Any] = {}
    version = draw(st.sampled_from(["2.0", "2.0", "2.0", "1.0", None]))
    if version is not None:
        request["jsonrpc"] = version
    request["method"] = draw(st.sampled_from(METHODS) | TEXT)
    if draw(st.booleans()):
        request["params"] = draw(st.dictionaries(TEXT, JSONISH, max_size=5) | JSONISH)
    if draw(st.booleans()):
        request["params"] = {"namespace": draw(TEXT), "session": draw(TEXT), "name": draw(TEXT),
                             "arguments": draw(st.dictionaries(TEXT, JSONISH, max_size=3))}
    id_kind = draw(st.sampled_from(["valid", "valid", "valid", "absent", "bad"]))
    if id_kind == "bad":
        request["id"] = draw(JSONISH)
    if kind == "batch":
        body = json.dumps([request, draw(JSONISH)], allow_nan=True)
        return body.encode(), "none"
    body = json.dumps(request, allow_nan=True)
    if id_kind == "valid":  # the id first, a top-level member: recoverable even when the rest is not valid JSON
        body = '{"id":ID,' + body[1:] if body != "{}" else '{"id":ID}'
    return body.encode(), "valid" if id_kind == "valid" else "none"


async def test_fuzzed_frames_always_get_conformant_replies(tmp_path: Path):
    client = await SidecarClient.start(tmp_path / "m.db")
    loop = asyncio.get_running_loop()
    counter = [0]
    try:
        await client.call("turn.capture", turn(1))

        async def exchange(line: bytes, id_kind: str) -> None:
            counter[0] += 1
            n = counter[0]
            request_id: Any = f"fz-{n}" if n % 2 else 10**6 + n
            start = len(client.raw_lines)
            if id_kind == "valid":
                line = line.replace(b"ID", json.dumps(request_id).encode(), 1)
                reply = await send(client, line, request_id)
                assert_reply(reply, request_id)
            else:
                await client.send_line(line)
            await still_serving(client)  # a barrier: everything before it was read
            for message in replies(client, start):  # every line is strict JSON and a conformant reply
                for item in message if isinstance(message, list) else [message]:
                    assert_reply(item, item.get("id") if item.get("id") is not None else NULL)
            if id_kind == "valid":
                ids = [m.get("id") for m in replies(client, start) if isinstance(m, dict)]
                assert ids.count(request_id) == 1

        @settings(max_examples=200, deadline=None, database=None,
                  suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
        @given(frames())
        def check(example: tuple[bytes, str]) -> None:
            try:
                asyncio.run_coroutine_threadsafe(exchange(*example), loop).result(timeout=120)
            except TimeoutError as exc:
                tail = b"".join(client.raw_lines[-5:]).decode(errors="replace")[-3000:]
                raise AssertionError(f"no reply; last lines:\n{tail}\nstderr:\n{''.join(client.stderr_lines[-30:])}") \
                    from exc

        await asyncio.to_thread(check)
        assert client.proc.returncode is None
        # Random ids may repeat between examples; the ids the runner gave are unique and each answered once.
        def ours(rid: Any) -> bool:
            return (isinstance(rid, str) and rid.startswith("fz-")) or (isinstance(rid, int) and 10**6 < rid < 10**7)

        assert_exactly_one_reply_each(client, ours)
    finally:
        await client.close()


async def test_any_json_value_as_a_member_or_batch_item_gets_exactly_one_conformant_reply(tmp_path: Path):
    """A method (or version, params, id) of any JSON type, nested, alone or in a batch of mixed items: one reply per
    item that is not a valid notification, -32600 with the request's own id for every malformed envelope."""
    client = await SidecarClient.start(tmp_path / "m.db", process=True)  # hypothesis draws in another thread
    loop = asyncio.get_running_loop()
    counter = [0]
    given_ids: set[str] = set()

    def with_ids(line: bytes) -> tuple[bytes, list[Any]]:
        ids: list[Any] = []
        marker = json.dumps(RID).encode()
        while marker in line:
            counter[0] += 1
            ids.append(f"mx-{counter[0]}" if counter[0] % 2 else 2 * 10**7 + counter[0])
            line = line.replace(marker, json.dumps(ids[-1]).encode(), 1)
            given_ids.add(json.dumps(ids[-1]))
        return line, ids

    async def exchange(line: bytes, expected: int) -> None:
        line, ids = with_ids(line)
        start = len(client.raw_lines)
        if not line.startswith(b"["):
            reply = await send(client, line, ids[0])
            assert_reply(reply, ids[0])
            request = json.loads(line)
            if not _valid_notification({k: v for k, v in request.items() if k != "id"}):
                assert_reply(reply, ids[0], -32600, "not a valid JSON-RPC 2.0 request")
        else:
            await client.send_line(line)
        if line.startswith(b"[") and expected:
            batch = await client.wait_for(
                lambda: next((m for m in replies(client, start) if isinstance(m, list)), None))
            assert len(batch) == expected, (line, batch)
            for item in batch:
                assert_reply(item, NULL if item.get("id") is None else item["id"])
            answered = [json.dumps(item["id"]) for item in batch]
            assert all(answered.count(json.dumps(rid)) == 1 for rid in ids), (line, batch)
        await still_serving(client)  # a barrier: everything before it was read
        if line.startswith(b"[") and not expected:
            assert not any(isinstance(m, list) for m in replies(client, start)), line

    @settings(max_examples=150, deadline=None, database=None,
              suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
    @given(any_member_frames())
    def check(example: tuple[bytes, int]) -> None:
        try:
            asyncio.run_coroutine_threadsafe(exchange(*example), loop).result(timeout=120)
        except TimeoutError as exc:
            raise AssertionError(f"no reply to {example[0][:500]!r}; stderr:\n{''.join(client.stderr_lines[-30:])}") \
                from exc

    try:
        await client.call("turn.capture", turn(1))
        for method in ([], ["turn.capture"], {}, {"a": [1]}, 1.5, True, None):  # the findings, as written
            reply = await send(client, json.dumps({"jsonrpc": "2.0", "id": 7, "method": method}).encode(), 7)
            assert_reply(reply, 7, -32600, '"method"')
        await asyncio.to_thread(check)
        assert_exactly_one_reply_each(client, lambda rid: json.dumps(rid) in given_ids)
    finally:
        await client.close()


# --- the one error adapter ------------------------------------------------------------------------------------------


def test_the_error_adapter_maps_client_mistakes_and_full_storage():
    import sqlite3

    from stratagate.protocol.errors import as_rpc_error
    from stratagate.storage.db import StorageError

    full = sqlite3.OperationalError("database or disk is full")
    assert as_rpc_error(full).code == -32010
    try:
        raise StorageError(f"commit failed, nothing was written: {full}") from full
    except StorageError as exc:
        assert as_rpc_error(exc).code == -32010  # a failed COMMIT on a full disk, as the retrieval batch hits it
        assert "storage full" in as_rpc_error(exc).message
    assert as_rpc_error(sqlite3.OperationalError("disk I/O error")).code == -32010
    assert as_rpc_error(ValueError("embedded null byte")).code == -32602
    assert as_rpc_error(OverflowError("date value out of range")).code == -32602
    try:
        "\ud800".encode()
    except UnicodeEncodeError as exc:
        assert as_rpc_error(exc).code == -32602
    assert as_rpc_error(KeyError("bug")).code == -32603
