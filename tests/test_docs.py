"""docs/protocol.md documents every JSON-RPC method, every agent tool, every param of each and every error code
(datasette's tests/test_docs.py is the model): the protocol table is the source, the doc must keep up with it.
Likewise the settings table (sidecar/stratagate/settings_table.py): README.md documents every setting and
environment variable, shim-js/README.md every plugin option and the shim's own variables, and every STRATAGATE_*
variable read anywhere in sidecar/ or shim-js/ is a row of the table."""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

import pytest

import stratagate.tools  # noqa: F401  (registers every tool)
from stratagate import errors, settings_table
from stratagate.context.settings import ContextSettings
from stratagate.protocol import METHOD_TABLE, TOOL_TABLE, Entry
from stratagate.rpc.methods import load_all_methods
from stratagate.settings_table import Row

REPO = Path(__file__).resolve().parents[1]
DOC = REPO / "docs" / "protocol.md"
README = REPO / "README.md"
SHIM_README = REPO / "shim-js" / "README.md"
sys.path.insert(0, str(REPO / "scripts"))
import settings_docs  # noqa: E402  (scripts/ is no package: imported from its folder)

load_all_methods()  # the handler modules the server imports with their first call
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


# --- settings, environment variables and plugin options ------------------------------------------------------------

ENV_VARIABLE = re.compile(r"\bSTRATAGATE_[A-Z][A-Z0-9_]*\b")
ROWS = settings_table.rows()


def env_variables_read() -> dict[str, list[str]]:
    """Every STRATAGATE_* name in the code of sidecar/ and shim-js/ (read, or named in a message) → its files."""
    found: dict[str, list[str]] = {}
    for folder in ("sidecar", "shim-js"):
        for pattern in ("*.py", "*.js", "*.mjs"):
            for path in sorted((REPO / folder).rglob(pattern)):
                for name in set(ENV_VARIABLE.findall(path.read_text(encoding="utf-8"))):
                    found.setdefault(name, []).append(str(path.relative_to(REPO)))
    return found


def _first_cells(text: str) -> set[str]:
    return {line.split("|")[1].strip() for line in text.splitlines() if line.startswith("|") and line.count("|") > 2}


def undocumented(rows: list[Row], readme: str, shim_readme: str) -> list[str]:
    """What the docs miss: each row's env variable (in backticks in README.md or shim-js/README.md), each plugin option
    (the first cell of a table row of shim-js/README.md), each page setting without a variable (in README.md)."""
    options = _first_cells(shim_readme)
    missing: list[str] = []
    for r in rows:
        if r.env and f"`{r.env}`" not in readme + shim_readme:
            missing.append(r.env)
        if r.plugin and f"`{r.plugin}`" not in options:
            missing.append(r.plugin)
        if not r.env and not r.plugin and f"`{r.name}`" not in readme:
            missing.append(r.name)
    return missing


def test_env_variables_are_found_in_the_code():
    found = env_variables_read()
    # Read in Python (config, cli, dense, tokens) and in JS (python-env, logger, line, config's comment).
    for name in ("STRATAGATE_DB_LOCK_TIMEOUT_S", "STRATAGATE_LOG_LEVEL", "STRATAGATE_TOKENS_CACHE", "STRATAGATE_PYTHON",
                 "STRATAGATE_SHIM_LOG", "STRATAGATE_MAX_LINE_BYTES"):
        assert name in found, name
    assert len(found) >= 15


def test_a_missing_setting_is_noticed():
    readme, shim = README.read_text(encoding="utf-8"), SHIM_README.read_text(encoding="utf-8")
    without = "\n".join(line for line in readme.splitlines() if "`STRATAGATE_DB_MAX_MB`" not in line)
    assert undocumented(ROWS, without, shim) == ["STRATAGATE_DB_MAX_MB"]
    without = "\n".join(line for line in shim.splitlines() if not line.startswith("| `captureSubagents`"))
    assert undocumented(ROWS, readme, without) == ["captureSubagents"]
    without = readme.replace("`context_mode`", "context mode")
    assert undocumented(ROWS, without, shim) == ["context_mode"]


@pytest.mark.parametrize(("doc", "table"), list(settings_docs.DOCS.items()), ids=list(settings_docs.DOCS))
def test_the_settings_tables_are_current(doc: str, table):
    text = (REPO / doc).read_text(encoding="utf-8")
    assert settings_docs.marked(text) is not None, f"{doc}: the settings table's markers are missing"
    assert settings_docs.marked(text) == table(), (
        f"{doc}: the settings table differs from settings_table.py; regenerate it: "
        "PYTHONPATH=sidecar .venv/bin/python scripts/settings_docs.py"
    )


@pytest.mark.parametrize("row", ROWS, ids=lambda r: r.name)
def test_setting_documented(row: Row):
    missing = undocumented([row], README.read_text(encoding="utf-8"), SHIM_README.read_text(encoding="utf-8"))
    assert not missing, f"README.md / shim-js/README.md do not document {missing} (the setting `{row.name}`)"


@pytest.mark.parametrize(("name", "files"), sorted(env_variables_read().items()), ids=lambda v: str(v))
def test_env_variable_declared_and_documented(name: str, files: list[str]):
    declared = {r.env for r in ROWS if r.env}
    assert name in declared, f"{name} ({', '.join(files)}) is no row of sidecar/stratagate/settings_table.py"
    docs = README.read_text(encoding="utf-8") + SHIM_README.read_text(encoding="utf-8")
    assert f"`{name}`" in docs, f"{name} is not documented in README.md or shim-js/README.md"


def test_every_shipped_plugin_option_is_documented():
    shipped = json.loads((REPO / "plugin" / "settings.json").read_text(encoding="utf-8"))["options"]
    options = _first_cells(SHIM_README.read_text(encoding="utf-8"))
    assert shipped and [o for o in shipped if f"`{o}`" not in options] == []


@pytest.mark.parametrize("key", list(ContextSettings.model_fields))
def test_context_setting_documented(key: str):
    """The context engine's settings are the nested ``context`` object: docs/protocol.md lists every key."""
    assert f"`{key}`" in documentation_of("context.settings.get"), (
        f"docs/protocol.md, `context.settings.get`: the context setting `{key}` is not listed"
    )
