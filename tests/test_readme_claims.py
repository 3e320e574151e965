"""Claims the READMEs make that drift when the code moves: the number of memory tools the shim registers, command
lines that run `stratagate` (not on PATH: a checkout's script is `.venv/bin/stratagate`), the DSH version the install
pins, and the name of the settings entry `npm start` points at."""

from __future__ import annotations

import json
import re

from support.sidecar import REPO

README = (REPO / "README.md").read_text(encoding="utf-8")
SHIM_README = (REPO / "shim-js" / "README.md").read_text(encoding="utf-8")


def _code_lines(text: str) -> list[str]:
    """The lines inside fenced code blocks."""
    lines, inside = [], False
    for line in text.splitlines():
        if line.startswith("```"):
            inside = not inside
        elif inside:
            lines.append(line)
    return lines


def test_the_shim_readme_counts_the_tools_of_plugin_tools_json() -> None:
    tools = json.loads((REPO / "plugin" / "tools.json").read_text(encoding="utf-8"))
    counts = [int(n) for n in re.findall(r"\bthe (\d+) memory tools\b", SHIM_README)]
    assert counts == [len(tools)], f"shim-js/README.md says {counts} memory tools; plugin/tools.json has {len(tools)}"
    assert not re.search(r"\b(three|four|five) (memory )?tools\b", SHIM_README + README, re.IGNORECASE)


def test_readme_commands_run_stratagate_by_a_path_that_exists() -> None:
    bare = [line for line in _code_lines(README) if re.match(r"\s*stratagate\s", line)]
    assert bare == [], f"README.md runs a bare `stratagate` (not on PATH; use .venv/bin/stratagate): {bare}"
    assert "export PATH=\"$PWD/.venv/bin:$PATH\"" in README  # and says how to put it on PATH


def test_readme_names_the_pinned_dsh_and_the_refused_latest() -> None:
    pin = json.loads((REPO / "scripts" / "dsh-install" / "package.json").read_text(encoding="utf-8"))
    version = pin["dependencies"]["@deepseek-ai/dsh"]
    section = README[README.index("## Getting DSH") : README.index("## Install into your DeepSeek Harness")]
    assert f"DSH {version} on Cordis {pin['pnpm']['overrides']['@deepseek-ai/cordis']}" in section
    assert "0.1.5-rc.2" in section and "stratagate-install-dsh --prefix" in section
    assert "next milestone" not in README.lower()


def test_npm_start_points_at_the_nav_entry_dsh_shows() -> None:
    start = (REPO / "scripts" / "start.sh").read_text(encoding="utf-8")
    assert "Settings → Memory" in start and "Settings → StrataGate Memory" not in start + README
