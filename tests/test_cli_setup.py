"""The one-shot commands as a user meets them: `info` reports the database (not this short-lived process), an
`import --format` the file contradicts is refused, a `--namespace` that names nothing says so and lists the known
ones, and Ctrl-C on `stratagate ui` ends without a traceback."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import tomllib
from pathlib import Path

from support.sidecar import REPO
from test_cli import HANG, NS, cli, make_db

FIXTURES = REPO / "tests" / "fixtures" / "imports"


def test_info_reports_the_database_not_the_process(tmp_path: Path) -> None:
    db = make_db(tmp_path)
    result = cli("info", "--db", str(db))
    assert result.returncode == 0, result.stderr
    info = json.loads(result.stdout)
    for meaningless in ("pid", "uptime_s", "model_route", "loop", "tokens"):
        assert meaningless not in info
    assert info["db_path"] == str(db) and info["exists"] is True
    assert info["db_bytes"] == db.stat().st_size > 0
    assert info["namespaces"] == [NS] and info["counts"]["events"]["active"] == 1
    assert info["schema_version"] == info["expected_schema_version"]
    assert set(info["dense"]) == {"state", "reason", "model", "vectors", "pending"}


def test_import_format_that_the_file_contradicts_is_refused(tmp_path: Path) -> None:
    db = tmp_path / "memory.db"
    mem0 = FIXTURES / "mem0_get_all.json"
    forced = cli("import", str(mem0), "--db", str(db), "--namespace", NS, "--format", "text")
    assert forced.returncode == 1 and forced.stdout == ""
    assert f"{mem0} looks like a mem0 export, not --format text" in forced.stderr
    assert "--format mem0" in forced.stderr and "Traceback" not in forced.stderr
    assert not db.exists()  # refused before the database is touched

    notes = tmp_path / "notes.txt"
    notes.write_text("Prefers tea over coffee.\n")
    wrong = cli("import", str(notes), "--db", str(db), "--namespace", NS, "--format", "mem0")
    assert wrong.returncode == 1 and "looks like plain text, not --format mem0" in wrong.stderr


def test_import_format_agreeing_with_the_file_or_reading_text_lines_is_accepted(tmp_path: Path) -> None:
    db = tmp_path / "memory.db"
    agreed = cli("import", str(FIXTURES / "mem0_get_all.json"), "--db", str(db), "--namespace", NS, "--format", "mem0")
    assert agreed.returncode == 0, agreed.stderr
    notes = tmp_path / "notes.txt"
    notes.write_text("Prefers tea over coffee.\n")
    as_markdown = cli("import", str(notes), "--db", str(db), "--namespace", NS, "--format", "markdown")
    assert as_markdown.returncode == 0, as_markdown.stderr
    assert "(markdown, notes.txt" in as_markdown.stdout


def test_unknown_namespace_is_named_with_the_known_ones(tmp_path: Path) -> None:
    db = make_db(tmp_path)
    for args in (
        ["audit", "--db", str(db), "--namespace", "nope"],
        ["import", "--list", "--db", str(db), "--namespace", "nope"],
        ["tier", "--db", str(db), "--namespace", "nope"],
    ):
        result = cli(*args)
        assert result.returncode == 1 and result.stdout == "", args
        assert f"stratagate {args[0]}: no namespace 'nope' in this database (known: {NS})" in result.stderr, args
    known = cli("audit", "--db", str(db), "--namespace", NS, "--json")
    assert known.returncode == 0 and json.loads(known.stdout)
    # Setting the tier of a namespace before its first turn stays possible.
    assert cli("tier", "--db", str(db), "--namespace", "later", "--off").returncode == 0


def _ui(db: Path) -> subprocess.Popen[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("STRATAGATE_")}
    env["PYTHONPATH"] = str(REPO / "sidecar")
    # A terminal's Ctrl-C: SIGINT with its default action restored (a background job inherits it ignored).
    return subprocess.Popen(
        [sys.executable, "-m", "stratagate", "ui", "--db", str(db)], stdout=subprocess.PIPE,
        stderr=subprocess.PIPE, text=True, env=env, preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )


def test_ctrl_c_on_ui_ends_quietly(tmp_path: Path) -> None:
    db = make_db(tmp_path)
    ui = _ui(db)
    assert ui.stdout is not None
    assert ui.stdout.readline().startswith("StrataGate Memory: http://127.0.0.1:")
    ui.send_signal(signal.SIGINT)
    _, err = ui.communicate(timeout=HANG)
    assert ui.returncode == 0 and "Traceback" not in err, err


def test_ctrl_c_while_ui_loads_ends_quietly(tmp_path: Path) -> None:
    db = make_db(tmp_path)
    ui = _ui(db)
    ui.send_signal(signal.SIGINT)  # at once: while Python still imports the modules
    out, err = ui.communicate(timeout=HANG)
    # 130 from the command line, or killed by the signal before Python installed its handler (0 should the page
    # have got as far as its own handler): quiet in every case.
    assert ui.returncode in (130, -signal.SIGINT, 0) and "Traceback" not in err + out, err


def test_the_stratagate_script_runs_the_quiet_entry_point() -> None:
    project = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
    assert project["scripts"]["stratagate"] == "stratagate.__main__:run"
