"""Drive DSH's web profile over its HTTP API: multi-turn sessions for the e2e tests and the benchmark.

``dsh --profile headless`` runs one turn per process; the web profile (``dsh web``) keeps sessions alive, so a test
can send turn after turn into one session. The API is JSON-RPC-like over ``POST /api/<method>`` (facts in
/work/notes/web-facts.md, taken from @deepseek-ai/dsh-host-apiproxy 0.1.0-rc.8):

* body ``{"type": "client-request", "rpcId", "method", "payload"}``, header ``Content-Type: application/json``
  (anything else is refused with 415); the answer is ``{"result": {"ok": true, "value"} | {"ok": false, "error"}}``;
* no authentication: the ``Host`` header must be a loopback authority, which urllib sends for 127.0.0.1;
* ``session.create`` → ``sessionId``; ``session.prompt`` (mode ``queue``) returns at once; the turn has ended when
  the session log (``session.history``) holds one more ``turn/end`` and ``session.list`` says it is not running.

Live events come over two WebSocket downlinks, which the stdlib cannot read; we poll ``session.history`` instead
(every poll re-checks the condition, with a deadline, like ``wait_http_json``).
"""

from __future__ import annotations

import json
import os
import shutil
import time
import urllib.error
import urllib.request
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from support.dsh import DshHome, Proc, free_port

POLL_SECONDS = 0.2  # between two looks at the session log while a turn runs


def plan_deadline_patch(home: DshHome, ms: int = 60_000) -> Path:
    """A --patch lifting the shim's context.plan deadline (product default 5 s): on a loaded machine a slow plan
    must not turn into "nothing landed" and change what a test sees. The row's other options keep their defaults."""
    patch = home.logs / "plan-deadline.patch.yml"
    patch.write_text(f"- id: stratagate\n  config:\n    contextTimeoutMs: {ms}\n")
    return patch


class WebApiError(AssertionError):
    """The API answered ``ok: false`` (or not JSON, or not at all)."""

    def __init__(self, method: str, detail: Any):
        super().__init__(f"{method}: {detail}")
        self.method = method
        self.detail = detail


@dataclass
class Turn:
    """One finished turn of a web session."""

    number: int  # 1-based, as DSH numbers turns
    text: str
    events: list[dict[str, Any]]  # the raw session events appended during the turn (turn/start … turn/end)
    request_range: tuple[int, int]  # indexes into the model server's requests made during the turn
    seconds: float

    @property
    def end_reason(self) -> str | None:
        ends = [e for e in self.events if e.get("type") == "turn/end"]
        return ((ends[-1].get("data") or {}).get("reason") or {}).get("kind") if ends else None

    def of_type(self, *types: str) -> list[dict[str, Any]]:
        return [e for e in self.events if e.get("type") in types]


class DshWeb:
    """A running ``dsh web --no-open --port N`` and its API."""

    def __init__(self, home: DshHome, proc: Proc, port: int):
        self.home = home
        self.proc = proc
        self.port = port

    @property
    def api(self) -> str:
        return f"http://127.0.0.1:{self.port}/api/"

    def call(self, method: str, payload: dict[str, Any] | None = None, *, timeout: float = 30) -> Any:
        """Call one API method; return its ``value`` or raise WebApiError."""
        envelope = {"type": "client-request", "rpcId": uuid.uuid4().hex, "method": method, "payload": payload or {}}
        request = urllib.request.Request(
            self.api + method,
            data=json.dumps(envelope).encode(),
            headers={"Content-Type": "application/json"},
            method="POST",
        )
        try:
            with urllib.request.urlopen(request, timeout=timeout) as resp:
                raw = resp.read()
        except urllib.error.HTTPError as exc:
            raise WebApiError(method, f"HTTP {exc.code}: {exc.read()[:500]!r}") from exc
        try:
            answer = json.loads(raw)
        except ValueError as exc:
            raise WebApiError(method, f"not JSON: {raw[:300]!r}") from exc
        result = answer.get("result") or {}
        if not result.get("ok"):
            raise WebApiError(method, result.get("error", answer))
        return result.get("value")

    def wait_ready(self, timeout: float = 90) -> dict[str, Any]:
        """Poll ``host.describe`` until the server answers (or dsh exits / the deadline passes)."""
        deadline = time.monotonic() + timeout
        last: object = None
        while time.monotonic() < deadline:
            if self.proc.popen.poll() is not None:
                raise AssertionError(f"dsh web exited with {self.proc.popen.returncode} before it was ready")
            try:
                return dict(self.call("host.describe", timeout=5))
            except (WebApiError, urllib.error.URLError, ConnectionError, TimeoutError) as exc:
                last = exc
            time.sleep(POLL_SECONDS)  # polling an HTTP endpoint until it is ready
        raise AssertionError(f"dsh web on port {self.port} was not ready within {timeout}s (last: {last})")

    def create_session(self, cwd: Path, *, preset: str | None = None) -> WebSession:
        cwd.mkdir(parents=True, exist_ok=True)
        payload: dict[str, Any] = {"cwd": str(cwd)}
        if preset is not None:
            payload["agentPreset"] = preset
        value = self.call("session.create", payload)
        return WebSession(self, str(value["sessionId"]), value.get("agentPreset"))

    def command(self, session_id: str, line: str) -> dict[str, Any] | None:
        """Run a slash command (``/memory status``) the way the browser does: the Typert Remote endpoint
        ``commands/execute``. (``session.prompt`` with a ``/`` text does NOT run it in rc.8: the model gets it.)
        Returns ``{commandId, result: {kind, text}}``, or None when the line is no known command."""
        args = {"agentId": session_id, "line": line, "images": []}
        value = self.call("commands/execute", {"args": args})
        return dict(value) if value is not None else None

    def sessions(self) -> list[dict[str, Any]]:
        return list(self.call("session.list")["items"])

    def stop(self, timeout: float = 20) -> int | None:
        return self.home.stop(self.proc, timeout=timeout)


@dataclass
class WebSession:
    web: DshWeb
    id: str
    preset: str | None
    turns: list[Turn] = field(default_factory=list)

    def _page(self, before: int | None, max_messages: int) -> tuple[list[dict[str, Any]], bool]:
        payload: dict[str, Any] = {"sessionId": self.id, "maxMessages": max_messages}
        if before is not None:
            payload["beforeSeq"] = before
        value = self.web.call("session.history", payload)
        return [entry["event"] for entry in value["events"]], bool(value.get("hasMore"))

    def events_since(self, seq: int, *, max_messages: int = 500) -> list[dict[str, Any]]:
        """The raw events with a seq above ``seq`` (``-1``: the whole log), oldest first; pages back with
        ``beforeSeq`` only as far as needed."""
        seen: dict[int, dict[str, Any]] = {}
        before: int | None = None
        while True:
            events, more = self._page(before, max_messages)
            for event in events:
                seen.setdefault(int(event["seq"]), event)
            if not events or not more or min(int(e["seq"]) for e in events) <= seq + 1:
                break
            before = min(int(e["seq"]) for e in events)
        return [seen[k] for k in sorted(seen) if k > seq]

    def history(self) -> list[dict[str, Any]]:
        """Every raw event of the session log, oldest first."""
        return self.events_since(-1)

    def last_seq(self) -> int:
        events, _ = self._page(None, 1)
        return max((int(e["seq"]) for e in events), default=-1)

    def running(self) -> bool:
        for item in self.web.sessions():
            if item.get("sessionId") == self.id:
                return bool(item.get("running"))
        return False

    def send(
        self,
        text: str,
        *,
        timeout: float = 120,
        requests: Callable[[], int] | None = None,
    ) -> Turn:
        """Send one user message and wait until its turn has ended and the agent is idle.

        ``requests`` (e.g. ``lambda: len(server.requests)``) lets the Turn record which model requests it made.
        """
        last_seq = self.last_seq()
        first = requests() if requests else 0
        started = time.monotonic()
        content = [{"type": "text", "text": text}]
        self.web.call("session.prompt", {"sessionId": self.id, "mode": "queue", "content": content})
        deadline = started + timeout
        while True:
            if self.web.proc.popen.poll() is not None:
                raise AssertionError(f"dsh web exited with {self.web.proc.popen.returncode} during the turn {text!r}")
            # The turn's turn/end is the newest event once it has ended, so the tail page is enough to see it.
            tail, _ = self._page(None, 4)
            ended = any(e.get("type") == "turn/end" and int(e["seq"]) > last_seq for e in tail)
            if ended and not self.running():
                break
            if time.monotonic() > deadline:
                types = [e.get("type") for e in tail]
                raise AssertionError(f"turn {text!r} did not end within {timeout}s (newest events: {types})")
            time.sleep(POLL_SECONDS)  # polling the session log until the turn has ended
        new = self.events_since(last_seq)
        numbers = [int((e.get("data") or {}).get("turn", 0)) for e in new if e.get("type") == "turn/end"]
        turn = Turn(
            number=numbers[-1] if numbers else len(self.turns) + 1,
            text=text,
            events=new,
            request_range=(first, requests() if requests else 0),
            seconds=time.monotonic() - started,
        )
        self.turns.append(turn)
        return turn


@contextmanager
def running_web(
    home: DshHome,
    cwd: Path,
    *,
    patches: list[Path] | None = None,
    ready_timeout: float = 90,
) -> Iterator[DshWeb]:
    """Start ``dsh web --no-open --port <free>`` in ``cwd``, wait until its API answers, stop it (SIGTERM) at exit.

    ``DshHome.kill_all`` (the fixtures' teardown) still ends anything left, by pid.
    """
    port = free_port()
    proc = home.start(["web", "--no-open", "--port", str(port)], cwd, patches=patches, label="web")
    web = DshWeb(home, proc, port)
    try:
        web.wait_ready(ready_timeout)
        yield web
    finally:
        web.stop()


@dataclass(frozen=True)
class BrowserRun:
    """What a test that drives the DSH web UI in Chromium needs: node, an empty project folder, its screenshot."""

    node: str
    work: Path
    shot: Path


def browser_run(home: DshHome, tmp_path: Path, screenshot: str) -> BrowserRun:
    """node (asserted present), ``tmp_path/project`` (created) and the screenshot's path: with the browser tests'
    screenshots when $STRATAGATE_SCREENSHOTS names a folder, else in the test's logs."""
    node = shutil.which("node")
    assert node, "node is needed to drive chromium"
    work = tmp_path / "project"
    work.mkdir()
    shots = Path(os.environ.get("STRATAGATE_SCREENSHOTS") or home.logs)
    shots.mkdir(parents=True, exist_ok=True)
    return BrowserRun(node, work, shots / screenshot)
