"""No function in the sidecar is longer than 80 lines: a longer one is split along its seams (phases, one handler
per case) before it lands. Length is ``end_lineno - lineno + 1`` of the ``def`` (its decorators not counted, its
nested functions counted inside it and on their own)."""

from __future__ import annotations

import ast
from pathlib import Path

SIDECAR = Path(__file__).resolve().parents[1] / "sidecar"
MAX_LINES = 80


def long_functions(source: str, path: str, max_lines: int = MAX_LINES) -> list[str]:
    """``path:line name (n lines)`` of every function or method in ``source`` longer than ``max_lines``."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            assert node.end_lineno is not None
            lines = node.end_lineno - node.lineno + 1
            if lines > max_lines:
                found.append(f"{path}:{node.lineno} {node.name} ({lines} lines)")
    return found


def _function(name: str, body_lines: int, indent: str = "") -> str:
    return f"{indent}def {name}():\n" + "".join(f"{indent}    x{i} = {i}\n" for i in range(body_lines))


def test_the_measure_counts_the_def_to_its_last_line_without_decorators() -> None:
    at_limit = "@decorator\n@another\n" + _function("fits", MAX_LINES - 1)
    assert long_functions(at_limit, "m.py") == []
    method = "class C:\n" + _function("method", MAX_LINES, "    ")
    assert long_functions(method, "m.py") == [f"m.py:2 method ({MAX_LINES + 1} lines)"]
    nested = "def outer():\n" + _function("inner", MAX_LINES, "    ") + "    return inner\n"
    assert long_functions(nested, "m.py") == [
        f"m.py:1 outer ({MAX_LINES + 3} lines)",
        f"m.py:2 inner ({MAX_LINES + 1} lines)",
    ]


def test_no_sidecar_function_is_longer_than_80_lines() -> None:
    files = sorted(SIDECAR.rglob("*.py"))
    assert len(files) > 100  # the sidecar's modules, not an empty glob
    found = [
        hit
        for path in files
        for hit in long_functions(path.read_text(encoding="utf-8"), str(path.relative_to(SIDECAR)))
    ]
    assert found == [], "split these along their seams (at most 80 lines each):\n" + "\n".join(found)
