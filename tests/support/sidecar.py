"""Drive a real `stratagate serve` over its stdio JSON-RPC, the way the DSH shim does.

By default the sidecar runs in this test process: the CLI's own ``serve`` coroutine on a thread with its own event
loop, wired to the client through two OS pipes, so the bytes, framing, ordering and every code path after start-up are
those of the real process. What a process would pay again for each test (interpreter start, imports, the tokenizer,
the secret detector: ~1.8 s of CPU) is paid once per test worker. Tests of the process itself (signals, kill -9,
stderr, exit codes, its environment) pass ``process=True`` and get a real ``stratagate serve`` child.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import io
import json
import os
import signal
import sys
import threading
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


PROCESS_ONLY_ENV = frozenset({"STRATAGATE_TOKENS_CACHE", "STRATAGATE_LOG_LEVEL"})
DENSE_OFF = frozenset({"0", "off", "false", "no", "n", "f"})  # as search/dense.py reads STRATAGATE_DENSE
"""Variables the sidecar reads from its process environment rather than from its Settings: a test that sets one
needs its own process."""


def _serve_settings(db: Path | None, env: dict[str, str], args: list[str]) -> Any:
    """The Settings ``stratagate serve --db DB ARGS`` would build from ENV (the CLI's parser and loader)."""
    from stratagate.cli import _parser
    from stratagate.config import load_settings
    from stratagate.context.settings import parse_config

    parsed = _parser().parse_args(["serve", *(["--db", str(db)] if db else []), *args])
    settings = load_settings({"db": parsed.db, "block_turns": parsed.block_turns}, environ=env)
    parse_config(settings.context_config)
    return settings


_warmed = threading.Lock()
_warm = False


def _warm_up() -> None:
    """What `serve` builds before it answers (the CLI's warm-ups), once per test process."""
    global _warm
    with _warmed:
        if not _warm:
            from stratagate import tokens
            from stratagate.safety import secrets

            tokens.get_encoding()
            secrets.warm()
            _warm = True


class _Pipe:
    """The write end of the request pipe, shaped like a subprocess's stdin."""

    def __init__(self, writer: asyncio.StreamWriter):
        self._writer = writer

    def write(self, data: bytes) -> None:
        self._writer.write(data)

    async def drain(self) -> None:
        await self._writer.drain()

    def close(self) -> None:
        self._writer.close()

    def is_closing(self) -> bool:
        return self._writer.is_closing()


class InProcessSidecar:
    """`stratagate serve` on a thread of this process, shaped like the asyncio subprocess the client drives."""

    pid = os.getpid()

    def __init__(self, settings: Any, stdin: _Pipe, stdout: asyncio.StreamReader, in_fd: int, out_fd: int):
        self.stdin = stdin
        self.stdout = stdout
        self.stderr = asyncio.StreamReader()  # the sidecar's log goes to this process's logging; nothing here
        self.stderr.feed_eof()
        self.returncode: int | None = None
        self._exit: concurrent.futures.Future[int] = concurrent.futures.Future()
        self._thread = threading.Thread(target=self._run, args=(settings, in_fd, out_fd), daemon=True,
                                        name="stratagate-serve")
        self._thread.start()

    def _run(self, settings: Any, in_fd: int, out_fd: int) -> None:
        from stratagate.rpc.server import serve

        async def main() -> int:
            self._loop = asyncio.get_running_loop()
            return await serve(settings, in_fd=in_fd, out_fd=out_fd)

        try:
            code = asyncio.run(main())
        except BaseException as exc:  # reported as the exit code; the test sees the error through its reply
            print(f"in-process sidecar failed: {exc!r}", file=sys.stderr)
            code = 1
        self.returncode = code
        self._exit.set_result(code)

    @classmethod
    async def start(cls, settings: Any) -> InProcessSidecar:
        loop = asyncio.get_running_loop()
        await asyncio.to_thread(_warm_up)
        req_r, req_w = os.pipe()
        resp_r, resp_w = os.pipe()
        reader = asyncio.StreamReader(limit=64 * 1024 * 1024)
        await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), os.fdopen(resp_r, "rb", 0))
        transport, protocol = await loop.connect_write_pipe(
            asyncio.streams.FlowControlMixin, os.fdopen(req_w, "wb", 0)
        )
        writer = asyncio.StreamWriter(transport, protocol, None, loop)
        # The server thread owns req_r and resp_w from here (serve wraps and closes them).
        return cls(settings, _Pipe(writer), reader, req_r, resp_w)

    def tasks(self) -> str:
        """The sidecar loop's pending tasks with their stacks (for a sidecar that does not stop)."""
        loop = getattr(self, "_loop", None)
        if loop is None or loop.is_closed():
            return "(no loop)"

        async def report() -> str:
            out = io.StringIO()
            for task in asyncio.all_tasks():
                if task is not asyncio.current_task():
                    task.print_stack(file=out)
            return out.getvalue()

        try:
            return asyncio.run_coroutine_threadsafe(report(), loop).result(timeout=5)
        except Exception as exc:
            return f"(no report: {exc!r})"

    async def wait(self) -> int:
        # Shielded: a caller's timeout must not cancel the thread's exit future (wrap_future passes a cancellation on
        # to it, and every later wait would then fail at once instead of waiting for the thread).
        return await asyncio.shield(asyncio.wrap_future(self._exit))

    def kill(self) -> None:
        """A thread cannot be killed: end its input, which stops `serve` as stdin EOF stops the process."""
        self.stdin.close()

    def send_signal(self, sig: int) -> None:
        raise RuntimeError("an in-process sidecar takes no signals: start it with process=True")


class SidecarClient:
    def __init__(self, proc: Any, host_handler: HostHandler | None):
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
        process: bool = False,
    ) -> SidecarClient:
        """A sidecar on DB (None: the default path) with ENV over this process's environment (its own STRATAGATE_*
        dropped) and ARGS after `serve`. In this process unless PROCESS, or ENV sets what only a process reads or turns
        the dense channel on; in this process the dense channel is off unless ENV says otherwise."""
        env = dict(env or {})
        in_process = (
            not process
            and db is not None
            and all(k.startswith("STRATAGATE_") and k not in PROCESS_ONLY_ENV for k in env)
            # The dense channel's model, caches and threads are the process's: a test that turns it on gets one.
            and env.get("STRATAGATE_DENSE", "off").strip().lower() in DENSE_OFF
        )
        if in_process:
            settings = _serve_settings(db, {"STRATAGATE_DENSE": "off", **env}, args or [])
            client = cls(await InProcessSidecar.start(settings), host_handler)
            await client.call("system.ping", timeout=60)
            return client
        full_env = {k: v for k, v in os.environ.items() if not k.startswith("STRATAGATE_")}
        full_env["PYTHONPATH"] = str(REPO / "sidecar")
        full_env.update(env)
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
                if isinstance(self.proc, InProcessSidecar):
                    # A thread cannot be killed: it is given up, as kill gives up a process, and what it was still
                    # waiting for is printed (shown with the test's output).
                    print(f"in-process sidecar did not stop within 15 s; given up. Its tasks:\n{self.proc.tasks()}",
                          file=sys.stderr)
                    self._reader.cancel()
                    self._stderr.cancel()
                    with contextlib.suppress(asyncio.CancelledError):
                        await self._reader
                    return 0
                self.proc.kill()
                await self.proc.wait()
        await self._reader
        await self._stderr
        return self.proc.returncode or 0

    async def kill9(self) -> None:
        """SIGKILL: nothing of the sidecar runs after it (a process-only test: start it with process=True)."""
        self.proc.send_signal(signal.SIGKILL)
        await self.proc.wait()
        await self._reader
        await self._stderr
