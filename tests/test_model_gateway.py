"""Model gateway against a real HTTP server speaking the OpenAI wire format, through the real openai client."""

from __future__ import annotations

import asyncio
import json
import os
import string
import subprocess
import sys
import threading
import time
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import openai
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import BaseModel, Field

from stratagate.config import Settings
from stratagate.model import (
    ChatMessage,
    Completion,
    CompletionRequest,
    HostRequestError,
    HostRoute,
    ModelError,
    ModelGateway,
    OpenAIRoute,
    ToolSpec,
    build_gateway,
    extract_json_candidates,
    tool_parameters,
)
from stratagate.redact import redact
from support.model_server import (
    ScriptedModelServer,
    auto_schema_tool_call,
    auto_tool_call,
    delay,
    example_from_schema,
    http_error,
    non_streaming,
    stream_break,
    text,
    tool_call,
    truncated,
)

TOOL = "stratagate_summarize_block"
API_KEY = "sk-" + "T" * 40


class Detail(BaseModel):
    topic: str
    weight: float = Field(ge=0)


class Summary(BaseModel):
    """A block summary."""

    l1_summary: str
    keywords: list[str]
    detail: Detail
    open_question: str | None = None


class Node(BaseModel):
    name: str
    children: list[Node] = Field(default_factory=list)


VALID: dict[str, Any] = {
    "l1_summary": "We fixed the build.",
    "keywords": ["build"],
    "detail": {"topic": "ci", "weight": 1},
}


@pytest.fixture
def server() -> Iterator[ScriptedModelServer]:
    with ScriptedModelServer() as srv:
        yield srv


@pytest.fixture
async def route(server: ScriptedModelServer) -> AsyncIterator[OpenAIRoute]:
    r = OpenAIRoute(server.base_url, API_KEY, "scripted-model", timeout=5.0)
    yield r
    await r.aclose()


@pytest.fixture
def gateway(route: OpenAIRoute) -> ModelGateway:
    return ModelGateway(route, concurrency=2)


async def summarize(gw: ModelGateway, max_tokens: int | None = 1000) -> Summary:
    return await gw.structured(
        system="You summarise.",
        payload="turns...",
        output_model=Summary,
        tool_name=TOOL,
        tool_description="Record the block summary.",
        max_tokens=max_tokens,
    )


# ----------------------------------------------------------------------------------------- happy paths


async def test_forced_tool_call_streaming(server: ScriptedModelServer, gateway: ModelGateway) -> None:
    server.push(tool_call(TOOL, VALID))
    result = await summarize(gateway)
    assert result == Summary.model_validate(VALID)

    [body] = server.requests
    assert body["stream"] is True
    assert body["stream_options"] == {"include_usage": True}
    assert body["model"] == "scripted-model"
    assert body["max_tokens"] == 1000
    assert body["tool_choice"] == {"type": "function", "function": {"name": TOOL}}
    [tool] = body["tools"]
    params = tool["function"]["parameters"]
    assert tool["function"]["name"] == TOOL
    assert params["type"] == "object"
    assert set(params["required"]) == {"l1_summary", "keywords", "detail"}
    assert params["properties"]["detail"]["properties"]["weight"]["minimum"] == 0  # $ref inlined
    assert "$ref" not in json.dumps(params)
    assert [m["role"] for m in body["messages"]] == ["system", "user"]
    assert server.headers[0]["authorization"] == f"Bearer {API_KEY}"


async def test_server_ignoring_stream_flag_is_handled(server: ScriptedModelServer, gateway: ModelGateway) -> None:
    server.push(non_streaming(tool_call(TOOL, VALID)))
    assert await summarize(gateway) == Summary.model_validate(VALID)


async def test_route_returns_raw_completion(server: ScriptedModelServer, route: OpenAIRoute) -> None:
    server.push(text("hello there"))
    done = await route.complete(CompletionRequest(messages=[ChatMessage(role="user", content="hi")], max_tokens=50))
    assert done == Completion(text="hello there", tool_calls=[], finish_reason="stop", model="scripted-model")
    assert "tools" not in server.requests[0]
    assert route.describe() == f"openai:{server.base_url} model=scripted-model"


@pytest.mark.parametrize(
    "reply",
    [
        json.dumps(VALID),
        "```json\n" + json.dumps(VALID, indent=2) + "\n```",
        "\ufeff" + json.dumps(VALID),
        'Sure {not json}! Draft: {"l1_summary": 1}. Final answer:\n' + json.dumps(VALID) + "\nHope that {helps}.",
        json.dumps({"name": TOOL, "arguments": VALID}),
    ],
    ids=["bare", "fenced", "bom", "prose", "written-out-call"],
)
async def test_text_json_fallback(server: ScriptedModelServer, gateway: ModelGateway, reply: str) -> None:
    server.push(text(reply))
    assert await summarize(gateway) == Summary.model_validate(VALID)
    assert len(server.requests) == 1


# ----------------------------------------------------------------------------------------- corrective retry


@pytest.mark.parametrize(
    ("bad", "expected_problem"),
    [
        ('{"l1_summary": "x", "keywords": [}', "not valid JSON"),
        (json.dumps({"keywords": [], "detail": {"topic": "t", "weight": 0}}), "field l1_summary: Field required"),
        (json.dumps({**VALID, "detail": {"topic": "t", "weight": -1}}), "field detail.weight"),
    ],
    ids=["invalid-json", "missing-field", "constraint"],
)
async def test_invalid_then_valid_retries_once_with_correction(
    server: ScriptedModelServer, gateway: ModelGateway, bad: str, expected_problem: str
) -> None:
    server.push(tool_call(TOOL, bad), tool_call(TOOL, VALID))
    assert await summarize(gateway) == Summary.model_validate(VALID)

    first, second = server.requests
    assert second["max_tokens"] == first["max_tokens"] == 1000
    assert second["tool_choice"] == first["tool_choice"]
    *_, assistant, correction = second["messages"]
    assert second["messages"][:2] == first["messages"]
    assert assistant["role"] == "assistant" and bad in assistant["content"]
    assert correction["role"] == "user"
    assert expected_problem in correction["content"]
    assert f"Call the {TOOL} tool exactly once" in correction["content"]


async def test_two_invalid_answers_raise_invalid_output(server: ScriptedModelServer, gateway: ModelGateway) -> None:
    server.push(tool_call(TOOL, {"l1_summary": "only this"}), text("I cannot do that, my key is " + API_KEY))
    with pytest.raises(ModelError) as info:
        await summarize(gateway)
    err = info.value
    assert err.kind == "invalid_output"
    assert err.retryable
    assert str(err).startswith(f"model output was not a valid {TOOL} call:")
    assert "I cannot do that" in err.preview
    assert API_KEY not in err.preview and API_KEY not in str(err)
    assert len(err.preview) <= 500
    assert len(server.requests) == 2


async def test_truncated_then_valid_doubles_max_tokens(server: ScriptedModelServer, gateway: ModelGateway) -> None:
    server.push(truncated('{"l1_summary": "a very long'), tool_call(TOOL, VALID))
    assert await summarize(gateway, max_tokens=700) == Summary.model_validate(VALID)
    first, second = server.requests
    assert (first["max_tokens"], second["max_tokens"]) == (700, 1400)
    assert "cut off at max_tokens (700); answer more briefly" in second["messages"][-1]["content"]


async def test_truncated_retry_is_capped_and_second_truncation_raises(
    server: ScriptedModelServer, gateway: ModelGateway
) -> None:
    server.push(truncated('{"l1_summary": "'), truncated("The summary is", as_text=True))
    with pytest.raises(ModelError) as info:
        await summarize(gateway, max_tokens=10_000)
    assert info.value.kind == "truncated" and info.value.retryable
    assert [r["max_tokens"] for r in server.requests] == [10_000, 16384]


# ----------------------------------------------------------------------------------------- route errors


@pytest.mark.parametrize(
    ("status", "retryable"),
    [(500, True), (503, True), (429, True), (408, True), (400, False), (401, False), (404, False)],
)
async def test_http_errors_map_without_hidden_retries(
    server: ScriptedModelServer, gateway: ModelGateway, status: int, retryable: bool
) -> None:
    server.push(http_error(status, f"upstream said no (key {API_KEY})"))
    with pytest.raises(ModelError) as info:
        await summarize(gateway)
    err = info.value
    assert (err.kind, err.retryable) == ("http", retryable)
    assert str(err).startswith(f"model returned HTTP {status} from {server.base_url}: upstream said no")
    assert API_KEY not in str(err) and API_KEY not in err.preview
    assert len(server.requests) == 1  # max_retries=0: the job queue owns retries


async def test_timeout_is_prompt(server: ScriptedModelServer) -> None:
    route = OpenAIRoute(server.base_url, None, "scripted-model", timeout=0.3)
    server.push(delay(60, tool_call(TOOL, VALID)))
    started = time.monotonic()
    with pytest.raises(ModelError) as info:
        await summarize(ModelGateway(route, 1))
    assert info.value.kind == "timeout" and info.value.retryable
    assert time.monotonic() - started < 5
    assert server.headers[0]["authorization"] == "Bearer not-needed"
    await route.aclose()


async def test_stream_break_is_transport_error(server: ScriptedModelServer, gateway: ModelGateway) -> None:
    server.push(stream_break())
    with pytest.raises(ModelError) as info:
        await summarize(gateway)
    assert info.value.kind == "transport" and info.value.retryable
    assert len(server.requests) == 1


async def test_connection_refused_is_transport_error() -> None:
    with ScriptedModelServer() as srv:
        url = srv.base_url  # a port that was just released: nothing listens there now
    route = OpenAIRoute(url, None, "m", timeout=5)
    with pytest.raises(ModelError) as info:
        await route.complete(CompletionRequest(messages=[ChatMessage(role="user", content="x")], max_tokens=10))
    assert info.value.kind == "transport"
    await route.aclose()


async def test_concurrency_bound(server: ScriptedModelServer, route: OpenAIRoute) -> None:
    gw = ModelGateway(route, concurrency=2)
    release = threading.Event()
    server.push(*[delay(30, tool_call(TOOL, VALID), until=release) for _ in range(5)])
    tasks = [asyncio.create_task(summarize(gw)) for _ in range(5)]
    try:
        await asyncio.to_thread(server.wait_for_in_flight, 2, 5.0)
        # Negative check: a third request must not arrive while two are held.
        with pytest.raises(TimeoutError):
            await asyncio.to_thread(server.wait_for_requests, 3, 0.3)
        assert server.in_flight == 2
    finally:
        release.set()
    results = await asyncio.gather(*tasks)
    assert len(results) == 5 and all(r.l1_summary == VALID["l1_summary"] for r in results)
    assert server.max_in_flight == 2
    assert len(server.requests) == 5


async def test_models_endpoint(server: ScriptedModelServer) -> None:
    client = openai.AsyncOpenAI(base_url=server.base_url, api_key="x", max_retries=0)
    models = await client.models.list()
    assert [m.id for m in models.data] == ["scripted-model"]
    await client.close()


# ----------------------------------------------------------------------------------------- host route


class FakePeer:
    """In-process stand-in for the sidecar's JSON-RPC peer."""

    def __init__(self, answer: Any = None, error: BaseException | None = None, hang: bool = False) -> None:
        self.answer, self.error, self.hang = answer, error, hang
        self.calls: list[tuple[str, dict[str, Any], float]] = []

    async def request(self, method: str, params: dict[str, Any], timeout: float) -> Any:  # noqa: ASYNC109
        self.calls.append((method, params, timeout))
        if self.hang:
            await asyncio.Event().wait()
        if self.error is not None:
            raise self.error
        return self.answer


async def test_host_route_structured() -> None:
    peer = FakePeer(
        {"text": "", "tool_calls": [{"name": TOOL, "arguments": json.dumps(VALID)}], "finish_reason": "tool_calls"}
    )
    gw = ModelGateway(HostRoute(peer, timeout=7), concurrency=1)
    assert await summarize(gw) == Summary.model_validate(VALID)
    [(method, params, timeout)] = peer.calls
    assert (method, timeout) == ("host.llm.complete", 7)
    assert params["purpose"] == "stratagate"
    assert params["tool"]["name"] == TOOL and params["max_tokens"] == 1000
    assert [m["role"] for m in params["messages"]] == ["system", "user"]
    assert gw.describe() == "host:host.llm.complete"


async def test_host_route_accepts_decoded_arguments() -> None:
    peer = FakePeer({"tool_calls": [{"name": TOOL, "arguments": VALID}], "finish_reason": "stop", "model": "h"})
    assert await summarize(ModelGateway(HostRoute(peer, timeout=1), 1)) == Summary.model_validate(VALID)


@pytest.mark.parametrize(
    ("peer", "kind"),
    [
        (FakePeer(error=HostRequestError(-32000, "host model unavailable")), "host"),
        (FakePeer(error=TimeoutError()), "timeout"),
        (FakePeer(hang=True), "timeout"),
        (FakePeer({"tool_calls": "nope"}), "host"),
        (FakePeer(None), "host"),
    ],
    ids=["rpc-error", "peer-timeout", "hang", "malformed", "null"],
)
async def test_host_route_errors(peer: FakePeer, kind: str) -> None:
    route = HostRoute(peer, timeout=0.05)
    request = CompletionRequest(messages=[ChatMessage(role="user", content="x")], max_tokens=10)
    with pytest.raises(ModelError) as info:
        await route.complete(request)
    assert info.value.kind == kind and info.value.retryable
    if kind == "host" and peer.error is not None:
        assert "-32000" in str(info.value) and "host model unavailable" in str(info.value)


# ----------------------------------------------------------------------------------------- wiring


async def test_build_gateway_routes() -> None:
    direct = build_gateway(
        Settings(model_base_url="http://127.0.0.1:9/v1", model="m", model_concurrency=3), host_caller=None
    )
    assert isinstance(direct.route, OpenAIRoute)
    assert direct.describe() == "openai:http://127.0.0.1:9/v1 model=m"
    assert direct.concurrency == 3
    await direct.aclose()

    via_host = build_gateway(Settings(host_llm_timeout=9), host_caller=FakePeer())
    assert isinstance(via_host.route, HostRoute) and via_host.route.timeout == 9

    # A direct route without a model name is refused when the settings are built, before any job runs.
    with pytest.raises(ValueError, match=r"STRATAGATE_MODEL \(the model name\) is not"):
        Settings(model_base_url="http://127.0.0.1:9/v1")


async def test_default_max_tokens_from_settings(server: ScriptedModelServer) -> None:
    gw = build_gateway(Settings(model_base_url=server.base_url, model="m", model_max_tokens=333), None)
    server.push(tool_call(TOOL, VALID))
    await summarize(gw, max_tokens=None)
    assert server.requests[0]["max_tokens"] == 333
    await gw.aclose()


# ----------------------------------------------------------------------------------------- helpers


def test_extract_json_candidates() -> None:
    assert extract_json_candidates('{"a": 1}') == [{"a": 1}]
    assert extract_json_candidates("nothing here") == []
    assert extract_json_candidates('x {"a": "}{"} y {"b": {"c": 2}} z') == [{"b": {"c": 2}}, {"a": "}{"}]
    assert extract_json_candidates('unterminated {"a": {"b": 1}') == [{"b": 1}]
    assert extract_json_candidates('```\n{"a": 1}\n```\n```json\n{"a": 2}\n```') == [{"a": 2}, {"a": 1}]
    assert extract_json_candidates("{" * 5000) == []


def test_tool_parameters() -> None:
    flat = tool_parameters(Summary)
    assert flat["type"] == "object" and "$defs" not in flat
    recursive = tool_parameters(Node)  # cannot be inlined: $defs kept, still an object at the top
    assert recursive["type"] == "object" and "$defs" in recursive


@pytest.mark.parametrize("model", [Summary, Node])
def test_example_from_schema_is_valid(model: type[BaseModel]) -> None:
    model.model_validate(example_from_schema(model.model_json_schema()))


async def test_auto_defaults(server: ScriptedModelServer, gateway: ModelGateway) -> None:
    server.default = auto_schema_tool_call()
    result = await summarize(gateway)
    assert result.l1_summary == "example" and result.detail.weight == 0

    server.default = auto_tool_call(lambda name, body: {**VALID, "l1_summary": f"{name}/{len(body['messages'])}"})
    assert (await summarize(gateway)).l1_summary == f"{TOOL}/2"


def test_standalone_script_serves_schema_valid_calls() -> None:
    script = Path(__file__).parent / "support" / "model_server.py"

    async def call(base_url: str) -> Summary:
        route = OpenAIRoute(base_url, None, "demo", timeout=10)
        try:
            return await summarize(ModelGateway(route, 1))
        finally:
            await route.aclose()

    with subprocess.Popen(
        [sys.executable, str(script), "--port", "0"],
        stdout=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
    ) as proc:
        try:
            assert proc.stdout is not None
            line = proc.stdout.readline().strip()
            assert line.startswith("listening http://127.0.0.1:")
            assert asyncio.run(call(line.split()[1])).keywords == ["example"]
        finally:
            proc.terminate()
            assert proc.wait(timeout=10) == 0


def test_tool_spec_and_request_shapes() -> None:
    req = CompletionRequest(
        messages=[ChatMessage(role="user", content="x")],
        tool=ToolSpec(name="t", description="d", parameters={"type": "object"}),
        max_tokens=5,
    )
    assert set(req.model_dump()) == {"messages", "tool", "max_tokens"}


# ----------------------------------------------------------------------------------------- redaction


@pytest.mark.parametrize(
    ("raw", "secret"),
    [
        ("Incorrect API key provided: sk-proj-abcdefghijklmnopqrstuvwxyz123456", "abcdefghijklmnopqrstuvwxyz123456"),
        ("Authorization: Bearer eyJhbGciOi.abc-def_ghi.jkl", "eyJhbGciOi.abc-def_ghi.jkl"),
        ("GET /v1?api_key=hunter2&x=1", "hunter2"),
        ('{"password": "correct horse"}', "correct"),
        ("creds AKIAIOSFODNN7EXAMPLE here", "AKIAIOSFODNN7EXAMPLE"),
        ('"aws_secret_access_key": "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"', "wJalrXUtnFEMI"),
        ("session_token=0123456789abcdef0123456789abcdef", "0123456789abcdef0123456789abcdef"),
        ("https://bob:s3cr3tpw@example.test/v1", "s3cr3tpw"),
        ("token: ghp_abcdefghijklmnopqrstuvwxyz0123456789", "ghp_abcdefghij"),
    ],
)
def test_redact_shapes(raw: str, secret: str) -> None:
    cleaned = redact(raw)
    assert secret not in cleaned
    assert "[secret:" in cleaned


@pytest.mark.parametrize(
    "benign",
    ['{"max_tokens": 4096, "keywords": ["auth", "token"]}', "The secret to good summaries is brevity.", ""],
)
def test_redact_leaves_ordinary_text(benign: str) -> None:
    assert redact(benign) == benign


@settings(max_examples=300, deadline=None)
@given(
    prefix=st.text(max_size=40),
    body=st.text(alphabet=string.ascii_letters + string.digits, min_size=32, max_size=32),
    suffix=st.text(max_size=40),
)
def test_redact_never_leaks_sk_keys(prefix: str, body: str, suffix: str) -> None:
    key = "sk-" + body
    assert key not in redact(prefix + key + suffix)
    err = ModelError("http", f"boom {prefix}{key}{suffix}", preview=prefix + key)
    assert key not in err.preview and key not in str(err)
