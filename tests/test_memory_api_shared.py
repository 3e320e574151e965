"""``Memory`` and a DSH sidecar are clients of one memory: what one remembers the other recalls (same database, same
folder), another folder sees neither (the user tier aside); no model route unless one is given; and README.md's
example runs exactly as written."""

from __future__ import annotations

import re
import sqlite3
from pathlib import Path

import pytest

from conftest import model_env
from stratagate import Memory
from stratagate.config import load_settings
from support.model_server import ScriptedModelServer
from support.sidecar import SidecarClient

REPO = Path(__file__).resolve().parents[1]
README = REPO / "README.md"
SECTION = "## Use the memory from Python"
FROM_PYTHON = "The release train leaves every second Tuesday at noon."
FROM_DSH = "Invoices are archived to the cold bucket after ninety days."
USER_WIDE = "I prefer British spelling in every document."


@pytest.fixture(autouse=True)
def _dense_off(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("STRATAGATE_DENSE", "off")


async def test_a_memory_and_a_dsh_session_of_one_folder_share_memory_and_another_folder_sees_neither(tmp_path: Path):
    db = tmp_path / "memory.db"
    project, other = tmp_path / "project", tmp_path / "other"
    project.mkdir()
    other.mkdir()
    async with Memory.open(db, workspace=project) as mine:
        stored = await mine.remember(FROM_PYTHON)
        user_wide = await mine.remember(USER_WIDE, scope="user", type="preference", criticality="preference")
        # A DSH sidecar on the same file while the Memory is open (several processes on one database).
        dsh = await SidecarClient.start(db, env={"STRATAGATE_MODEL_ROUTE": "none", "STRATAGATE_DENSE": "off"})
        try:
            ns = (await dsh.call("namespace.resolve", {"mode": "project", "cwd": str(project)}))["namespace"]
            assert ns == mine.namespace
            question = "When does the release train leave?"
            recalled = await dsh.call("activation.render", {"namespace": ns, "session": "dsh-1", "query": question})
            assert stored.id in recalled["event_ids"] and "second Tuesday" in recalled["text"]

            told = await dsh.tool(ns, "dsh-1", "memory_remember", {"text": FROM_DSH})
            recall = await mine.recall("Where are the invoices archived after ninety days?")
            assert told["id"] in recall.event_ids and "cold bucket" in recall.text
            assert [h.id for h in (await mine.search("invoices archived")).hits] == [told["id"]]

            other_ns = (await dsh.call("namespace.resolve", {"mode": "project", "cwd": str(other)}))["namespace"]
            for query in ("When does the release train leave?", "Where are the invoices archived?"):
                seen = await dsh.call("activation.render", {"namespace": other_ns, "session": "dsh-2", "query": query})
                assert stored.id not in seen["event_ids"] and told["id"] not in seen["event_ids"]
        finally:
            await dsh.close()

    async with Memory.open(db, workspace=other) as elsewhere:
        assert elsewhere.namespace == other_ns
        for query in ("release train second Tuesday", "invoices cold bucket"):
            assert (await elsewhere.search(query)).hits == []
            recall = await elsewhere.recall(query)
            assert stored.id not in recall.event_ids and told["id"] not in recall.event_ids
        # The user tier aside: a user-scope memory is shared with every namespace that shares its tier, as in DSH.
        hits = (await elsewhere.search("British spelling")).hits
        assert [(h.id, h.tier, h.from_namespace) for h in hits] == [(user_wide.id, "user", mine.namespace)]


def readme_example() -> str:
    """The python block of README.md's section on the embedded API."""
    text = README.read_text(encoding="utf-8")
    section = text[text.index(SECTION):]
    section = section[: section.index("\n## ", len(SECTION))]
    match = re.search(r"```python\n(.*?)```", section, re.S)
    assert match, f"README.md's '{SECTION}' has no python block"
    return match.group(1)


def test_the_readme_example_runs_as_written(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
):
    code = readme_example()
    # Each print's `# comment` is the line it prints: the README shows what the example really does.
    expected = re.findall(r"^\s*print\(.*\)  # (.*)$", code, re.M)
    assert len(expected) >= 4
    monkeypatch.chdir(tmp_path)
    exec(compile(code, str(README), "exec"), {"__name__": "__main__"})
    assert capsys.readouterr().out.splitlines() == expected
    assert (tmp_path / "memory.db").is_file()


async def _six_turns_settled(memory: Memory) -> dict[str, int]:
    for i in range(1, 7):
        await memory.capture_turn(f"Step {i}: we benchmark the importer on the nightly dump.", f"Step {i} done.")
    return await memory.settle()


def _block_sources(db: Path) -> list[tuple[str, str | None]]:
    with sqlite3.connect(f"file:{db}?mode=ro", uri=True) as conn:
        return conn.execute("SELECT summary_source, status FROM blocks ORDER BY id").fetchall()


async def test_no_model_route_unless_given_one_even_when_the_page_stored_the_host_route(tmp_path: Path):
    db = tmp_path / "memory.db"
    dsh = await SidecarClient.start(db, env={"STRATAGATE_DENSE": "off"})
    try:  # in DSH the page may store 'auto' (the host's model): outside DSH no host can answer it
        stored = await dsh.call("page.settings.set", {"settings": {"model_route": "auto", "block_turns": 6}})
        assert stored["settings"]["model_route"] == "auto"
    finally:
        await dsh.close()
    async with Memory.open(db, namespace="notes") as memory:
        jobs = await _six_turns_settled(memory)
    assert jobs["failed"] == 0 and jobs["done"] > 0
    assert _block_sources(db) == [("extractive", "ready")]  # written by rule: zero-model, no failed model attempt


async def test_a_direct_model_route_given_in_settings_writes_the_block_views(
    tmp_path: Path, model_server: ScriptedModelServer
):
    db = tmp_path / "memory.db"
    settings = load_settings(environ=model_env(model_server))
    async with Memory.open(db, namespace="notes", settings=settings) as memory:
        jobs = await _six_turns_settled(memory)
    assert jobs["failed"] == 0 and model_server.requests
    assert _block_sources(db) == [("model", "ready")]
