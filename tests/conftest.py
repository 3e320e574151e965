from __future__ import annotations

import json
import sys
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))

from stratagate.storage.db import Database
from stratagate.wiring import register_hooks
from support.model_server import ScriptedModelServer, auto_tool_call
from support.postgres import PostgresServer
from support.sidecar import SidecarClient


def summary_arguments(tool_name: str, body: dict[str, Any]) -> dict[str, Any]:
    """A valid block summary derived from the transcript the sidecar sent.

    It reports no durable facts, so no event_extraction job follows; tests of extraction opt in explicitly.
    """
    payload = json.loads(body["messages"][-1]["content"])
    first, last = payload["turns"]
    # Role-like lines reach the model behind the quote bar (the inert rendering rule).
    lines = [ln.removeprefix("│ ") for ln in payload["transcript"].splitlines()]
    lines = [ln for ln in lines if ln.startswith("User: ")]
    return {
        "title": f"Turns {first}–{last}",
        "tags": ["test"],
        "summary": f"Turns {first} to {last}. The scripted model summarised this part of the conversation.",
        "key_facts": [ln[6:][:300] or "empty" for ln in lines[:2]] or [f"turns {first}-{last}"],
        "has_durable_facts": False,
    }


@pytest.fixture(autouse=True)
def _process_wide_settings_restored() -> Iterator[None]:
    """An in-process sidecar (support.sidecar) sets what a sidecar process sets once for itself: whether the dense
    channel is on and the redaction key of its database. Each test starts from the test process's own values."""
    from stratagate.safety import secrets
    from stratagate.search import dense

    enabled, key = dense._enabled, secrets._key
    yield
    dense._enabled = enabled
    secrets.configure_key(key)


@pytest.fixture
def model_server() -> Iterator[ScriptedModelServer]:
    server = ScriptedModelServer()
    server.default = auto_tool_call(summary_arguments)
    with server:
        yield server


def model_env(server: ScriptedModelServer, **extra: str) -> dict[str, str]:
    env = {
        "STRATAGATE_MODEL_BASE_URL": server.base_url,
        "STRATAGATE_MODEL": "scripted-model",
        "STRATAGATE_MODEL_TIMEOUT": "10",
        "STRATAGATE_JOB_BACKOFF_BASE": "0.05",
        "STRATAGATE_JOB_BACKOFF_CAP": "0.2",
        # These tests watch the model jobs; the embedding job (tests/test_dense.py) would interleave with them.
        "STRATAGATE_DENSE": "off",
    }
    env.update(extra)
    return env


@pytest.fixture
async def sidecar(tmp_path: Path, model_server: ScriptedModelServer) -> AsyncIterator[SidecarClient]:
    client = await SidecarClient.start(tmp_path / "memory.db", env=model_env(model_server))
    yield client
    await client.close()


def turn(i: int, namespace: str = "proj", session: str = "s1", **extra: Any) -> dict[str, Any]:
    params: dict[str, Any] = {
        "namespace": namespace,
        "session": session,
        "receipt": f"dsh:{session}:turn:{i}",
        "user": f"User message number {i} about topic{i}.",
        "assistant": f"Assistant reply {i}.",
        "started_at": f"2026-05-01T10:{i % 60:02d}:00Z",
        "ended_at": f"2026-05-01T10:{i % 60:02d}:30Z",
        "end_reason": "stop",
    }
    params.update(extra)
    return params


@pytest.fixture
async def db(tmp_path: Path) -> AsyncIterator[Database]:
    """An open database in the test's own folder (closed after the test)."""
    database = Database(tmp_path / "memory.db")
    await database.open()
    yield database
    await database.close()


@pytest.fixture(autouse=True, scope="session")
def _store_hooks() -> None:
    """The stores' hooks, registered as every entry point registers them (the App, the CLI's commands): a test that
    writes through the stores in-process sees the graph follow event status (tests/test_wiring.py checks that
    importing registers nothing)."""
    register_hooks()


@pytest.fixture(scope="session")
def postgres_server() -> Iterator[PostgresServer]:
    """A real PostgreSQL server (tests/support/postgres.py) for the team memory tests: one per pytest process (so one
    per xdist worker), started on first use and removed at the session's end. Fails, never skips, without the server."""
    server = PostgresServer()
    try:
        server.start()
        yield server
    finally:
        server.cleanup()


@pytest.fixture
def team_dsn(postgres_server: PostgresServer) -> Iterator[str]:
    """The DSN of a fresh database of its own on the session's server, dropped after the test."""
    with postgres_server.database() as dsn:
        yield dsn
