"""The CLI as a user runs it (a subprocess): a bad --db gives one line naming it and exit 2, never a traceback or a
hang; every command names the database it used."""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from support.sidecar import REPO

NS = "proj"
# A deadline for a hang (the reported bug: still running after 10 minutes), not a timing assertion.
HANG = 120


def cli(*args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("STRATAGATE_")}
    env["PYTHONPATH"] = str(REPO / "sidecar")
    env["STRATAGATE_DB_LOCK_TIMEOUT_S"] = "1"  # the "locked" cases wait this long, then give up
    return subprocess.run([sys.executable, "-m", "stratagate", *args], capture_output=True, text=True, env=env,
                          stdin=subprocess.DEVNULL, timeout=HANG)


def export_file(tmp_path: Path) -> Path:
    path = tmp_path / "notes.txt"
    path.write_text("Prefers tea over coffee.\n")
    return path


def make_db(tmp_path: Path, name: str = "memory.db") -> Path:
    db = tmp_path / name
    result = cli("import", str(export_file(tmp_path)), "--db", str(db), "--namespace", NS)
    assert result.returncode == 0, result.stderr
    return db


def command(name: str, db: Path, tmp_path: Path) -> list[str]:
    return {
        "info": ["info", "--db", str(db)],
        "audit": ["audit", "--db", str(db), "--json"],
        "import": ["import", str(export_file(tmp_path)), "--db", str(db), "--namespace", NS, "--json"],
        "import-list": ["import", "--list", "--db", str(db), "--json"],
        "erase": ["erase", "evt_1", "--db", str(db), "--namespace", NS, "--yes", "--json"],
        "redact": ["redact", "--db", str(db), "--json"],
        "stats": ["stats", "--db", str(db)],
        "maintain": ["maintain", "--db", str(db), "--json"],
        "maintain-dry": ["maintain", "--dry-run", "--db", str(db), "--json"],
    }[name]


COMMANDS = ["info", "audit", "import", "import-list", "erase", "redact", "stats", "maintain", "maintain-dry"]


@pytest.fixture
def bad_db(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Path]:
    kind = request.param
    if kind == "missing-folder":
        yield tmp_path / "no" / "such" / "folder" / "memory.db"
    elif kind == "directory":
        (tmp_path / "memory.db").mkdir()
        yield tmp_path / "memory.db"
    elif kind == "not-sqlite":
        path = tmp_path / "memory.db"
        path.write_text("hello, this is not a database\n")
        yield path
    elif kind == "newer-schema":
        db = make_db(tmp_path)
        conn = sqlite3.connect(db)
        conn.execute("PRAGMA user_version = 999")
        conn.commit()
        conn.close()
        yield db
    elif kind == "locked":
        db = make_db(tmp_path)
        # Another process (this one) holds an exclusive lock: nobody else can read or write.
        conn = sqlite3.connect(db, isolation_level=None)
        conn.execute("PRAGMA locking_mode = EXCLUSIVE")
        conn.execute("BEGIN EXCLUSIVE")
        conn.execute("INSERT INTO meta(key, value) VALUES ('lock-holder', 'test')")
        yield db
        conn.execute("ROLLBACK")
        conn.close()
    else:
        raise AssertionError(kind)


# An unreadable file is refused too ("cannot read …"), but CI runs as root, which reads any file: no case here.
BAD = ["missing-folder", "directory", "not-sqlite", "newer-schema", "locked"]
WHAT = {
    "missing-folder": "no folder",
    "directory": "is a directory",
    "not-sqlite": "is not a SQLite database",
    "newer-schema": "newer than this",
    "locked": "is locked by another process",
}


@pytest.mark.parametrize("name", COMMANDS)
@pytest.mark.parametrize("bad_db", BAD, indirect=True)
def test_a_bad_db_is_one_line_exit_2_and_no_hang(bad_db: Path, name: str, tmp_path: Path,
                                                 request: pytest.FixtureRequest) -> None:
    kind = request.node.callspec.params["bad_db"]
    result = cli(*command(name, bad_db, tmp_path))
    if name == "info" and kind == "missing-folder":  # info inspects: no database yet is an answer, not an error
        assert result.returncode == 0 and json.loads(result.stdout) == {"db_path": str(bad_db), "exists": False}
        assert "Traceback" not in result.stderr and not bad_db.parent.exists()
        return
    assert result.returncode == 2, (result.stdout, result.stderr)
    assert "Traceback" not in result.stderr and result.stderr.count("\n") == 1, result.stderr
    assert str(bad_db) in result.stderr and WHAT[kind] in result.stderr, result.stderr
    assert result.stdout == ""
    if kind == "missing-folder":
        assert not bad_db.parent.exists()  # nothing was created


@pytest.mark.parametrize("name", COMMANDS)
def test_every_command_names_the_database_it_used(name: str, tmp_path: Path) -> None:
    db = make_db(tmp_path)
    args = command(name, db, tmp_path)
    if name == "import":
        args += ["--allow-duplicate"]
    result = cli(*args)
    assert result.returncode == 0, result.stderr
    assert result.stderr.splitlines()[0] == f"database: {db}"
    json.loads(result.stdout)  # --json output stays valid JSON


def test_info_of_a_database_not_created_yet(tmp_path: Path) -> None:
    db = tmp_path / "new.db"
    result = cli("info", "--db", str(db))
    assert result.returncode == 0 and json.loads(result.stdout) == {"db_path": str(db), "exists": False}
    assert f"database: {db}" in result.stderr and not db.exists()


def test_duplicate_import_names_the_cli_flag(tmp_path: Path) -> None:
    db = make_db(tmp_path)
    again = cli("import", str(tmp_path / "notes.txt"), "--db", str(db), "--namespace", NS)
    assert again.returncode == 1 and again.stderr.count("\n") == 1
    assert "already imported into proj as imp_1" in again.stderr and "--allow-duplicate" in again.stderr
    assert "allow_duplicate" not in again.stderr
    forced = cli("import", str(tmp_path / "notes.txt"), "--db", str(db), "--namespace", NS, "--allow-duplicate")
    assert forced.returncode == 0 and "import: imp_2" in forced.stdout


def test_import_into_a_new_database_locked_by_another_process_gives_up(tmp_path: Path) -> None:
    """The file exists only because another process holds it (created, exclusively locked, nothing in it yet)."""
    db = tmp_path / "memory.db"
    holder = sqlite3.connect(db, isolation_level=None)
    holder.execute("BEGIN EXCLUSIVE")
    try:
        result = cli("import", str(export_file(tmp_path)), "--db", str(db), "--namespace", NS)
    finally:
        holder.execute("ROLLBACK")
        holder.close()
    assert result.returncode == 2 and result.stdout == ""
    assert "Traceback" not in result.stderr and result.stderr.count("\n") == 1, result.stderr
    assert f"the database {db} is locked by another process" in result.stderr
    assert "STRATAGATE_DB_LOCK_TIMEOUT_S" in result.stderr
    assert cli("import", str(export_file(tmp_path)), "--db", str(db), "--namespace", NS).returncode == 0


def test_stats_and_maintain_report_as_json(tmp_path: Path) -> None:
    db = make_db(tmp_path)
    stats = json.loads(cli("stats", "--db", str(db)).stdout)
    assert stats["events"]["by_status"]["active"] == 1 and stats["schedule"]["last_run"] is None
    assert stats["sizes"]["tables"]["imports"] == 1 and stats["merges"] == {"done": 0, "undone": 0, "open": 0}
    dry = json.loads(cli("maintain", "--dry-run", "--db", str(db), "--json").stdout)
    assert dry["dry_run"] is True and dry["run_id"] is None and dry["merges"] == []
    assert json.loads(cli("stats", "--db", str(db)).stdout)["schedule"]["last_run"] is None  # nothing recorded
    done = cli("maintain", "--db", str(db))
    assert done.returncode == 0 and done.stdout.startswith("run 1: merged 0"), done.stdout
    last = json.loads(cli("stats", "--db", str(db)).stdout)["schedule"]["last_run"]
    assert last["trigger"] == "manual" and last["status"] == "done"
