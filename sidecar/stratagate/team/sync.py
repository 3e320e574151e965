"""The team sync: one background task per sidecar that pushes the outbox and pulls the others' changes.

It connects with asyncpg, brings the server's tables up to date, LISTENs on the team channel, then loops: push every
pending outbox operation (in batches, each one server transaction), pull every shared namespace from its cursor, and
wait until a local change (the outbox's commit signal), a server notification or ``team_poll_seconds`` wakes it. Any
failure (the server down, the network, a bad DSN) is recorded in ``team_state`` without the DSN's secrets, and the
loop reconnects with a capped backoff; memory keeps working locally and the outbox keeps every change until the
server has it. Nothing here decides what a change means: ``team/server.py`` does on the server, ``team/apply.py``
here.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from typing import Any

from stratagate.erase import erase_subject
from stratagate.errors import Invalid
from stratagate.events import team
from stratagate.ids import make
from stratagate.safety.dsn import shown
from stratagate.safety.secrets import redact_shown
from stratagate.storage import lookup
from stratagate.storage.db import Database
from stratagate.team import apply, server, server_schema

log = logging.getLogger("stratagate.team")

PUSH_BATCH = 200
PULL_BATCH = 500
APPLY_BATCH = 20
BACKOFF_CAP = 10.0  # after an outage the server is found again within this long, or at once on a local change


class TeamSync:
    def __init__(self, db: Database, dsn: str, member: str, *, poll_seconds: float = 5.0, max_attempts: int = 5):
        self.db = db
        self.dsn = dsn
        self.member = member.strip()
        self.poll_seconds = poll_seconds
        self.max_attempts = max_attempts
        self._wake = asyncio.Event()
        self._task: asyncio.Task[None] | None = None
        self._conn: Any = None
        self.connected = False
        self.rounds = 0  # the number of the last round completed (a failed round keeps it)
        self._started = 0  # the number of the last round begun
        self._round_done = asyncio.Condition()
        self._errored = False

    async def start(self) -> None:
        async with self.db.transaction() as conn:
            await team.configure(conn, self.member, shown(self.dsn))
        self.db.listen(team.TEAM_CHANGED, lambda _arg: self._wake.set())
        self._task = asyncio.create_task(self._run(), name="team-sync")

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await self._task
            self._task = None
        await self._close()

    def wake(self) -> None:
        self._wake.set()

    async def round(self) -> int:
        """Wake the sync and wait for a whole round that began after this call (push, then pull to the server's
        head): what was committed here before is on the server, and what the server had then is here. Rounds are
        numbered as they begin; one that fails (the server went away mid-round) never completes, and a later one
        that completes counts. Returns the number of the round completed."""
        target = self._started + 1
        self._wake.set()
        async with self._round_done:
            await self._round_done.wait_for(lambda: self.rounds >= target)
        return self.rounds

    async def _close(self) -> None:
        conn, self._conn, self.connected = self._conn, None, False
        if conn is not None:
            with contextlib.suppress(Exception):
                await asyncio.wait_for(conn.close(), 5)

    async def _connect(self) -> Any:
        import asyncpg  # only a sidecar with a team database imports it

        conn = await asyncpg.connect(self.dsn, timeout=10)
        try:
            await server_schema.ensure(conn)
            await conn.add_listener(server_schema.NOTIFY_CHANNEL, lambda *_args: self._wake.set())
        except BaseException:
            await conn.close()
            raise
        return conn

    async def _run(self) -> None:
        delay = 1.0
        while True:
            try:
                if self._conn is None or self._conn.is_closed():
                    self._conn = await self._connect()
                    self.connected = True
                    log.info("team sync connected to %s", shown(self.dsn))
                self._wake.clear()  # before the round: a change committed during it wakes the next one
                self._started += 1
                number = self._started
                await self.sync_once(self._conn)
                if self._errored:  # the first whole round after a failure: the error is over
                    async with self.db.transaction() as local:
                        await team.record_sync(local, cleared=True)
                    self._errored = False
                async with self._round_done:
                    self.rounds = number
                    self._round_done.notify_all()
                delay = 1.0
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(self._wake.wait(), self.poll_seconds)
            except asyncio.CancelledError:
                raise
            except Exception as exc:  # the server, the network, the DSN: recorded, retried; memory works locally
                await self._failed(exc)
                await self._close()
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(self._wake.wait(), delay)
                self._wake.clear()
                delay = min(delay * 2, BACKOFF_CAP)

    async def _failed(self, exc: Exception) -> None:
        # The DSN may be quoted by a driver error: its secrets never reach the log or the database.
        text = redact_shown(str(exc).replace(self.dsn, shown(self.dsn)))[:500]
        message = f"{type(exc).__name__}: {text}"
        self._errored = True
        log.warning("team sync failed (%s); memory works locally, the outbox keeps every change", message)
        with contextlib.suppress(Exception):
            async with self.db.transaction() as conn:
                await team.record_sync(conn, error=message)

    async def sync_once(self, conn: Any) -> dict[str, int]:
        """One round: push everything pending, then pull every shared namespace up to the server's head."""
        pushed = await self.push(conn)
        pulled = await self.pull(conn)
        return {"pushed": pushed, "pulled": pulled}

    async def push(self, conn: Any) -> int:
        st = await team.state(self.db.reader)
        me = server.Identity(self.member, st.replica)
        total = 0
        while True:
            ops = await team.pending(self.db.reader, PUSH_BATCH)
            if not ops:
                break
            projects = {ns: await team.project_of(self.db.reader, ns) for ns in {op.namespace_id for op in ops}}
            await server.push(conn, me, [(op, projects[op.namespace_id]) for op in ops])
            async with self.db.transaction() as local:  # after the server's commit: a crash in between re-pushes
                await team.sent(local, [op.id for op in ops])   # them, and the server skips their op ids
                await team.record_sync(local, pushed=True)
            total += len(ops)
        return total

    async def pull(self, conn: Any) -> int:
        st = await team.state(self.db.reader)
        shared = await team.shared_namespaces(self.db.reader)
        done = await team.cursors(self.db.reader)
        total = 0
        for namespace_id, project in shared:
            after = done.get(namespace_id, 0)
            while True:
                batch = await server.changes(conn, project, after, PULL_BATCH)
                if not batch:
                    break
                await self._apply(namespace_id, batch, st.replica)
                after = batch[-1].seq
                total += len(batch)
        if total:
            async with self.db.transaction() as local:
                await team.record_sync(local, pulled=True)
        return total

    async def _apply(self, namespace_id: int, batch: list[server.Change], replica: str) -> None:
        """Apply ``batch`` in order, up to APPLY_BATCH changes per local transaction with their cursor step (so each
        is applied once, and a capture waits for at most one short transaction); an erase runs on its own."""
        i = 0
        while i < len(batch):
            erase = None
            with team.applying_from_server():
                async with self.db.transaction() as local:
                    for change in batch[i:i + APPLY_BATCH]:
                        if await apply.apply(local, namespace_id, change, replica) == "erase":
                            erase = change
                            break
                        await team.advance(local, namespace_id, change.seq)
                        i += 1
            if erase is not None:
                await self._erase(namespace_id, erase)
                i += 1

    async def _erase(self, namespace_id: int, change: server.Change) -> None:
        event_id = await team.event_of(self.db.reader, change.uid)
        name = await lookup.namespace_name(self.db.reader, namespace_id)
        if event_id is not None and name is not None:
            with team.applying_from_server(), contextlib.suppress(Invalid):  # Invalid: erased already (a crash
                await erase_subject(self.db, name, make("evt", event_id), team.TEAM_ACTOR,  # after the erase,
                                    max_attempts=self.max_attempts)  # before the cursor moved)
        async with self.db.transaction() as local:
            await team.saw_version(local, change.uid, change.version)
            await team.advance(local, namespace_id, change.seq)

    async def status(self) -> dict[str, Any]:
        return await status_of(self.db.reader, self._conn if self.connected else None) | {
            "connected": self.connected, "rounds": self.rounds}


async def status_of(local: Any, conn: Any = None) -> dict[str, Any]:
    """What ``stratagate team status`` and the Memory page show: the member, the server (no secrets), the outbox's
    size and oldest change, the last push and pull, the last error, and (with a server connection) how many
    server changes each shared project has not pulled yet."""
    st = await team.state(local)
    size, oldest = await team.outbox_size(local)
    out: dict[str, Any] = {
        "enabled": st.member is not None, "member": st.member, "server": st.server, "replica": st.replica,
        "outbox": size, "outbox_oldest": oldest, "pushed_at": st.pushed_at, "pulled_at": st.pulled_at,
        "last_error": st.last_error, "error_at": st.error_at,
    }
    if conn is not None:
        shared = await team.shared_namespaces(local)
        cursors = await team.cursors(local)
        with contextlib.suppress(Exception):
            heads = await server.last_seq(conn, sorted({p for _, p in shared}))
            out["behind"] = {p: max(0, heads.get(p, 0) - cursors.get(ns, 0)) for ns, p in shared if p in heads}
    return out
