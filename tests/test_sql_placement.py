"""SQL lives in the storage-facing modules of each package (events/store.py, graph/read.py, blocks/queries.py,
search/raw.py, storage/lookup.py …), never in the RPC handlers, the agent tools, activation, the protocol types or the
app."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "sidecar" / "stratagate"
NO_SQL = ("rpc", "tools", "activation", "protocol", "app.py")
"""Packages (every module below them) and single modules that hold no SQL."""
STATEMENT = re.compile(
    r"\bSELECT\b[\s\S]*\bFROM\b|\bSELECT\s+\d|\bINSERT\s+(OR\s+\w+\s+)?INTO\b|\bUPDATE\s+\w+\s+SET\b|\bDELETE\s+FROM\b"
    r"|\bREPLACE\s+INTO\b|\bWITH\s+\w+\s+AS\s*\(",
    re.IGNORECASE,
)
CLAUSE = re.compile(r"\bWHERE\b[\s\S]*\?|\bORDER BY\b|\bGROUP BY\b|\bJOIN\b[\s\S]*\bON\b")
"""Clauses of a statement whose head comes from a constant (``f"{_SELECT} WHERE e.id = ?"``); upper case only."""


def _docstrings(tree: ast.AST) -> set[int]:
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef) and node.body:
            first = node.body[0]
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant):
                found.add(id(first.value))
    return found


def sql_strings(source: str) -> list[tuple[int, str]]:
    """(line, text) of every string literal (f-string parts joined) that holds an SQL statement; docstrings aside."""
    tree = ast.parse(source)
    skip = _docstrings(tree)
    hits = []
    for node in ast.walk(tree):
        if isinstance(node, ast.JoinedStr):
            text = "".join(v.value for v in node.values if isinstance(v, ast.Constant) and isinstance(v.value, str))
        elif isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in skip:
            text = node.value
        else:
            continue
        if STATEMENT.search(text) or CLAUSE.search(text):
            hits.append((node.lineno, text))
    return hits


def test_the_detector_sees_sql_and_not_prose():
    assert sql_strings('q = "SELECT id FROM namespaces WHERE name = ?"')
    assert sql_strings('q = f"SELECT {cols} FROM t"')
    assert sql_strings('q = ("UPDATE blocks SET a = ?" " WHERE id = ?")')
    assert sql_strings("q = 'INSERT OR IGNORE INTO t VALUES (1)'")
    assert sql_strings("q = 'delete from t'")
    assert sql_strings('q = f"{_SELECT} WHERE e.namespace_id = ? AND e.pinned = 1"')
    assert not sql_strings('"""Select the newest block from the session."""\n')
    assert not sql_strings('note = "update the settings, then retry"')
    assert not sql_strings('note = "where it is shown, order by time"')


def _modules(path: Path) -> list[Path]:
    return [path] if path.is_file() else sorted(path.rglob("*.py"))


@pytest.mark.parametrize("package", NO_SQL)
def test_no_sql_in(package: str):
    offenders = [
        f"{path.relative_to(PACKAGE)}:{line}: {text[:80]!r}"
        for path in _modules(PACKAGE / package)
        for line, text in sql_strings(path.read_text(encoding="utf-8"))
    ]
    assert not offenders, (
        f"SQL in stratagate/{package}/ (move it to the storage-facing module of the package that owns the table):\n"
        + "\n".join(offenders)
    )
