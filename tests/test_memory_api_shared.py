"""``Memory`` and a DSH sidecar are clients of one memory: what one remembers the other recalls (same database, same
folder), another folder sees neither (the user tier aside), and README.md's example runs exactly as written."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from stratagate import Memory
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
