"""What the one-shot commands of ``stratagate`` tell a user: ``info``'s summary, the namespaces a database knows (for a
``--namespace`` that names none of them) and an ``import --format`` that the file contradicts.

Kept apart from cli.py so the command line's start-up path stays small; every function here reads, none writes."""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

LINE_FORMATS = frozenset({"text", "markdown", "chatgpt"})
"""Formats that read a plain text file line by line (ChatGPT's text variant too): forcing one on a text file is a
choice, not a mistake."""


def known_namespaces(db: Path, lock_timeout: float = 5.0) -> list[str]:
    """The namespace names stored in ``db``, sorted (read-only; [] when the database has no namespaces table)."""
    conn = sqlite3.connect(f"{db.resolve().as_uri()}?mode=ro", uri=True, timeout=lock_timeout)
    try:
        rows = conn.execute("SELECT name FROM namespaces ORDER BY name").fetchall()
    except sqlite3.OperationalError:
        return []
    finally:
        conn.close()
    return [str(name) for (name,) in rows]


def unknown_namespace(namespace: str, known: list[str]) -> str:
    """The one-line answer to a ``--namespace`` the database does not hold."""
    listed = ", ".join(known) if known else "none yet"
    return f"no namespace {namespace!r} in this database (known: {listed})"


def one_shot_info(info: dict[str, Any], namespaces: list[str], db_bytes: int) -> dict[str, Any]:
    """``stratagate info``: what a user needs from ``system.info`` when no sidecar runs in this process.

    Left out on purpose: the pid, uptime, event-loop and tokenizer figures (they describe this short-lived process)
    and the model route (a one-shot command calls no model; ``model_mode`` says what the sidecar would do)."""
    dense = info.get("dense") or {}
    return {
        "version": info["version"],
        "db_path": info["db_path"],
        "exists": True,
        "db_bytes": db_bytes,
        "schema_version": info["schema_version"],
        "expected_schema_version": info["expected_schema_version"],
        "namespaces": namespaces,
        "model_mode": info["model_mode"],
        "block_turns": info["block_turns"],
        "counts": info["counts"],
        "last_job_error": info["last_job_error"],
        "dense": {key: dense.get(key) for key in ("state", "reason", "model", "vectors", "pending")},
    }


def _looks_like_json(path: Path) -> bool:
    with path.open("rb") as f:
        head = f.read(4096).lstrip(b"\xef\xbb\xbf \t\r\n")
    return head[:1] in (b"[", b"{")


def format_mismatch(path: Path, given: str) -> str | None:
    """Why ``--format given`` contradicts the file, or None when it does not (or the file is unreadable: the import
    itself reports that).

    Detection decides the structured formats (a SQLite store, JSON exports); on a plain text file any of
    :data:`LINE_FORMATS` may be forced over the detected one."""
    from stratagate.imports.parsers import FORMATS, ImportFormatError, detect_format

    if given not in FORMATS:
        return None  # the parser names the known formats
    try:
        detected = detect_format(path)
        structured = detected == "dsh-memory-connect" or _looks_like_json(path)
    except (ImportFormatError, OSError):
        return None
    if detected == given or (given in LINE_FORMATS and not structured):
        return None
    what = {"dsh-memory-connect": "a dsh-memory-connect store (SQLite)"}.get(detected, f"a {detected} export")
    if not structured:
        what = "plain text" if detected == "text" else f"a {detected} text file"
    return (
        f"{path} looks like {what}, not --format {given}: leave --format out to import it as {detected}, "
        f"or give --format {detected}"
    )
