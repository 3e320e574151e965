"""Drive a real `stratagate serve` subprocess over its stdio JSON-RPC, the way the DSH shim does."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import signal
import sys
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[2]
HostHandler = Callable[[str, dict[str, Any]], Awaitable[Any]]


class RpcFailure(Exception):
    def __init__(self, error: dict[str, Any]):
        super().__init__(f"{error.get('code')}: {error.get('message')}")
        self.code = error.get("code")
        self.message = error.get("message", "")
        self.data = error.get("data")


class SidecarClient:
    def __init__(self, proc: asyncio.subprocess.Process, host_handler: HostHandler | None):
        self.proc = proc
        self.host_handler = host_handler
        self._next_id = 0
        self._pending: dict[Any, asyncio.Future[dict[str, Any]]] = {}
        self.notifications: list[dict[str, Any]] = []
        self.orphans: list[dict[str, Any]] = []  # responses with id null (parse errors, oversized lines)
        self.raw_lines: list[bytes] = []  # every line read from stdout, as sent (conformance tests parse them)
        self.host_requests: list[dict[str, Any]] = []
        self.raw_host_reply: Callable[[dict[str, Any]], dict[str, Any]] | None = None  # whole reply, as given
        self._host_tasks: set[asyncio.Task[None]] = set()
        self._changed = asyncio.Condition()
        self._reader = asyncio.create_task(self._read())
        self.stderr_lines: list[str] = []
        self._stderr = asyncio.create_task(self._read_stderr())

    @classmethod
    async def start(
        cls,
        db: Path | None,
        *,
        env: dict[str, str] | None = None,
        args: list[str] | None = None,
        host_handler: HostHandler | None = None,
    ) -> SidecarClient:
        full_env = {k: v for k, v in os.environ.items() if not k.startswith("STRATAGATE_")}
        full_env["PYTHONPATH"] = str(REPO / "sidecar")
        full_env.update(env or {})
        proc = await asyncio.create_subprocess_exec(
            sys.executable,
            "-m",
            "stratagate",
            "serve",
            *(["--db", str(db)] if db else []),
            *(args or []),
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
            env=full_env,
            limit=64 * 1024 * 1024,
        )
        client = cls(proc, host_handler)
        await client.call("system.ping", timeout=60)
        return client

    async def _read(self) -> None:
        assert self.proc.stdout is not None
        while line := await self.proc.stdout.readline():
            self.raw_lines.append(line)
            message = json.loads(line)
            if isinstance(message, list):  # a batch reply
                self.orphans.append(message)
            elif "method" in message and "id" in message:
                self.host_requests.append(message)
                task = asyncio.create_task(self._answer_host(message))
                self._host_tasks.add(task)
                task.add_done_callback(self._host_tasks.discard)
            elif "method" in message:
                self.notifications.append(message)
            elif message.get("id") in self._pending:
                future = self._pending.pop(message["id"])
                if not future.done():
                    future.set_result(message)
            else:
                self.orphans.append(message)
            async with self._changed:
                self._changed.notify_all()
        for future in self._pending.values():
            if not future.done():
                future.set_exception(ConnectionError("sidecar closed stdout"))
        async with self._changed:
            self._changed.notify_all()

    async def _read_stderr(self) -> None:
        assert self.proc.stderr is not None
        while line := await self.proc.stderr.readline():
            self.stderr_lines.append(line.decode(errors="replace"))

    async def _answer_host(self, message: dict[str, Any]) -> None:
        reply: dict[str, Any] = {"jsonrpc": "2.0", "id": message["id"]}
        if self.raw_host_reply is not None:
            reply = self.raw_host_reply(message)
        elif self.host_handler is None:
            reply["error"] = {"code": -32601, "message": "test host has no handler"}
        else:
            try:
                reply["result"] = await self.host_handler(message["method"], message.get("params") or {})
            except Exception as exc:
                reply["error"] = {"code": -32000, "message": str(exc)}
        with contextlib.suppress(Exception):
            await self.send_line(json.dumps(reply).encode())

    async def send_line(self, raw: bytes) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(raw + b"\n")
        await self.proc.stdin.drain()

    async def request(self, method: str, params: Any = None) -> asyncio.Future[dict[str, Any]]:
        """Send a request and return the future of its raw response (does not wait)."""
        self._next_id += 1
        request_id = self._next_id
        future: asyncio.Future[dict[str, Any]] = asyncio.get_running_loop().create_future()
        self._pending[request_id] = future
        message: dict[str, Any] = {"jsonrpc": "2.0", "id": request_id, "method": method}
        if params is not None:
            message["params"] = params
        await self.send_line(json.dumps(message, ensure_ascii=False).encode())
        return future

    async def call(self, method: str, params: Any = None, timeout: float = 30) -> Any:  # noqa: ASYNC109
        future = await self.request(method, params)
        async with asyncio.timeout(timeout):
            response = await future
        if "error" in response:
            raise RpcFailure(response["error"])
        return response["result"]

    async def tool(self, namespace: str, session: str, name: str, arguments: dict[str, Any] | None = None) -> Any:
        return await self.call(
            "tools.call", {"namespace": namespace, "session": session, "name": name, "arguments": arguments or {}}
        )

    async def wait_for(self, predicate: Callable[[], Any], timeout: float = 30) -> Any:  # noqa: ASYNC109
        """Wait until predicate() is truthy, re-checked whenever a message arrives (no polling sleeps)."""
        async with asyncio.timeout(timeout):
            async with self._changed:
                while not (value := predicate()):
                    await self._changed.wait()
                return value

    async def settled(self, *, failed: bool = False, timeout: float = 60) -> dict[str, Any]:  # noqa: ASYNC109
        """Until the background pipeline has nothing queued or running (summaries, extraction, projection,
        embeddings: they change what recall shows and what system.info counts), re-checked at each notification
        (no sleeps). Returns the job counts; unless ``failed``, a failed job is an error."""
        while True:
            seen = len(self.notifications)
            jobs = (await self.call("system.info"))["counts"]["jobs"]
            if jobs["queued"] == 0 and jobs["running"] == 0:
                assert failed or jobs.get("failed", 0) == 0, jobs
                return jobs
            await self.wait_for(lambda n=seen: len(self.notifications) > n, timeout=timeout)

    async def wait_notification(self, method: str, match: Callable[[dict[str, Any]], bool], timeout: float = 30) -> Any:  # noqa: ASYNC109
        def found() -> dict[str, Any] | None:
            for note in self.notifications:
                if note["method"] == method and match(note.get("params") or {}):
                    return note["params"]
            return None

        return await self.wait_for(found, timeout)

    async def close(self) -> int:
        if self.proc.returncode is None:
            with contextlib.suppress(Exception):
                await self.call("system.shutdown", timeout=10)
            with contextlib.suppress(Exception):
                assert self.proc.stdin is not None
                self.proc.stdin.close()
            try:
                async with asyncio.timeout(15):
                    await self.proc.wait()
            except TimeoutError:
                self.proc.kill()
                await self.proc.wait()
        await self._reader
        await self._stderr
        return self.proc.returncode or 0

    async def kill9(self) -> None:
        self.proc.send_signal(signal.SIGKILL)
        await self.proc.wait()
        await self._reader
        await self._stderr
