"""docs/protocol.md documents every JSON-RPC method, every agent tool, every param of each and every error code
(datasette's tests/test_docs.py is the model): the protocol table is the source, the doc must keep up with it."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

import stratagate.rpc.methods
import stratagate.tools  # noqa: F401  (registers every tool)
from stratagate import errors
from stratagate.protocol import METHOD_TABLE, TOOL_TABLE, Entry

DOC = Path(__file__).resolve().parents[1] / "docs" / "protocol.md"
HEADING = re.compile(r"^(#{1,6})\s+(.*)$")


def _lines() -> list[str]:
    return DOC.read_text(encoding="utf-8").splitlines()


def documentation_of(name: str) -> str:
    """What the doc says about ``name``: each section whose heading names it in backticks (up to the next heading of
    the same or a higher level) and each table row whose first cell names it."""
    lines = _lines()
    mark = f"`{name}`"
    parts: list[str] = []
    for i, line in enumerate(lines):
        heading = HEADING.match(line)
        if heading and mark in heading.group(2):
            level = len(heading.group(1))
            end = next(
                (j for j in range(i + 1, len(lines)) if (h := HEADING.match(lines[j])) and len(h.group(1)) <= level),
                len(lines),
            )
            parts.append("\n".join(lines[i:end]))
        elif line.startswith("|") and line.split("|")[1].strip() == mark:
            parts.append(line)
    return "\n".join(parts)


def _params(entry: Entry) -> list[str]:
    return [field.alias or key for key, field in entry.params.model_fields.items()]


METHODS = sorted(METHOD_TABLE, key=lambda e: e.name)
TOOLS = sorted(TOOL_TABLE, key=lambda e: e.name)
CODES = sorted(
    (value, name)
    for name, value in vars(errors).items()
    if name.isupper() and isinstance(value, int) and not isinstance(value, bool) and -32768 <= value <= -32000
)


def test_a_missing_name_or_param_is_noticed(monkeypatch: pytest.MonkeyPatch):
    lines = [line for line in _lines() if "`jobs.retry`" not in line]
    monkeypatch.setattr("test_docs._lines", lambda: lines)
    assert documentation_of("jobs.retry") == ""
    monkeypatch.setattr("test_docs._lines", lambda: ["### `jobs.list`", "`namespace` and `status`", "### next"])
    assert "`limit`" not in documentation_of("jobs.list")
    assert "`status`" in documentation_of("jobs.list")


def test_the_tables_are_complete():
    assert len(METHODS) >= 17 and len(TOOLS) >= 13
    assert len(CODES) >= 9


@pytest.mark.parametrize("entry", METHODS + TOOLS, ids=lambda e: e.name)
def test_documented(entry: Entry):
    assert documentation_of(entry.name), (
        f"docs/protocol.md does not document the {entry.kind} `{entry.name}`: give it a heading naming it in "
        "backticks or a table row whose first cell is it"
    )


@pytest.mark.parametrize("entry", METHODS + TOOLS, ids=lambda e: e.name)
def test_params_documented(entry: Entry):
    text = documentation_of(entry.name)
    missing = [p for p in _params(entry) if f"`{p}`" not in text]
    assert not missing, f"docs/protocol.md: the {entry.kind} `{entry.name}` does not mention its params {missing}"


@pytest.mark.parametrize(("code", "name"), CODES, ids=lambda v: str(v))
def test_error_code_documented(code: int, name: str):
    lines = _lines()
    start = lines.index("## Error codes")
    section = lines[start : next(i for i in range(start + 1, len(lines)) if lines[i].startswith("## "))]
    rows = [line for line in section if line.startswith(f"| {code} |")]
    assert rows, f"docs/protocol.md, Error codes: no row for {code}"
    assert any(f"`{name}`" in row for row in rows), f"docs/protocol.md, Error codes: the {code} row must name `{name}`"
