"""Stored embeddings, their background computation, and nearest-neighbour search (the dense channel's storage side).

What gets a vector (model ``dense.MODEL_NAME``), per namespace:

- every message: the text ``capture/store.py`` indexes for BM25 (content, or tool name + arguments + result);
- every event: title, summary and tags;
- every graph node: name, aliases and category (re-embedded when that text changes, e.g. a new alias).

How it is computed: one ``embedding`` job per namespace (``jobs`` row subject = namespace id), a stage of
``jobs/pipeline.py``. ``DenseIndex.notice`` is a fire-and-forget request made *after* a write that added messages or
events has committed (the ``ITEMS_ADDED`` after-commit signal of capture and ``events.store.insert_event``; the
reply does not wait for it), at start-up for any backlog, and by a search that finds one; extraction and projection
jobs return an embedding follow-up (``queue_follow_up``). A job running in this process is
told in memory; a queued job needs nothing; otherwise one short transaction bumps ``embedding_requests.requested``
and (re-)queues the job. The job embeds what has no vector yet in batches (``encode`` runs in a worker thread; each
batch is one short write transaction) and finishes only when no request arrived during its last pass, so nothing
written while it ran is left behind. A run stops after ``RUN_LIMIT`` items and re-queues itself behind other due
jobs. Messages and events are append-only, so their backlog is "ids after the namespace's cursor" (an index range);
nodes are compared by a hash of their text.

When the channel is off or not installed, nothing is queued and every search returns no dense hits;
``DenseIndex.info()`` (system.info ``dense``) says why.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import json
import logging
import time
from collections import OrderedDict
from collections.abc import Callable, Iterable
from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING, Any

from stratagate.jobs.pipeline import DEFAULT_MAX_ATTEMPTS, EMBEDDING, FollowUp, StageDeps
from stratagate.jobs.queue import JobRow, enqueue, mark_done
from stratagate.jobs.runner import PermanentJobError
from stratagate.search import dense
from stratagate.storage import lookup
from stratagate.storage.db import JOBS_QUEUED, Database, on_commit
from stratagate.storage.sqlite import Connection, caches
from stratagate.text.messages import search_text
from stratagate.timeutil import now_iso

if TYPE_CHECKING:
    import numpy as np

log = logging.getLogger("stratagate.dense")

__all__ = ["EMBEDDING"]  # re-exported: declared in jobs/pipeline.py
KINDS = ("message", "event", "node")
BATCH = 64  # items per encode call and write transaction
RUN_LIMIT = 1024  # items per job run (~15 s on one core); then the job re-queues itself behind other due jobs
MAX_CHARS = 8000  # text cut before tokenising: the model reads only the first 256 word pieces anyway
QUERY_CACHE = 512  # query texts whose vectors are kept (1.5 KB each): an agent repeats and refines its searches

# One thread for query encodings and one for the embedding job's batches: a query never waits behind a batch of 64
# long texts, and two long-lived threads keep two malloc arenas instead of one per pooled thread (the encoder's
# activations are tens of MB; every arena kept its high-water mark).
_executors: dict[str, ThreadPoolExecutor] = {}


def _encode_batch(encoder: Any, texts: list[str]) -> Any:
    """The embedding job's encode, in its thread: then the batch's activations go back to the system."""
    try:
        return encoder.encode(texts)
    finally:
        dense.release_memory()


def _run_in(name: str, fn: Callable[..., Any], *args: Any) -> asyncio.Future[Any]:
    pool = _executors.get(name)
    if pool is None:
        pool = _executors.setdefault(name, ThreadPoolExecutor(max_workers=1, thread_name_prefix=f"dense-{name}"))
    return asyncio.get_running_loop().run_in_executor(pool, fn, *args)


# --- texts ---------------------------------------------------------------------------------------------------------


def message_text(row: Any) -> str:
    return search_text(dict(row))[:MAX_CHARS]


def event_text(title: str, summary: str, tags: str | list[str]) -> str:
    tag_list = json.loads(tags) if isinstance(tags, str) else tags
    parts = [title, summary, ", ".join(str(t) for t in tag_list)]
    return "\n".join(p for p in parts if p)[:MAX_CHARS]


def node_text(name: str, aliases: Iterable[str], category: str | None) -> str:
    names = list(dict.fromkeys([name, *aliases]))
    return (", ".join(names) + (f" ({category})" if category else ""))[:MAX_CHARS]


def text_sha(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]


def pack(vector: Any) -> bytes:
    import numpy as np

    return np.asarray(vector, dtype="<f4").reshape(-1).tobytes()


def unpack(blob: bytes) -> np.ndarray:
    import numpy as np

    return np.frombuffer(blob, dtype="<f4")


# --- backlog ---------------------------------------------------------------------------------------------------------


async def _cursor(conn: Connection, namespace_id: int, kind: str) -> int:
    row = await (
        await conn.execute(
            "SELECT last_id FROM embedding_cursors WHERE namespace_id = ? AND kind = ? AND model = ?",
            (namespace_id, kind, dense.MODEL_NAME),
        )
    ).fetchone()
    return 0 if row is None else int(row[0])


async def _stale_nodes(conn: Connection, namespace_id: int) -> list[tuple[int, str]]:
    """Nodes whose current text has no vector (new nodes, or the name, aliases or category changed)."""
    nodes = await conn.execute_fetchall(
        "SELECT n.id, n.name, n.category, e.text_sha FROM graph_nodes n LEFT JOIN embeddings e"
        " ON e.kind = 'node' AND e.item_id = n.id AND e.model = ? WHERE n.namespace_id = ? ORDER BY n.id",
        (dense.MODEL_NAME, namespace_id),
    )
    if not nodes:
        return []
    alias_rows = await conn.execute_fetchall(
        "SELECT node_id, alias FROM graph_aliases WHERE namespace_id = ? ORDER BY node_id, created_at, alias",
        (namespace_id,),
    )
    aliases: dict[int, list[str]] = {}
    for node_id, alias in alias_rows:
        aliases.setdefault(int(node_id), []).append(alias)
    out = []
    for node_id, name, category, sha in nodes:
        text = node_text(name, aliases.get(int(node_id), []), category)
        if text.strip() and sha != text_sha(text):
            out.append((int(node_id), text))
    return out


async def pending_items(
    conn: Connection, namespace_id: int, kind: str, limit: int
) -> list[tuple[int, str]]:
    """Up to ``limit`` (item id, text) of ``kind`` in the namespace that have no vector yet, oldest first."""
    if kind == "node":
        return (await _stale_nodes(conn, namespace_id))[:limit]
    after = await _cursor(conn, namespace_id, kind)
    if kind == "message":
        rows = await conn.execute_fetchall(
            "SELECT id, role, content, tool_name, tool_arguments, tool_result FROM messages"
            " INDEXED BY messages_by_ns_id WHERE namespace_id = ? AND id > ? ORDER BY id LIMIT ?",
            (namespace_id, after, limit),
        )
        return [(int(r["id"]), message_text(r)) for r in rows]
    if kind == "event":
        rows = await conn.execute_fetchall(
            "SELECT id, title, summary, tags FROM events INDEXED BY events_by_ns_id"
            " WHERE namespace_id = ? AND id > ? ORDER BY id LIMIT ?",
            (namespace_id, after, limit),
        )
        return [(int(r["id"]), event_text(r["title"], r["summary"], r["tags"])) for r in rows]
    raise ValueError(f"unknown kind {kind!r}")


async def pending_by_kind(conn: Connection, namespace_id: int | None = None) -> dict[str, int]:
    """How many messages, events and nodes (of one namespace, or all) have no vector yet."""
    if namespace_id is None:
        spaces = await lookup.all_namespace_ids(conn)
    else:
        spaces = [namespace_id]
    counts = dict.fromkeys(KINDS, 0)
    for ns in spaces:
        for kind, table in (("message", "messages"), ("event", "events")):
            after = await _cursor(conn, ns, kind)
            (row,) = await conn.execute_fetchall(
                f"SELECT COUNT(*) FROM {table} INDEXED BY {table}_by_ns_id WHERE namespace_id = ? AND id > ?",
                (ns, after),
            )
            counts[kind] += int(row[0])
        counts["node"] += len(await _stale_nodes(conn, ns))
    return counts


async def pending_count(conn: Connection, namespace_id: int | None = None) -> int:
    """Items (messages, events, nodes) of one namespace, or all, that have no vector yet."""
    return sum((await pending_by_kind(conn, namespace_id)).values())


async def _has_new_items(conn: Connection, namespace_id: int) -> bool:
    """Cheap check (two index probes): messages or events after the namespace's cursors."""
    for kind, table in (("message", "messages"), ("event", "events")):
        after = await _cursor(conn, namespace_id, kind)
        (row,) = await conn.execute_fetchall(
            f"SELECT EXISTS(SELECT 1 FROM {table} INDEXED BY {table}_by_ns_id WHERE namespace_id = ? AND id > ?)",
            (namespace_id, after),
        )
        if row[0]:
            return True
    return False


async def store_vectors(
    conn: Connection, namespace_id: int, kind: str, items: list[tuple[int, str]], vectors: Any
) -> int:
    """Inside the caller's transaction: write the vectors (row i for items[i]; None for a blank text, which gets
    no vector) and move the namespace's cursor past the items. The number of vectors written."""
    stamp = now_iso()
    written = 0
    for (item_id, text), vector in zip(items, vectors, strict=True):
        if vector is None:
            continue
        blob = pack(vector)
        # REPLACE (not an upsert): a new row id, so cached readers see the new vector.
        await conn.execute(
            "INSERT OR REPLACE INTO embeddings(kind, item_id, namespace_id, model, dim, vector, text_sha, created_at)"
            " VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
            (kind, item_id, namespace_id, dense.MODEL_NAME, len(blob) // 4, blob, text_sha(text), stamp),
        )
        written += 1
    if kind != "node" and items:
        await conn.execute(
            "INSERT INTO embedding_cursors(namespace_id, kind, model, last_id, updated_at) VALUES (?, ?, ?, ?, ?)"
            " ON CONFLICT(namespace_id, kind, model) DO UPDATE SET last_id = MAX(last_id, excluded.last_id),"
            " updated_at = excluded.updated_at",
            (namespace_id, kind, dense.MODEL_NAME, max(i for i, _ in items), stamp),
        )
    return written


async def request_embedding(
    conn: Connection, namespace_id: int, max_attempts: int = DEFAULT_MAX_ATTEMPTS
) -> bool:
    """Inside the caller's transaction: note new work for the namespace and make sure its job will run.

    True when the job was queued (new, or re-queued because it was done; the runner is woken after the commit). A
    queued or running job serves the request itself; a failed one waits for ``jobs.retry`` (its error is in
    system.info).
    """
    await conn.execute(
        "INSERT INTO embedding_requests(namespace_id, requested, served, updated_at) VALUES (?, 1, 0, ?)"
        " ON CONFLICT(namespace_id) DO UPDATE SET requested = requested + 1, updated_at = excluded.updated_at",
        (namespace_id, now_iso()),
    )
    row = await (
        await conn.execute("SELECT id, status FROM jobs WHERE kind = ? AND subject_id = ?", (EMBEDDING, namespace_id))
    ).fetchone()
    if row is None:
        await enqueue(conn, namespace_id, EMBEDDING, namespace_id, max_attempts)
        return True
    if row["status"] == "done":
        on_commit(conn, JOBS_QUEUED)
        await conn.execute(
            "UPDATE jobs SET status = 'queued', attempts = 0, next_run_at = ?, last_error = NULL, updated_at = ?"
            " WHERE id = ?",
            (time.time(), now_iso(), row["id"]),
        )
        return True
    return False


async def _requested(conn: Connection, namespace_id: int) -> int:
    row = await (
        await conn.execute("SELECT requested FROM embedding_requests WHERE namespace_id = ?", (namespace_id,))
    ).fetchone()
    return 0 if row is None else int(row[0])


async def queue_follow_up(conn: Connection, follow_up: FollowUp, max_attempts: int) -> None:
    """The pipeline's queue function of the ``embedding`` stage: requests coalesce into the namespace's one job.
    Nothing is queued while the channel is off or not installed (as for ``DenseIndex.notice``)."""
    if DenseIndex.usable():
        await request_embedding(conn, follow_up.namespace_id, max_attempts)


def job_handler(deps: StageDeps) -> Callable[[JobRow], Any]:
    """The ``embedding`` stage's handler (declared in jobs/pipeline.py): the app's dense channel."""
    return deps.dense.run_job


# --- nearest neighbours ----------------------------------------------------------------------------------------------


class _Matrix:
    """The vectors of one (namespace, kind, model) held in memory, refreshed by embeddings.id (ids only grow)."""

    def __init__(self) -> None:
        import numpy as np

        self.ids = np.zeros(0, dtype=np.int64)
        self.vectors = np.zeros((0, dense.DIM), dtype=np.float32)
        self.size = 0
        self.position: dict[int, int] = {}
        self.last_row = 0

    def add(self, item_ids: list[int], block: np.ndarray) -> None:
        """Put rows in (a replaced item's vector overwrites its old row). Synchronous: no await can interleave."""
        import numpy as np

        fresh, fresh_rows, old_rows, old_at = [], [], [], []
        for row, item_id in enumerate(item_ids):
            at = self.position.get(item_id)
            if at is None:
                fresh.append(item_id)
                fresh_rows.append(row)
            else:
                old_rows.append(row)
                old_at.append(at)
        if old_rows:
            self.vectors[old_at] = block[old_rows]
        if not fresh:
            return
        needed = self.size + len(fresh)
        if needed > len(self.ids):
            capacity = max(64, needed, 2 * len(self.ids))
            ids = np.zeros(capacity, dtype=np.int64)
            vectors = np.zeros((capacity, dense.DIM), dtype=np.float32)
            ids[: self.size] = self.ids[: self.size]
            vectors[: self.size] = self.vectors[: self.size]
            self.ids, self.vectors = ids, vectors
        self.ids[self.size : needed] = fresh
        self.vectors[self.size : needed] = block[fresh_rows]
        for offset, item_id in enumerate(fresh):
            self.position[item_id] = self.size + offset
        self.size = needed

    def remove(self, item_ids: Iterable[int]) -> None:
        """Drop the vectors of deleted items (erase, scrub, a deleted namespace). New arrays, not an in-place
        shuffle: a scan running in a worker thread keeps reading the old ones."""
        import numpy as np

        gone = {self.position[i] for i in item_ids if i in self.position}
        if not gone:
            return
        keep = np.ones(self.size, dtype=bool)
        keep[list(gone)] = False
        self.ids = self.ids[: self.size][keep].copy()
        self.vectors = self.vectors[: self.size][keep].copy()
        self.size = len(self.ids)
        self.position = {int(item_id): at for at, item_id in enumerate(self.ids.tolist())}


_MATRICES = f"{__name__}.matrices"
"""This module's entry in the connection's ``caches`` (storage/sqlite.py): (namespace, kind, model) → matrix."""


async def _matrix(conn: Connection, namespace_id: int, kind: str) -> _Matrix:
    import numpy as np

    per_conn: dict[tuple[int, str, str], _Matrix] = caches(conn).setdefault(_MATRICES, {})
    key = (namespace_id, kind, dense.MODEL_NAME)
    matrix = per_conn.get(key)
    if matrix is None:
        matrix = per_conn[key] = _Matrix()
    cursor = await conn.execute(
        "SELECT id, item_id, vector FROM embeddings INDEXED BY embeddings_by_ns"
        " WHERE namespace_id = ? AND kind = ? AND model = ? AND id > ? AND dim = ? ORDER BY id",
        (namespace_id, kind, dense.MODEL_NAME, matrix.last_row, dense.DIM),
    )
    try:
        # In chunks, so a first load of a large namespace never holds all BLOBs twice. A concurrent refresh may
        # add the same rows: add() overwrites by item id, so that is harmless.
        while rows := list(await cursor.fetchmany(4096)):
            block = np.frombuffer(b"".join(r[2] for r in rows), dtype="<f4").reshape(len(rows), dense.DIM)
            matrix.add([int(r[1]) for r in rows], block)
            matrix.last_row = max(matrix.last_row, int(rows[-1][0]))
    finally:
        await cursor.close()
    return matrix


def _top(
    ids: np.ndarray, vectors: np.ndarray, query: np.ndarray, limit: int, allowed: np.ndarray | None
) -> list[tuple[int, float]]:
    import numpy as np

    if allowed is not None:
        keep = np.isin(ids, allowed)
        ids, vectors = ids[keep], vectors[keep]
    if len(ids) == 0:
        return []
    scores = vectors @ query
    k = min(limit, len(ids))
    head = np.argpartition(-scores, k - 1)[:k] if k < len(ids) else np.arange(len(ids))
    ranked = sorted(head.tolist(), key=lambda i: (-float(scores[i]), int(ids[i])))
    return [(int(ids[i]), float(scores[i])) for i in ranked]


async def nearest(
    reader_conn: Connection,
    namespace_id: int,
    kind: str,
    query_vector: Any,
    limit: int,
    allowed_ids: set[int] | None = None,
) -> list[tuple[int, float]]:
    """The ``limit`` items of ``kind`` in the namespace closest to ``query_vector``: ``[(item_id, cosine)]``, best
    first (ties by id). ``allowed_ids`` restricts the candidates (e.g. active events only; an empty set gives []).

    Brute force over the namespace's vectors, held in memory per reader connection and topped up with rows added
    since the last call: one matrix-vector product, ~1.5 KB of RAM per vector, a few ms per 100 k vectors. Items
    without a vector yet are simply absent. Without ``allowed_ids`` the hits are checked against the table, so an
    item whose vector was deleted (erase, scrub, namespace deletion, by any process) is never returned; with
    ``allowed_ids`` the caller's ids are taken as current (a deleted vector can still score such an id until the
    item is re-embedded or a search without ``allowed_ids`` returns it).
    """
    if kind not in KINDS:
        raise ValueError(f"unknown kind {kind!r}")
    if limit <= 0 or (allowed_ids is not None and not allowed_ids):
        return []
    import numpy as np

    query = np.asarray(query_vector, dtype=np.float32).reshape(-1)
    if query.shape != (dense.DIM,):
        raise ValueError(f"query vector has {query.size} dimensions, expected {dense.DIM}")
    norm = float(np.linalg.norm(query))
    if norm == 0.0:
        return []
    query = query / norm
    matrix = await _matrix(reader_conn, namespace_id, kind)
    allowed = None if allowed_ids is None else np.fromiter(allowed_ids, dtype=np.int64, count=len(allowed_ids))
    while matrix.size:
        ids, vectors = matrix.ids[: matrix.size], matrix.vectors[: matrix.size]
        if matrix.size < 4096:
            hits = _top(ids, vectors, query, limit, allowed)
        else:
            hits = await asyncio.to_thread(_top, ids, vectors, query, limit, allowed)
        if allowed_ids is not None:
            return hits  # the caller's ids are current items
        # Deleted vectors stay in memory until they would be returned: check the few hits (one unique-index
        # probe), drop the deleted ones and rank again. Any writer's deletes are seen, this process's or not.
        gone = await _deleted(reader_conn, kind, [item_id for item_id, _ in hits])
        if not gone:
            return hits
        matrix.remove(gone)
    return []


async def _deleted(conn: Connection, kind: str, item_ids: list[int]) -> set[int]:
    """The items among ``item_ids`` that no longer have a vector of this model."""
    if not item_ids:
        return set()
    rows = await conn.execute_fetchall(
        f"SELECT item_id FROM embeddings WHERE kind = ? AND model = ? AND item_id IN ({','.join('?' * len(item_ids))})",
        (kind, dense.MODEL_NAME, *item_ids),
    )
    return set(item_ids) - {int(r[0]) for r in rows}


# --- the per-database service: job handler, scheduling, search, status -----------------------------------------------


class DenseIndex:
    """The dense channel of one database. ``App`` makes one and hands it to what uses it: the tools
    (``ToolContext.dense``), message ranking (``search.raw.rank(dense=...)``) and the ``embedding`` job
    (``StageDeps.dense``)."""

    def __init__(self, db: Database, load_encoder: Callable[[], Any] | None = None):
        self._db = db
        self._load_encoder = load_encoder or dense.get_encoder
        self._ids: dict[str, int] = {}  # namespace name → id
        self._running: set[int] = set()  # namespaces whose job runs in this process
        self._dirty: set[int] = set()  # ... and got new items since its current pass began
        self._tasks: set[asyncio.Task[None]] = set()
        self._queries: OrderedDict[str, asyncio.Future[Any]] = OrderedDict()  # query text → its encoding

    @staticmethod
    def usable() -> bool:
        return dense.available() is None

    # -- scheduling

    def notice(self, namespace: int | str) -> None:
        """The namespace (id or name) may have items without vectors: make sure its job runs. Never waits, never
        raises, a no-op when dense is off. Called after the items are committed.

        Cheapest first: a job running in this process is told in memory; otherwise a background task reads the
        job's status and writes (one short transaction) only if the job is done, missing, or running elsewhere.
        """
        if not self.usable():
            return
        namespace_id = namespace if isinstance(namespace, int) else self._ids.get(namespace)
        if namespace_id is not None and namespace_id in self._running:
            self._dirty.add(namespace_id)
            return
        task = asyncio.get_running_loop().create_task(self._flush(namespace), name=f"dense-notice-{namespace}")
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _flush(self, namespace: int | str) -> None:
        try:
            namespace_id = await self._namespace_id(namespace)
            if namespace_id is None:
                return
            row = await self._db.fetchone(
                "SELECT status FROM jobs WHERE kind = ? AND subject_id = ?", (EMBEDDING, namespace_id)
            )
            # A queued job has not read anything yet: it will see what was committed before this notice.
            if row is not None and row["status"] == "queued":
                return
            if namespace_id in self._running:
                self._dirty.add(namespace_id)
                return
            async with self._db.transaction() as conn:  # queuing wakes the runner after the commit
                await request_embedding(conn, namespace_id)
        except Exception:
            log.warning("queueing embeddings for namespace %s failed", namespace, exc_info=True)

    async def _namespace_id(self, namespace: int | str) -> int | None:
        if isinstance(namespace, int):
            return namespace
        if namespace not in self._ids:
            value = await lookup.namespace_key(self._db.reader, namespace)
            if value is None:
                return None
            self._ids[namespace] = value
        return self._ids[namespace]

    async def start(self) -> None:
        """Queue every namespace with a backlog (a restart, an upgrade, dense just installed), in the background."""
        if self.usable():
            task = asyncio.get_running_loop().create_task(self._catch_up(), name="dense-catch-up")
            self._tasks.add(task)
            task.add_done_callback(self._tasks.discard)

    async def _catch_up(self) -> None:
        try:
            for namespace_id in await lookup.all_namespace_ids(self._db.reader):
                if await _has_new_items(self._db.reader, namespace_id) or await _stale_nodes(
                    self._db.reader, namespace_id
                ):
                    self.notice(namespace_id)
        except Exception:
            log.warning("looking for namespaces without embeddings failed", exc_info=True)

    async def close(self) -> None:
        tasks = list(self._tasks)
        for task in tasks:
            task.cancel()
        for task in tasks:
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task

    # -- the job

    async def run_job(self, job: JobRow) -> None:
        """Handler of ``embedding`` jobs (subject = namespace id)."""
        namespace_id = job.namespace_id
        self._ids[job.namespace] = namespace_id
        if not self.usable():
            # Switched off or uninstalled since the job was queued: nothing to do; the backlog waits.
            async with self._db.transaction() as conn:
                await mark_done(conn, job)
            return
        try:
            encoder = await _run_in("embed", self._load_encoder)
        except dense.DenseUnavailable as exc:
            raise PermanentJobError(str(exc)) from exc
        self._running.add(namespace_id)
        try:
            await self._run(job, encoder)
        finally:
            self._running.discard(namespace_id)

    async def _run(self, job: JobRow, encoder: Any) -> None:
        namespace_id = job.namespace_id
        done = 0
        while True:
            # A pass sees everything committed before it began; notices after that mark it dirty (this process)
            # or bump the request counter (another process).
            self._dirty.discard(namespace_id)
            generation = await _requested(self._db.reader, namespace_id)
            for kind in KINDS:
                while done < RUN_LIMIT:
                    items = await pending_items(self._db.reader, namespace_id, kind, min(BATCH, RUN_LIMIT - done))
                    if not items:
                        break
                    await self._embed(encoder, namespace_id, kind, items)
                    done += len(items)
            if done >= RUN_LIMIT:
                await self._requeue(job)
                return
            async with self._db.transaction() as conn:
                latest = await _requested(conn, namespace_id)
                if latest == generation and namespace_id not in self._dirty:
                    # No await between the check and this: from now on a notice takes the database path, which
                    # waits for this transaction and then finds the job done.
                    self._running.discard(namespace_id)
                    await conn.execute(
                        "UPDATE embedding_requests SET served = ?, updated_at = ? WHERE namespace_id = ?",
                        (generation, now_iso(), namespace_id),
                    )
                    await mark_done(conn, job)
                    return

    async def _embed(self, encoder: Any, namespace_id: int, kind: str, items: list[tuple[int, str]]) -> None:
        texts = [text for _, text in items if text.strip()]
        encoded = await _run_in("embed", _encode_batch, encoder, texts) if texts else []
        it = iter(encoded)
        vectors = [next(it) if text.strip() else None for _, text in items]
        async with self._db.transaction() as conn:
            await store_vectors(conn, namespace_id, kind, items, vectors)

    async def _requeue(self, job: JobRow) -> None:
        """More to do than one run takes: queue again, due now, behind jobs that are already due."""
        async with self._db.transaction() as conn:
            await conn.execute(
                "UPDATE jobs SET status = 'queued', attempts = 0, next_run_at = ?, last_error = NULL, updated_at = ?"
                " WHERE id = ?",
                (time.time(), now_iso(), job.id),
            )

    # -- search

    def prefetch(self, text: str) -> None:
        """Start encoding a query text in the background (a no-op when it is cached or dense is unusable), so the
        encoding runs in its thread while the caller does other work (raw search: BM25)."""
        if self.usable():
            self._query_future(text)

    def _query_future(self, text: str) -> asyncio.Future[Any]:
        """The query's encoding, shared: cached (LRU, ``QUERY_CACHE`` texts) or started now."""
        future = self._queries.get(text)
        if future is not None:
            self._queries.move_to_end(text)
            return future
        future = asyncio.ensure_future(self._encode_query(text))
        future.add_done_callback(lambda f: self._settled(text, f))
        self._queries[text] = future
        while len(self._queries) > QUERY_CACHE:
            self._queries.popitem(last=False)
        return future

    def _settled(self, text: str, future: asyncio.Future[Any]) -> None:
        # A failed or cancelled encoding is not cached, nor "no vector" (dense unavailable), and the exception
        # counts as retrieved (a prefetch may have no reader).
        if future.cancelled() or future.exception() is not None or future.result() is None:
            if self._queries.get(text) is future:
                del self._queries[text]

    async def _encode_query(self, text: str) -> np.ndarray | None:
        try:
            encoder = dense.loaded() or await _run_in("embed", self._load_encoder)
            vector = (await _run_in("query", encoder.encode, [text]))[0]
        except dense.DenseUnavailable:
            return None
        vector.flags.writeable = False  # shared by every search of this text
        return vector

    async def query_vector(self, text: str) -> np.ndarray | None:
        """The query's embedding, or None when dense is off or unavailable. Loads the model on first use (in a
        worker thread); a text searched before is answered from the cache (``QUERY_CACHE`` texts, LRU), a new
        one costs one encoding (~10–20 ms of one core for a short query)."""
        if not self.usable():
            return None
        # shield: a search that is cancelled does not cancel an encoding other searches may share
        return await asyncio.shield(self._query_future(text))

    async def search(
        self, namespace_id: int, kind: str, text: str, limit: int, allowed_ids: set[int] | None = None
    ) -> list[tuple[int, float]]:
        """Dense hits ``[(item_id, cosine)]`` for a query text; [] when dense is off, unavailable or has no vectors.

        Items captured moments ago may have no vector yet (their job is queued): BM25 still finds them. A search
        that sees such a backlog asks for the job again (without waiting for it).
        """
        if not self.usable() or limit <= 0:
            return []
        if await _has_new_items(self._db.reader, namespace_id):
            self.notice(namespace_id)
        vector = await self.query_vector(text)
        if vector is None:
            return []
        return await nearest(self._db.reader, namespace_id, kind, vector, limit, allowed_ids)

    # -- status

    async def info(self) -> dict[str, Any]:
        """system.info ``dense``: state (ready/loading/off/unavailable) and reason, model, vectors stored, pending."""
        out = dense.state()
        rows = await self._db.fetchall(
            "SELECT kind, COUNT(*) AS n FROM embeddings WHERE model = ? GROUP BY kind", (dense.MODEL_NAME,)
        )
        out["vectors"] = dict.fromkeys(KINDS, 0) | {r["kind"]: int(r["n"]) for r in rows}
        if out["state"] in ("ready", "loading"):
            pending = await pending_by_kind(self._db.reader)
            out["pending"] = pending | {"total": sum(pending.values())}
        else:
            out["pending"] = None
        jobs = await self._db.fetchall(
            "SELECT status, COUNT(*) AS n FROM jobs WHERE kind = ? GROUP BY status", (EMBEDDING,)
        )
        out["jobs"] = {r["status"]: int(r["n"]) for r in jobs}
        return out

