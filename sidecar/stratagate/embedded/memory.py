"""``Memory``: a StrataGate memory used from Python, in this process and event loop (no DSH, no subprocess).

It is a client of the protocol table, like the sidecar's JSON-RPC dispatcher: each call runs the very entry a DSH
session's request runs (``turn.capture``, ``activation.render``, ``tools.call`` with the memory tools, the Memory
page's ``page.events.get``) through the one adapter (protocol/adapter.py), so validation, redaction, the rendering
rule, evidence batches, the audit and every error are the sidecar's own. The database opens as ``stratagate serve``
opens it: ``App`` (migrations, hooks, the derived search index, the job runner, the session-tail sweep).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import uuid
from collections.abc import Awaitable, Callable, Generator, Sequence
from datetime import datetime
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING, Any, TypeVar, cast

from pydantic import BaseModel, TypeAdapter, ValidationError

from stratagate.app import App
from stratagate.capture.models import CaptureResult, ToolRecord
from stratagate.config import Settings, load_settings
from stratagate.embedded.results import BlockDetail, EventDetail, EventSearch, Expanded, NodeDetail
from stratagate.errors import SHUTTING_DOWN, RpcError, invalid_params
from stratagate.protocol import METHOD_TABLE, adapter
from stratagate.protocol.errors import as_rpc_error
from stratagate.protocol.results import ActivationResult
from stratagate.protocol.tool_results import EraseToolResult, EventChangeResult, ForgetResult, RememberResult
from stratagate.protocol.types import Name
from stratagate.rpc.methods import load_methods, module_to_load

if TYPE_CHECKING:
    from stratagate.page.longterm import PageEventDetail

M = TypeVar("M", bound=BaseModel)

DEFAULT_SESSION = "python"
"""The session a Memory's turns and session-scoped memories belong to unless ``session=`` names another."""
CLOSE_WAIT_S = 10.0
"""How long ``close`` lets calls in flight finish (as the sidecar finishes its requests at shutdown)."""
SETTLE_RECHECK_S = 0.5
"""``settle`` looks at the queue again after this long without a job notification (a job another process runs, or
one waiting for its retry time, sends none here)."""

_NAME = TypeAdapter(Name)

# A library logs where its user configured logging, and nowhere else (without this, Python's last-resort handler
# would print each refused call's warning to stderr); `serve` configures its own handlers and is unaffected.
logging.getLogger("stratagate").addHandler(logging.NullHandler())


class _Notices:
    """Stands where the sidecar's stdio peer stands (``App.peer``): the job runner's notifications wake ``settle``.
    It can answer no host request: a Memory has no host, so its app never builds the host model route."""

    closed = False

    def __init__(self) -> None:
        self.changed = asyncio.Event()

    async def notify(self, method: str, params: dict[str, Any]) -> None:
        self.changed.set()


class Memory:
    """The memory of one namespace of a StrataGate database.

    Open it with ``async with Memory.open(path, namespace="notes") as m`` (or ``m = await Memory.open(...)`` and
    ``await m.close()``). ``path`` is the SQLite file (None: the DSH profile's, as ``stratagate serve`` defaults);
    several processes, a DSH sidecar among them, may use one file at once.

    - **Namespace**: ``namespace="notes"`` is DSH's global mode with that name (``global:notes``);
      ``workspace=PATH`` is the folder's project memory, keyed as ``namespace.resolve`` keys a working directory, so
      it is the memory a DSH session in that folder uses. The user tier works as in DSH: ``scope="user"`` memories of
      every namespace that shares its user tier are seen here, and this one's are seen there.
    - **Model**: none unless given one. Without ``STRATAGATE_MODEL_BASE_URL`` (or ``settings.model_base_url``) the
      memory runs zero-model (block views and events written by rule), whatever route the Memory page stored.
    - **Jobs**: the background pipeline (block views, extraction, graph projection, embeddings, maintenance) runs while
      the Memory is open; ``settle()`` waits until it is idle; ``close()`` stops it cleanly (a job in flight is given
      back to the queue, open session tails are sealed) and closes the database.
    - **Writes** are audited as the memory tools' are (actor ``agent``); results pass the same rendering rule.
    - **Errors** are ``stratagate.errors.RpcError`` with the protocol's codes (-32602 invalid params, -32004 not found,
      -32010 storage); a closed Memory answers -32006.
    - Use it from the event loop that opened it. Settings come from the ``STRATAGATE_*`` environment unless
      ``settings=`` is given. One database file per process at a time: secret placeholders are keyed per database,
      and the key is process-wide.
    """

    def __init__(self, app: App, namespace: str, session: str, notices: _Notices) -> None:
        """Use ``Memory.open``."""
        self._app = app
        self.namespace = namespace
        """The namespace key (``global:notes``, ``project:<folder>:<hash>``): what DSH and the Memory page show."""
        self.session = session
        self.path = app.settings.db
        self._notices = notices
        self._closed = False
        self._busy = 0
        self._idle = asyncio.Event()
        self._idle.set()

    # --- opening and closing ------------------------------------------------------------------------------------

    @classmethod
    def open(
        cls,
        path: str | os.PathLike[str] | None = None,
        *,
        namespace: str | None = None,
        workspace: str | os.PathLike[str] | None = None,
        session: str = DEFAULT_SESSION,
        settings: Settings | None = None,
    ) -> _Opening:
        """Open the database at ``path`` for ``namespace=NAME`` or ``workspace=PATH`` (exactly one); ``session``
        names this client's session (its captured turns and ``scope="session"`` memories)."""
        return _Opening(lambda: cls._start(path, namespace, workspace, session, settings))

    @classmethod
    async def _start(
        cls,
        path: str | os.PathLike[str] | None,
        namespace: str | None,
        workspace: str | os.PathLike[str] | None,
        session: str,
        settings: Settings | None,
    ) -> Memory:
        key = await _namespace_key(namespace, workspace)
        session = _name("session", session)
        try:
            app = App(_settings(path, settings), host_model=False)
        except Exception as exc:
            raise as_rpc_error(exc) from exc
        notices = _Notices()
        app.peer = notices
        try:
            await app.start()
            await app.join_team(key)
        except Exception as exc:
            with contextlib.suppress(Exception):
                await app.stop()  # close what did open, or its worker thread outlives the failure
            raise as_rpc_error(exc) from exc
        return cls(app, key, session, notices)

    async def close(self) -> None:
        """Let calls in flight finish, stop the background jobs (a job in flight goes back to the queue for the next
        opener), seal open session tails, close the database. Closing twice is harmless."""
        if self._closed:
            return
        self._closed = True
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(CLOSE_WAIT_S):
                await self._idle.wait()
        await self._app.stop()

    @property
    def closed(self) -> bool:
        return self._closed

    async def __aenter__(self) -> Memory:
        return self

    async def __aexit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.close()

    # --- long-term memory ---------------------------------------------------------------------------------------

    async def remember(self, text: str, **fields: Any) -> RememberResult:
        """Store a memory (memory_remember): ``text`` and its other fields — ``title``, ``type``, ``scope``
        (``"project"``, ``"user"``, ``"session"``), ``criticality``, ``tags``, ``when``, ``happened``,
        ``supersedes``, ``claims``. Restating a forgotten memory is refused."""
        return await self._tool("memory_remember", {"text": text, **fields}, RememberResult)

    async def search(self, query: str | None = None, **filters: Any) -> EventSearch:
        """Search the memories (memory_search_events), best match first; ``filters``: ``limit``, ``status``,
        ``type``, ``include_inactive``, ``scope``, ``participants``, ``after``, ``before``, ``temporal_intent``."""
        return await self._tool("memory_search_events", {"query": query, **filters}, EventSearch)

    async def recall(self, prompt: str | None = None, *, session: str | None = None) -> ActivationResult:
        """What DSH's recall injects before a model answers ``prompt`` (``activation.render``): the long-term memories
        and graph facts that fit, recent blocks of the namespace's sessions. By default as a new session's first step
        sees it (so everything remembered counts); ``session=`` renders for that session instead: its own older
        blocks are shown, and what it remembered since its last sealed block is not (DSH still shows those turns)."""
        # A session id no turn has used is what a new session's first step asks with; rendering creates no row.
        params = {"namespace": self.namespace, "session": session or f"recall-{uuid.uuid4().hex}", "query": prompt}
        return ActivationResult.model_validate(await self._call("activation.render", params))

    async def forget(
        self, id: str, *, reason: str | None = None, erase: bool = False
    ) -> EventChangeResult | EraseToolResult:
        """Forget a memory (memory_forget): hidden everywhere until ``restore``. ``erase=True`` removes its text and
        every stored copy for good (that cannot be undone)."""
        arguments: dict[str, Any] = {"id": id, "erase": erase, **({"reason": reason} if reason is not None else {})}
        return (await self._tool("memory_forget", arguments, ForgetResult)).root

    async def restore(self, id: str) -> EventChangeResult:
        """Bring back a forgotten memory (memory_restore), or undo a merge maintenance made."""
        return await self._tool("memory_restore", {"id": id}, EventChangeResult)

    async def get(self, id: str) -> PageEventDetail:
        """A memory of this namespace as its owner sees it on the Memory page (``page.events.get``): its sources and
        its change history; unlike ``expand``, reading it records no retrieval."""
        data = await self._call("page.events.get", {"namespace": self.namespace, "id": id})
        entry = METHOD_TABLE.get("page.events.get")
        assert entry is not None  # loaded by the call
        return cast("PageEventDetail", entry.result.model_validate(data))

    async def expand(self, id: str, **options: Any) -> Expanded:
        """Read one thing in full, as the agent's expand tools do: an event (``evt_12``, memory_expand_event), a
        block (``blk_3``: ``level``, ``offset``, ``limit``; memory_expand_block) or a graph node (``nod_4``: ``as_of``,
        ``known_at``; memory_expand_graph_node). Each records a retrieval batch, as the agent's expansions do."""
        kind = id.partition("_")[0] if isinstance(id, str) else None
        if kind == "evt":
            return await self._tool("memory_expand_event", {"id": id, **options}, EventDetail)
        if kind == "blk":
            return await self._tool("memory_expand_block", {"id": id, **options}, BlockDetail)
        if kind == "nod":
            return await self._tool("memory_expand_graph_node", {"node": id, **options}, NodeDetail)
        raise invalid_params(f"expand takes an event, block or graph node id ('evt_12', 'blk_3', 'nod_4'), got {id!r}")

    # --- conversation -------------------------------------------------------------------------------------------

    async def capture_turn(
        self,
        user: str = "",
        assistant: str = "",
        *,
        tools: Sequence[ToolRecord | dict[str, Any]] = (),
        receipt: str | None = None,
        session: str | None = None,
        started_at: datetime | None = None,
        ended_at: datetime | None = None,
    ) -> CaptureResult:
        """Capture one conversation turn (``turn.capture``) as DSH's shim does: durable at once; every ``block_turns``
        turns seal a block, whose views and events the background jobs write. ``receipt`` makes a retry idempotent
        (default: a fresh one, so each call is a new turn)."""
        params: dict[str, Any] = {
            "namespace": self.namespace,
            "session": session or self.session,
            "receipt": receipt or f"py-{uuid.uuid4().hex}",
            "user": user,
            "assistant": assistant,
            "tools": [t.model_dump() if isinstance(t, BaseModel) else t for t in tools],
        }
        params.update({k: v for k, v in (("started_at", started_at), ("ended_at", ended_at)) if v is not None})
        return CaptureResult.model_validate(await self._call("turn.capture", params))

    async def settle(self, timeout: float = 60.0) -> dict[str, int]:  # noqa: ASYNC109
        """Wait until the database's job queue has nothing queued or running (``system.info`` counts, which it
        returns); TimeoutError after ``timeout`` seconds."""
        async with asyncio.timeout(timeout):
            while True:
                self._notices.changed.clear()
                jobs: dict[str, int] = (await self._call("system.info", {}))["counts"]["jobs"]
                if jobs["queued"] == 0 and jobs["running"] == 0:
                    return jobs
                with contextlib.suppress(TimeoutError):
                    async with asyncio.timeout(SETTLE_RECHECK_S):
                        await self._notices.changed.wait()

    # --- through the protocol table -----------------------------------------------------------------------------

    async def _call(self, name: str, params: dict[str, Any]) -> Any:
        """Run a protocol method as the sidecar's dispatcher does: its handler module imported with its first call
        (off the loop), then the one adapter with this app as the context. The result is the wire JSON."""
        if self._closed:
            raise RpcError(SHUTTING_DOWN, "this Memory is closed; open it again with Memory.open")
        self._busy += 1
        self._idle.clear()
        try:
            module = module_to_load(name)
            if module is not None:
                await asyncio.to_thread(load_methods, module)
            entry = METHOD_TABLE.get(name)
            assert entry is not None, name
            return await adapter.call(entry, self._app, params)
        finally:
            self._busy -= 1
            if not self._busy:
                self._idle.set()

    async def _tool(self, name: str, arguments: dict[str, Any], result: type[M]) -> M:
        """A memory tool through ``tools.call``, in this Memory's namespace and session, its result typed."""
        params = {"namespace": self.namespace, "session": self.session, "name": name, "arguments": arguments}
        return result.model_validate(await self._call("tools.call", params))


class _Opening:
    """``Memory.open(...)``: ``async with`` it (closed at the end of the block) or ``await`` it."""

    def __init__(self, start: Callable[[], Awaitable[Memory]]) -> None:
        self._start = start
        self._memory: Memory | None = None

    def __await__(self) -> Generator[Any, None, Memory]:
        return self._start().__await__()

    async def __aenter__(self) -> Memory:
        self._memory = await self._start()
        return self._memory

    async def __aexit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        if self._memory is not None:
            await self._memory.close()


async def _namespace_key(namespace: str | None, workspace: str | os.PathLike[str] | None) -> str:
    """The namespace key from ``namespace.resolve`` itself: global mode for a name, project mode for a folder."""
    entry = METHOD_TABLE.get("namespace.resolve")
    assert entry is not None  # registered by stratagate.rpc.methods, imported above
    resolved: dict[str, str] = await adapter.call(entry, None, _resolve_params(namespace, workspace))
    return resolved["namespace"]


def _resolve_params(namespace: str | None, workspace: str | os.PathLike[str] | None) -> dict[str, Any]:
    if (namespace is None) == (workspace is None):
        raise invalid_params("Memory.open needs namespace=NAME or workspace=PATH (exactly one)")
    if workspace is None:
        return {"mode": "global", "name": _name("namespace", namespace)}
    try:
        return {"mode": "project", "cwd": os.path.abspath(os.fspath(workspace))}
    except (TypeError, ValueError) as exc:
        raise invalid_params(f"invalid params: workspace: {exc}") from exc


def _name(field: str, value: object) -> str:
    """``value`` checked as the protocol checks a namespace or session name (and redacted like one)."""
    try:
        name: str = _NAME.validate_python(value)
    except ValidationError as exc:
        raise invalid_params(f"invalid params: {field}: {exc.errors()[0]['msg']}") from exc
    return name


def _settings(path: str | os.PathLike[str] | None, given: Settings | None) -> Settings:
    """``given`` or the environment's settings (as ``serve`` reads them), on ``path``; zero-model without a direct
    model route (the host route needs DSH)."""
    from stratagate.context.settings import parse_config

    settings = given if given is not None else load_settings()
    update: dict[str, Any] = {"db": Path(os.fspath(path))} if path is not None else {}
    if not settings.model_base_url:
        update["model_route"] = "none"
    settings = settings.model_copy(update=update)
    parse_config(settings.context_config)  # an invalid context configuration is refused, as `serve` refuses it
    return settings
