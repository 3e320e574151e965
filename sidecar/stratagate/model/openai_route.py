"""Direct route: any OpenAI-compatible chat-completions endpoint, streamed, with a forced tool call."""

from __future__ import annotations

import asyncio
import json
from dataclasses import dataclass, field
from typing import Any

import openai

from stratagate.model.types import ChatMessage, Completion, CompletionRequest, ModelError, ToolCall

_RETRYABLE_STATUS = frozenset({408, 409, 425, 429})


@dataclass
class _PartialCall:
    id: str | None = None
    name: str = ""
    arguments: list[str] = field(default_factory=list)


class _Assembler:
    """Accumulates streamed deltas (text and tool-call fragments keyed by index) into one Completion."""

    def __init__(self) -> None:
        self.text: list[str] = []
        self.calls: dict[int, _PartialCall] = {}
        self.finish_reason: str | None = None
        self.model: str | None = None

    def add_chunk(self, chunk: Any) -> None:
        self.model = getattr(chunk, "model", None) or self.model
        for choice in getattr(chunk, "choices", None) or []:
            if (getattr(choice, "index", 0) or 0) != 0:
                continue  # n=1 is all we ever ask for
            delta = getattr(choice, "delta", None)
            if delta is not None:
                if getattr(delta, "content", None):
                    self.text.append(delta.content)
                for tc in getattr(delta, "tool_calls", None) or []:
                    self._add_call_delta(tc)
            if getattr(choice, "finish_reason", None):
                self.finish_reason = choice.finish_reason

    def _add_call_delta(self, tc: Any) -> None:
        index = tc.index
        if index is None:
            # Some servers omit the index: a new id starts a new call, otherwise continue the last one.
            if not self.calls:
                index = 0
            else:
                last = max(self.calls)
                prev_id = self.calls[last].id
                index = last + 1 if tc.id and prev_id and tc.id != prev_id else last
        call = self.calls.setdefault(index, _PartialCall())
        if tc.id and not call.id:
            call.id = tc.id
        fn = tc.function
        if fn is not None:
            if fn.name and not call.name:
                call.name = fn.name
            if fn.arguments:
                call.arguments.append(fn.arguments)

    def add_message(self, data: dict[str, Any]) -> None:
        """Non-streamed body (a server that ignored ``stream: true``)."""
        self.model = data.get("model") or self.model
        choices = data.get("choices") or []
        if not choices:
            return
        choice = choices[0]
        message = choice.get("message") or {}
        if message.get("content"):
            self.text.append(str(message["content"]))
        for i, tc in enumerate(message.get("tool_calls") or []):
            fn = tc.get("function") or {}
            args = fn.get("arguments")
            raw_args = args if isinstance(args, str) else json.dumps(args) if args is not None else ""
            self.calls[i] = _PartialCall(tc.get("id"), str(fn.get("name") or ""), [raw_args])
        self.finish_reason = choice.get("finish_reason")

    def raw(self) -> str:
        parts = ["".join(self.text)] + [f"[tool call {c.name}] {''.join(c.arguments)}" for c in self.calls.values()]
        return "\n".join(p for p in parts if p)

    def result(self) -> Completion:
        return Completion(
            text="".join(self.text),
            tool_calls=[
                ToolCall(name=c.name, arguments="".join(c.arguments)) for _, c in sorted(self.calls.items()) if c.name
            ],
            finish_reason=self.finish_reason,
            model=self.model,
        )


def _error_detail(body: object, fallback: str) -> str:
    if isinstance(body, dict):
        err = body.get("error", body)
        if isinstance(err, dict) and err.get("message"):
            return str(err["message"])
        if isinstance(err, str):
            return err
    if isinstance(body, str) and body.strip():
        return body.strip()
    return fallback


def _body_text(body: object) -> str:
    if body is None:
        return ""
    return body if isinstance(body, str) else json.dumps(body, ensure_ascii=False, default=str)


class OpenAIRoute:
    """Streams one chat completion; retries are deliberately disabled (the job queue owns backoff)."""

    def __init__(self, base_url: str, api_key: str | None, model: str, timeout: float) -> None:
        self.base_url = base_url
        self.model = model
        self.timeout = timeout
        self._client = openai.AsyncOpenAI(
            base_url=base_url, api_key=api_key or "not-needed", timeout=timeout, max_retries=0
        )

    def describe(self) -> str:
        return f"openai:{self.base_url} model={self.model}"

    async def aclose(self) -> None:
        await self._client.close()

    async def complete(self, request: CompletionRequest) -> Completion:
        kwargs: dict[str, Any] = {
            "model": self.model,
            "messages": [_message(m) for m in request.messages],
            "max_tokens": request.max_tokens,
            "stream": True,
            "stream_options": {"include_usage": True},
        }
        if request.tool is not None:
            kwargs["tools"] = [
                {
                    "type": "function",
                    "function": {
                        "name": request.tool.name,
                        "description": request.tool.description,
                        "parameters": request.tool.parameters,
                    },
                }
            ]
            kwargs["tool_choice"] = {"type": "function", "function": {"name": request.tool.name}}

        acc = _Assembler()
        where = f"from {self.base_url}"
        try:
            # One deadline for connect + the whole stream: httpx's timeout is per read, so a server
            # trickling bytes could otherwise hold a job for ever.
            async with asyncio.timeout(self.timeout):
                await self._stream(kwargs, acc)
        except TimeoutError as exc:
            raise ModelError(
                "timeout", f"model did not finish within {self.timeout:g}s {where}", preview=acc.raw()
            ) from exc
        except openai.APIStatusError as exc:
            status = exc.status_code
            raise ModelError(
                "http",
                f"model returned HTTP {status} {where}: {_error_detail(exc.body, exc.message)}",
                preview=_body_text(exc.body),
                retryable=status in _RETRYABLE_STATUS or status >= 500,
            ) from exc
        except openai.APITimeoutError as exc:
            raise ModelError(
                "timeout", f"model request timed out after {self.timeout:g}s {where}", preview=acc.raw()
            ) from exc
        except openai.APIConnectionError as exc:
            cause = exc.__cause__ or exc
            raise ModelError(
                "transport",
                f"connection to model {where} failed: {type(cause).__name__}: {cause}",
                preview=acc.raw(),
            ) from exc
        except openai.APIError as exc:
            # Error events inside an otherwise healthy stream (e.g. upstream overloaded mid-generation).
            raise ModelError(
                "transport",
                f"model stream {where} reported an error: {_error_detail(exc.body, exc.message)}",
                preview=acc.raw() or _body_text(exc.body),
            ) from exc
        except ValueError as exc:
            # Undecodable SSE payload / JSON body.
            raise ModelError("transport", f"model {where} sent a malformed response: {exc}", preview=acc.raw()) from exc

        if acc.finish_reason is None:
            raise ModelError(
                "transport",
                f"model stream {where} ended before completion (no finish_reason; connection dropped?)",
                preview=acc.raw(),
            )
        return acc.result()

    async def _stream(self, kwargs: dict[str, Any], acc: _Assembler) -> None:
        create = self._client.chat.completions.with_streaming_response.create
        async with create(**kwargs) as response:
            content_type = response.headers.get("content-type", "")
            if "json" in content_type:
                data = await response.json()
                if not isinstance(data, dict):
                    raise ValueError(f"expected a JSON object, got {type(data).__name__}")
                if "choices" not in data and data.get("error"):
                    raise openai.APIError(_error_detail(data, "error"), response.http_request, body=data)
                acc.add_message(data)
                return
            stream = await response.parse()
            async for chunk in stream:
                acc.add_chunk(chunk)


def _message(m: ChatMessage) -> dict[str, str]:
    return {"role": m.role, "content": m.content}
