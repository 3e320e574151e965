"""Build (and cache) the scale bench's databases.

Events: in-process, through admission's bulk path (``events/admit.py`` ``admit_new``: the redaction, rows, search
terms, audit rows and sources memory_remember writes, each kind in one statement per batch, then memory_remember's
inline projection ``graph.projection.project_event`` + ``mark_projected`` per event), ``BATCH`` memories per
transaction. Only the JSON-RPC hop and admission's duplicate checks are skipped: the generator never repeats a memory
(``admit_new`` refuses a repeated fingerprint) and every text carries its own numbers, so no two are near duplicates
either. ``--per-row`` builds through ``admit`` instead, one memory at a time (what memory_remember does; the
bulk test compares the two). 1k and 10k are prefixes of the 100k stream, snapshotted on the way.

Turns: a real ``stratagate serve`` over stdio, ``WINDOW`` captures in flight at once (the spool replay path), the
host answering block summaries at once; the build waits until the job queue is empty, so a copy starts quiet.

Cached under bench/.cache/ keyed by the generator version and the schema version; measurements run on copies.
"""

from __future__ import annotations

import asyncio
import json
import shutil
import sys
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tests"))
sys.path.insert(0, str(REPO / "sidecar"))

from conftest import summary_arguments  # noqa: E402
from scale_workload import GENERATOR_VERSION, history_turn, memories  # noqa: E402
from stratagate.events.admit import Candidate, Options, admit, admit_new  # noqa: E402
from stratagate.events.store import Source  # noqa: E402
from stratagate.graph.projection import mark_projected, project_event  # noqa: E402
from stratagate.storage.db import Database  # noqa: E402
from stratagate.storage.lookup import ensure_namespace, ensure_session  # noqa: E402
from stratagate.storage.schema import SCHEMA_VERSION  # noqa: E402
from stratagate.wiring import register_hooks  # noqa: E402
from support.sidecar import SidecarClient  # noqa: E402

register_hooks()  # the graph follows event status, as in the app

CACHE = REPO / "bench" / ".cache"
NS = "project:scale:0123456789abcdef"
WRITER = "writer"
BATCH = 250
WINDOW = 64
SERVE_TURNS = 10000
TURN_BATCH = 200
HISTORY_BLOCK_TURNS = 50
START = datetime(2026, 1, 5, 9, 0, tzinfo=UTC)


def cache_path(kind: str, n: int) -> Path:
    return CACHE / f"{kind}-{n}-g{GENERATOR_VERSION}-s{SCHEMA_VERSION}.db"


async def cached(kind: str, n: int) -> Path | None:
    """The cached database, or one cached under an older schema migrated by the sidecar's own migrations (what an
    upgrade does to a user's file; the rows stay the generator's)."""
    path = cache_path(kind, n)
    if path.exists():
        return path
    older = sorted(CACHE.glob(f"{kind}-{n}-g{GENERATOR_VERSION}-s*.db"), key=lambda p: int(p.stem.rsplit("-s")[1]))
    if not older:
        return None
    tmp = path.with_suffix(".migrating")
    shutil.copyfile(older[-1], tmp)
    db = Database(tmp)
    await db.open()
    await db.close()
    log(f"migrated {older[-1].name} to schema {SCHEMA_VERSION}")
    tmp.replace(path)
    return path


def log(msg: str) -> None:
    print(f"[build {time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


def _snapshot(src: Path, dst: Path) -> None:
    tmp = dst.with_suffix(".tmp")
    shutil.copyfile(src, tmp)
    tmp.replace(dst)


async def _project_now(conn, event, explicit):  # memory_remember's projector (tools/event_tools.py)
    graph = await project_event(conn, event, "agent", explicit_targets=explicit)
    await mark_projected(conn, event.id, graph)
    return graph


def candidates(chunk: list[dict], first: int) -> list[Candidate]:
    """memory_remember's candidates for generated memories ``first``, ``first + 1``, …"""
    return [Candidate(statement=m["text"], type=m["type"], mentioned_at=START + timedelta(minutes=first + k),
                      sources=[Source(call_id=f"scale-{first + k}", quote=m["text"])]) for k, m in enumerate(chunk)]


async def write_events(db: Database, chunk: list[dict], first: int, *, per_row: bool = False) -> None:
    """One transaction of generated memories, as memory_remember stores them (bulk, or ``per_row`` through admit)."""
    async with db.transaction() as conn:
        ns = await ensure_namespace(conn, NS)
        sess, _ = await ensure_session(conn, ns, WRITER)
        options = Options(
            namespace_id=ns, session_id=sess, origin="remember", actor="agent", on_tombstone="refuse",
            on_exact_duplicate="keep", unknown_target="error", projector=_project_now,
        )
        if not per_row:
            await admit_new(conn, candidates(chunk, first), options)
            return
        for c in candidates(chunk, first):
            outcome = (await admit(conn, [c], options)).outcomes[0]
            if outcome.result != "inserted":  # the generator's job: every memory is new
                raise AssertionError(f"generator repeated a memory: {c.statement!r} ({outcome.result})")


async def build_events(sizes: list[int], *, per_row: bool = False) -> dict[int, Path]:
    """Databases with the first n generated memories for every n in ``sizes`` (cached)."""
    want = {n: cache_path("events", n) for n in sizes}
    if all([await cached("events", n) for n in sizes]):
        return want
    CACHE.mkdir(parents=True, exist_ok=True)
    top = max(sizes)
    work = CACHE / f"building-events-{top}.db"
    for p in work.parent.glob(work.name + "*"):
        p.unlink()
    db = Database(work)
    await db.open()
    t0 = time.perf_counter()
    stream = memories(top)
    done = 0
    try:
        while done < top:
            stop = min(n for n in want if n > done)  # a size that is not a multiple of BATCH is snapshotted too
            chunk = [next(stream) for _ in range(min(BATCH, stop - done))]
            await write_events(db, chunk, done, per_row=per_row)
            done += len(chunk)
            if done in want:
                await db.close()
                _snapshot(work, want[done])
                await db.open()
            if done % 5000 == 0:
                log(f"events {done}/{top}: {done / (time.perf_counter() - t0):.0f}/s")
    finally:
        await db.close()
    for p in work.parent.glob(work.name + "*"):
        p.unlink()
    return want


async def summary_host(method: str, params: dict) -> dict:
    tool = params["tool"]
    args = summary_arguments(tool["name"], {"messages": params["messages"]})
    return {"text": "", "finish_reason": "tool_calls",
            "tool_calls": [{"name": tool["name"], "arguments": json.dumps(args)}]}


async def wait_jobs(client: SidecarClient, timeout: float = 1800) -> None:  # noqa: ASYNC109
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        jobs = (await client.call("system.info", timeout=120))["counts"]["jobs"]
        if jobs["queued"] + jobs["running"] == 0:
            return
        await asyncio.sleep(0.5)
    raise TimeoutError("jobs did not drain")


async def capture_window(client: SidecarClient, turns: list[dict], window: int = WINDOW) -> float:
    """Send ``turns`` with at most ``window`` in flight; seconds taken."""
    t0 = time.perf_counter()
    inflight: set[asyncio.Future] = set()
    for params in turns:
        if len(inflight) >= window:
            done, inflight = await asyncio.wait(inflight, return_when=asyncio.FIRST_COMPLETED)
            for f in done:
                if "error" in f.result():
                    raise RuntimeError(f.result()["error"])
        inflight.add(await client.request("turn.capture", params))
    for f in asyncio.as_completed(inflight):
        if "error" in (r := await f):
            raise RuntimeError(r["error"])
    return time.perf_counter() - t0


async def _capture_in_process(path: Path, first: int, last: int) -> None:
    """Turns ``first..last`` through turn.capture's own transaction body (capture/store.py ``_capture``: redaction,
    messages, search terms, sealing, audit) with ``TURN_BATCH`` turns per transaction: no RPC hop, no fsync per
    turn (100k pipelined captures through main's sidecar take ~30 min on a loaded machine)."""
    from stratagate.capture.models import CaptureParams
    from stratagate.capture.store import _capture
    from stratagate.config import load_settings
    from stratagate.tokens import count_tokens

    settings = load_settings({"db": path, "block_turns": HISTORY_BLOCK_TURNS}, environ={})
    db = Database(path)
    await db.open()
    t0 = time.perf_counter()
    try:
        for start in range(first, last + 1, TURN_BATCH):
            async with db.transaction() as conn:
                for i in range(start, min(start + TURN_BATCH, last + 1)):
                    await _capture(conn, settings, CaptureParams(**history_turn(i, NS, "history")), count_tokens)
            if (start - first) % 10000 < TURN_BATCH:
                log(f"turns {start}/{last}: {(start - first) / (time.perf_counter() - t0 + 1e-9):.0f}/s in-process")
    finally:
        await db.close()


async def build_turns(sizes: list[int], env: dict[str, str]) -> dict[int, Path]:
    """Databases with n captured history turns (one session) for every n in ``sizes`` (cached). Up to
    ``SERVE_TURNS`` through a real sidecar, 64 in flight; beyond, in-process (``_capture_in_process``) with blocks
    of ``HISTORY_BLOCK_TURNS`` (fewer block summaries to run; a capture's cost depends on its own session, not on
    the size of old blocks); then a real sidecar runs the queued block summaries, so a copy starts quiet."""
    want = {n: cache_path("turns", n) for n in sizes}
    if all([await cached("turns", n) for n in sizes]):
        return want
    CACHE.mkdir(parents=True, exist_ok=True)
    work = CACHE / f"building-turns-{max(sizes)}.db"  # (cached() above migrated any older-schema copies)
    for p in work.parent.glob(work.name + "*"):
        p.unlink()
    done = 0
    for n in sorted(sizes):
        if want[n].exists():  # a smaller size cached: grow from it
            shutil.copyfile(want[n], work)
            done = n
            continue
        served = min(n, max(done, SERVE_TURNS))
        if n > served:
            await _capture_in_process(work, served + 1, n)
        client = await SidecarClient.start(work, env=env, host_handler=summary_host)
        try:
            if served > done:
                turns = [history_turn(i, NS, "history") for i in range(done + 1, served + 1)]
                took = await capture_window(client, turns)
                log(f"turns {done}→{served}: {(served - done) / took:.0f}/s pipelined")
            log(f"{n} turns: waiting for block summaries")
            await wait_jobs(client)
        finally:
            await client.close()
        _snapshot(work, want[n])
        done = n
    for p in work.parent.glob(work.name + "*"):
        p.unlink()
    return want


if __name__ == "__main__":  # time the builders alone: python bench/scale_build.py events 2000
    kind, n = sys.argv[1], int(sys.argv[2])
    t = time.perf_counter()
    if kind == "events":
        asyncio.run(build_events([n]))
    else:
        asyncio.run(build_turns([n], {"STRATAGATE_DENSE": "off"}))
    log(f"{kind} {n}: {time.perf_counter() - t:.1f} s")
