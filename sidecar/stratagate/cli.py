"""Command line: `stratagate serve` runs the JSON-RPC sidecar on stdio; `info`, `audit` and `stats` inspect a
database; `import` brings in, lists or removes memories exported from other assistants; `erase` removes a memory for
good; `redact` scrubs secrets out of a database; `maintain` runs a maintenance pass (or, `--dry-run`, reports one)."""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import sqlite3
import sys
from collections.abc import Awaitable, Callable, Coroutine
from pathlib import Path
from typing import TYPE_CHECKING, Any

from stratagate import __version__
from stratagate.config import SettingsError, load_settings
from stratagate.safety.logfmt import configure_logging

if TYPE_CHECKING:
    import aiosqlite

    from stratagate.config import Settings

def _server_parsers(sub: Any) -> None:
    """`mcp` and `ui`: the servers besides `serve`."""
    mcp = sub.add_parser("mcp", help="serve the memory to any MCP client (Model Context Protocol) on stdio, or "
                         "Streamable HTTP on 127.0.0.1 with --http")
    mcp.add_argument("--db", type=Path, help="SQLite file (default as for serve: $STRATAGATE_DB or "
                     "$DSH_HOME/stratagate/memory.db)")
    mcp.add_argument("--project", type=Path, help="the project folder whose memory to use (default: the client's "
                     "first root, else the current directory)")
    mcp.add_argument("--http", type=_port, metavar="PORT", help="serve Streamable HTTP on 127.0.0.1:PORT (0: pick a "
                     "free port; the URL is logged) instead of stdio")
    mcp.add_argument(
        "--log-level", choices=["DEBUG", "INFO", "WARNING", "ERROR"], help="default $STRATAGATE_LOG_LEVEL or INFO"
    )
    ui = sub.add_parser("ui", help="serve the Memory page for a database on 127.0.0.1 (see, trace, correct, export)")
    ui.add_argument("--db", type=Path, required=True, help="the SQLite file to inspect (it must exist)")
    ui.add_argument("--port", type=_port, default=0, help="TCP port (default 0: pick a free one; the URL is printed)")
    ui.add_argument("--host", default="127.0.0.1", choices=["127.0.0.1", "::1", "localhost"],
                    help="loopback address to listen on (the page has no login: never a public one)")
    ui.add_argument(
        "--log-level", choices=["DEBUG", "INFO", "WARNING", "ERROR"], help="default $STRATAGATE_LOG_LEVEL or INFO"
    )


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="stratagate", description="StrataGate-Py memory sidecar for DSH")
    parser.add_argument("--version", action="version", version=f"stratagate {__version__}")
    sub = parser.add_subparsers(dest="command", required=True)
    serve = sub.add_parser("serve", help="speak JSON-RPC 2.0 on stdin/stdout (one JSON object per line)")
    serve.add_argument("--db", type=Path, help="SQLite file (default $STRATAGATE_DB or $DSH_HOME/stratagate/memory.db)")
    serve.add_argument("--block-turns", type=int, help="turns per sealed block (default 6)")
    serve.add_argument(
        "--log-level", choices=["DEBUG", "INFO", "WARNING", "ERROR"], help="default $STRATAGATE_LOG_LEVEL or INFO"
    )
    _server_parsers(sub)
    sub.add_parser("tools", help="print the agent tools (tools.list) as JSON; plugin/tools.json is this output")
    sub.add_parser("settings", help="print the plugin options (from the settings table) as JSON; plugin/settings.json "
                   "is this output")
    sub.add_parser("prompt-section", help="print the DSH system-prompt section as JSON; plugin/prompt.json is this")
    sub.add_parser("turn-events", help="print the DSH event types the shim forwards; plugin/turn-events.json is this")
    info = sub.add_parser("info", help="print the database's path, size, schema, namespaces and counts as JSON")
    info.add_argument("--db", type=Path)
    audit = sub.add_parser("audit", help="print the newest audit log entries (every mutation: who, what, before/after)")
    audit.add_argument("--db", type=Path)
    audit.add_argument("--namespace", help="only entries of this namespace")
    audit.add_argument("--limit", type=_positive, default=20, help="how many entries, newest first (default 20)")
    audit.add_argument("--json", action="store_true", help="print a JSON array instead of one line per entry")
    red = sub.add_parser(
        "redact",
        help="scrub secrets out of a database written without redaction (makes a 0600 backup first)",
    )
    red.add_argument("--db", type=Path, required=True, help="the SQLite file to scrub")
    red.add_argument("--json", action="store_true", help="print the summary as JSON")
    imp = sub.add_parser(
        "import",
        help="import a Mem0, ChatGPT, Markdown, text or dsh-memory-connect export; list or remove imports",
    )
    imp.add_argument("file", nargs="?", type=Path, help="the export file to import")
    imp.add_argument("--remove", metavar="IMPORT_ID", help="remove an import (imp_N): archive its memories")
    imp.add_argument("--list", action="store_true", help="list imports (of --namespace, if given)")
    imp.add_argument("--db", type=Path)
    imp.add_argument("--namespace", help="memory space (default: the project namespace of the current directory)")
    imp.add_argument("--format", help="mem0, chatgpt, markdown, text or dsh-memory-connect (default: detect)")
    imp.add_argument("--scope", choices=["user", "project"], default="user", help="scope of the new events")
    imp.add_argument("--allow-duplicate", action="store_true", help="import a file that is already imported")
    imp.add_argument("--json", action="store_true", help="print the result as JSON")
    erase = sub.add_parser(
        "erase", help="erase an event (evt_N) or a captured message (msg_N) and every stored copy; cannot be undone"
    )
    erase.add_argument("id", help="evt_N or msg_N")
    erase.add_argument("--db", type=Path)
    erase.add_argument("--namespace", help="memory space (default: the project namespace of the current directory)")
    erase.add_argument("--yes", action="store_true", help="do not ask for confirmation")
    erase.add_argument("--json", action="store_true", help="print the result as JSON")
    tier = sub.add_parser(
        "tier",
        help="show or set whether a namespace shares the user tier (user-scope memories of every project)",
    )
    tier.add_argument("--db", type=Path)
    tier.add_argument("--namespace", help="memory space (default: the project namespace of the current directory)")
    onoff = tier.add_mutually_exclusive_group()
    onoff.add_argument("--on", dest="user_tier", action="store_const", const=True,
                       help="share this namespace's user-scope memories and see the other namespaces' (default)")
    onoff.add_argument("--off", dest="user_tier", action="store_const", const=False,
                       help="opt out: share none of its user-scope memories and see none of the others'")
    tier.add_argument("--json", action="store_true", help="print the result as JSON")
    team = sub.add_parser("team", help="team memory: `status` (outbox, lag, last error); `share` / `unshare` (this "
                          "project's decisions, changes, preferences and rules are team memory by default, or not)")
    team.add_argument("action", choices=["status", "share", "unshare"])
    team.add_argument("--db", type=Path)
    team.add_argument("--namespace", help="share/unshare: this namespace instead of the current folder's project")
    team.add_argument("--project", help="share: the project's name on the team server (default: the folder's name)")
    team.add_argument("--json", action="store_true", help="print JSON")
    stats = sub.add_parser("stats", help="print the maintenance report as JSON (counts, merges, sizes, job health)")
    stats.add_argument("--db", type=Path)
    maintain = sub.add_parser(
        "maintain", help="run a maintenance pass now: merge near-duplicate events, repair the graph, optimize"
    )
    maintain.add_argument("--db", type=Path)
    maintain.add_argument("--dry-run", action="store_true", help="report what it would do and write nothing")
    maintain.add_argument("--full", action="store_true",
                          help="consolidate every event, not only those changed since the last pass")
    maintain.add_argument("--json", action="store_true", help="print the result as JSON")
    return parser


class DbProblem(Exception):
    """A --db the command cannot use; the message names the database and what to do."""


SQLITE_HEADER = b"SQLite format 3\x00"


def _one_line(text: object) -> str:
    return " ".join(str(text).split())


def check_db(path: Path, *, create: bool = False) -> None:
    """Refuse, before anything opens it, a --db that cannot be a database: raises DbProblem."""
    if path.is_dir():
        raise DbProblem(f"{path} is a directory, not a database file; pass --db with the path of a database file")
    if not path.exists():
        if not path.parent.is_dir():
            raise DbProblem(f"no folder {path.parent} for the database {path}; create the folder or pass another --db")
        if not create:
            raise DbProblem(f"no database at {path}; pass --db with the path of an existing database")
        return
    try:
        with open(path, "rb") as f:
            header = f.read(len(SQLITE_HEADER))
    except OSError as exc:
        raise DbProblem(
            f"cannot read the database {path}: {exc.strerror or exc}; fix its permissions or pass another --db"
        ) from None
    if header and header != SQLITE_HEADER:
        raise DbProblem(f"{path} is not a SQLite database; pass --db with the path of a StrataGate database")


def db_problem(path: Path, exc: BaseException) -> str:
    """One line for a database that failed to open or to be used."""
    from stratagate.storage.db import DatabaseLocked, SchemaError

    text = _one_line(exc)
    if isinstance(exc, (DbProblem, SchemaError, DatabaseLocked)):
        return text
    if isinstance(exc, sqlite3.OperationalError) and ("locked" in text or "busy" in text):
        return f"the database {path} is locked by another process; try again when it has finished"
    if isinstance(exc, sqlite3.DatabaseError) and "not a database" in text:
        return f"{path} is not a SQLite database; pass --db with the path of a StrataGate database"
    return f"cannot use the database {path}: {text}; check the file or pass another --db"


def _used(path: Path) -> None:
    """Every command names the database it used, on stderr (stdout stays the command's output)."""
    print(f"database: {os.path.abspath(path)}", file=sys.stderr)


DB_ERRORS: tuple[type[BaseException], ...] = (DbProblem, sqlite3.Error, OSError)


def _namespace_unknown(command: str, db: Path, namespace: str | None, lock_timeout: float) -> bool:
    """True (after saying so, with the known names) when ``--namespace`` names no namespace of ``db``: a filter that
    matches nothing would otherwise print nothing at all."""
    from stratagate.cli_report import known_namespaces, unknown_namespace

    if namespace is None:
        return False
    known = known_namespaces(db, lock_timeout)
    if namespace in known:
        return False
    print(f"{command}: {unknown_namespace(namespace, known)}", file=sys.stderr)
    return True


def _db_errors(*also: type[BaseException]) -> tuple[type[BaseException], ...]:
    """``DB_ERRORS`` and ``also``, for an ``except`` clause (mypy does not read ``except (A, *DB_ERRORS)``)."""
    return (*also, *DB_ERRORS)


def _on_db(name: str, db_path: Path, lock_timeout: float, work: Callable[[Any], Awaitable[Any]]) -> tuple[int, Any]:
    """Open the database, run ``work(db)``, close it: ``(0, result)``, or the exit code with the error printed
    (1 for a refused request, 2 for a database problem). The CLI commands that write open the file themselves
    (safe while a sidecar runs: SQLite serialises writers)."""
    from stratagate.errors import DomainError
    from stratagate.safety.secrets import redact_shown
    from stratagate.storage.db import Database, SchemaError, StorageError
    from stratagate.wiring import register_hooks

    register_hooks()  # the stores' hooks, as the app registers them: the graph follows event status

    async def run() -> Any:
        db = Database(db_path, lock_timeout=lock_timeout)
        await db.open()
        try:
            return await work(db)
        finally:
            await db.close()

    try:
        result = asyncio.run(run())
    except DomainError as exc:
        print(f"{name}: {_one_line(redact_shown(str(exc)))}", file=sys.stderr)
        return 1, None
    except _db_errors(SchemaError, StorageError) as exc:
        print(f"{name}: {db_problem(db_path, exc)}", file=sys.stderr)
        return 2, None
    _used(db_path)
    return 0, result


def _port(value: str) -> int:
    try:
        number = int(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a port number: {value!r}") from None
    if not 0 <= number <= 65535:
        raise argparse.ArgumentTypeError("must be 0-65535 (0: pick a free port)")
    return number


def ui_command(args: argparse.Namespace, settings: Any) -> int:
    """`stratagate ui --db PATH`: the Memory page on a loopback port until SIGINT/SIGTERM (Ctrl-C: no traceback)."""
    from stratagate.page.server import ListenError, serve_ui  # a Ctrl-C while it loads: __main__.run ends quietly

    try:
        check_db(settings.db)  # an inspector never creates an empty database for a mistyped path
    except DbProblem as exc:
        print(f"stratagate ui: {exc}", file=sys.stderr)
        return 2
    _used(settings.db)
    # A Ctrl-C before the page's own SIGINT handler is installed (while the app starts) says "stopped".
    return _run_server("stratagate ui", serve_ui(settings, args.host, args.port), settings, ListenError, "stopped")


def _run_server(
    name: str, main: Coroutine[Any, Any, int], settings: Settings, listen_error: type[Exception], stopped: str = ""
) -> int:
    """Run a server command's loop (`ui`, `mcp`): Ctrl-C exits 130 without a traceback; a port or database problem is
    one line on stderr and exit 2."""
    from stratagate.storage.db import SchemaError, StorageError

    try:
        return asyncio.run(main)
    except KeyboardInterrupt:
        if stopped:
            print(f"{name}: {stopped}", file=sys.stderr)
        return 130
    except listen_error as exc:
        print(f"{name}: {exc}", file=sys.stderr)
        return 2
    except _db_errors(SchemaError, StorageError) as exc:
        print(f"{name}: {db_problem(settings.db, exc)}", file=sys.stderr)
        return 2


def _positive(value: str) -> int:
    try:
        number = int(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {value!r}") from None
    if number < 1:
        raise argparse.ArgumentTypeError("must be at least 1")
    return number


def _loads(value: str | None) -> object:
    if value is None:
        return None
    try:
        return json.loads(value)
    except ValueError:
        return value


def audit_entries(db: Path, namespace: str | None, limit: int, lock_timeout: float = 5.0) -> list[dict[str, object]]:
    """The newest audit rows first, read through a read-only connection (safe while the sidecar runs)."""
    from stratagate.storage.db import SchemaError
    from stratagate.storage.schema import SCHEMA_VERSION

    conn = sqlite3.connect(f"{db.resolve().as_uri()}?mode=ro", uri=True, timeout=lock_timeout)
    conn.row_factory = sqlite3.Row
    try:
        version = int(conn.execute("PRAGMA user_version").fetchone()[0])
        if version > SCHEMA_VERSION:
            raise SchemaError(
                f"database {db} has schema version {version}, newer than this stratagate understands "
                f"({SCHEMA_VERSION}); upgrade stratagate"
            )
        sql = (
            "SELECT a.id, a.at, a.actor, a.action, n.name AS namespace, a.subject_type, a.subject_id, a.before, a.after"
            " FROM audit_log a LEFT JOIN namespaces n ON n.id = a.namespace_id"
        )
        params: tuple[object, ...] = ()
        if namespace is not None:
            sql += " WHERE n.name = ?"
            params = (namespace,)
        rows = conn.execute(sql + " ORDER BY a.id DESC LIMIT ?", (*params, limit)).fetchall()
    finally:
        conn.close()
    return [dict(r) | {"before": _loads(r["before"]), "after": _loads(r["after"])} for r in rows]


def _print_audit(entries: list[dict[str, object]], as_json: bool) -> None:
    if as_json:
        print(json.dumps(entries, indent=2, ensure_ascii=False))
        return
    for e in entries:
        subject = f"{e['subject_type']}:{e['subject_id']}" if e["subject_id"] else "-"
        print(f"#{e['id']} {e['at']} {e['actor']} {e['action']} {subject} ns={e['namespace'] or '-'}")
        for key in ("before", "after"):
            if e[key] is not None:
                print(f"    {key}: {json.dumps(e[key], ensure_ascii=False, sort_keys=True)}")


def _ids(values: list[str]) -> str:
    return f"{len(values)}" + (f" ({', '.join(values)})" if values else "")


def _print_import(command: str, result: dict[str, Any], as_json: bool) -> None:
    if as_json:
        print(json.dumps(result, indent=2, ensure_ascii=False))
    elif command == "list":
        for i in result["imports"]:
            events = ", ".join(f"{k} {v}" for k, v in sorted(i["counts"]["events"].items())) or "none"
            print(f"{i['id']} {i['status']} {i['format']} {i['source_name']} ns={i['namespace']} {i['created_at']}")
            print(f"    items: {i['item_count']}; events: {events}; merged sources: {i['counts']['merged_sources']}")
    elif command == "remove":
        print(f"removed: {result['import_id']}")
        print(f"archived: {_ids(result['archived'])}")
        print(f"restored: {_ids(result['restored'])}")
    else:
        print(f"import: {result['import_id']} ({result['format']}, {result['source_name']}, ns={result['namespace']})")
        print(f"items: {result['items']}")
        print(f"inserted: {_ids(result['inserted'])}")
        print(f"merged: {_ids(result['merged'])}")
        print(f"suppressed: {result['suppressed']}")
        print(f"skipped_inactive: {result['skipped_inactive']}")
        struck = result["struck_refs"]
        print(f"skipped_struck: {result['skipped_struck']}" + (f" ({', '.join(struck)})" if struck else ""))
        if result["partly_struck_refs"]:
            print(f"partly_struck (struck words left out): {', '.join(result['partly_struck_refs'])}")
        for warning in result["warnings"]:
            print(f"warning: {warning}")


def import_command(args: argparse.Namespace, db_path: Path, lock_timeout: float) -> int:
    """`stratagate import`: opens the database itself (safe while a sidecar runs: SQLite serialises writers)."""
    from stratagate.cli_report import format_mismatch
    from stratagate.errors import DomainError
    from stratagate.imports import store
    from stratagate.imports.parsers import ImportFormatError, parse_file
    from stratagate.imports.store import parse_import_id
    from stratagate.namespaces import ResolveParams, resolve
    from stratagate.safety.secrets import redact_shown
    from stratagate.storage.db import Database, SchemaError, StorageError
    from stratagate.wiring import register_hooks

    register_hooks()  # the stores' hooks, as the app registers them: removing an import archives its events
    modes = [name for name, given in (("FILE", args.file), ("--remove", args.remove), ("--list", args.list)) if given]
    if len(modes) != 1:
        print("stratagate import: give exactly one of FILE, --remove IMPORT_ID or --list", file=sys.stderr)
        return 1
    namespace = args.namespace or resolve(ResolveParams(mode="project", cwd=os.getcwd()))["namespace"]
    if args.file and args.format and (mismatch := format_mismatch(args.file, args.format)):
        print(f"stratagate import: {mismatch}", file=sys.stderr)
        return 1
    try:
        check_db(db_path, create=bool(args.file))  # importing a file may create the database; listing may not
        if not args.file and _namespace_unknown("stratagate import", db_path, args.namespace, lock_timeout):
            return 1
    except DbProblem as exc:
        print(f"stratagate import: {exc}", file=sys.stderr)
        return 2

    async def run() -> tuple[str, dict[str, Any]]:
        db = Database(db_path, lock_timeout=lock_timeout)
        if args.file:
            # Parse before opening the database, so a bad file creates nothing.
            batch = parse_file(args.file, args.format)
            await db.open()
            try:
                return "run", await store.run_import(
                    db, namespace, batch, scope=args.scope, allow_duplicate=args.allow_duplicate,
                    allow_duplicate_name="--allow-duplicate",
                )
            finally:
                await db.close()
        await db.open()
        try:
            if args.remove:
                return "remove", await store.remove_import(db, parse_import_id(args.remove), args.namespace)
            return "list", {"imports": await store.list_imports(db.reader, args.namespace)}
        finally:
            await db.close()

    try:
        command, result = asyncio.run(run())
    except ImportFormatError as exc:
        print(f"stratagate import: {_one_line(exc)}", file=sys.stderr)
        return 1
    except DomainError as exc:
        print(f"stratagate import: {_one_line(redact_shown(str(exc)))}", file=sys.stderr)
        return 1
    except _db_errors(SchemaError, StorageError) as exc:
        print(f"stratagate import: {db_problem(db_path, exc)}", file=sys.stderr)
        return 2
    _used(db_path)
    _print_import(command, result, args.json)
    return 0


def redact_command(args: argparse.Namespace) -> int:
    """`stratagate redact --db PATH`: backup, then one transaction that rewrites every stored secret."""
    from stratagate.scrub import ScrubError, scrub
    from stratagate.storage.db import SchemaError, StorageError

    try:
        check_db(args.db)
        report = asyncio.run(scrub(args.db))
    except (ScrubError, StorageError) as exc:
        print(f"stratagate redact: {_one_line(exc)}", file=sys.stderr)
        return 2
    except _db_errors(SchemaError) as exc:
        print(f"stratagate redact: {db_problem(args.db, exc)}", file=sys.stderr)
        return 2
    _used(args.db)
    summary = report.as_dict()
    if args.json:
        print(json.dumps(summary, indent=2, ensure_ascii=False))
        return 0
    print(f"backup: {summary['backup']}")
    total = sum(summary["rows_changed"].values())
    print(f"rows rewritten: {total}" + "".join(f"\n    {t}: {n}" for t, n in summary["rows_changed"].items()))
    print(
        f"secrets redacted: {sum(summary['secrets_by_kind'].values())}"
        + "".join(f"\n    {k}: {n}" for k, n in summary["secrets_by_kind"].items())
    )
    print(f"embeddings deleted (recomputed by the embedding job): {summary['embeddings_deleted']}")
    return 0


def tier_command(args: argparse.Namespace, db_path: Path, lock_timeout: float) -> int:
    """`stratagate tier`: show or set a namespace's user tier (opens the database itself, like erase)."""
    from stratagate import namespaces

    namespace = args.namespace or namespaces.resolve(
        namespaces.ResolveParams(mode="project", cwd=os.getcwd()))["namespace"]
    try:
        check_db(db_path, create=args.user_tier is not None)  # opting out may come before the first turn
        if args.user_tier is None and _namespace_unknown("stratagate tier", db_path, args.namespace, lock_timeout):
            return 1
    except DbProblem as exc:
        print(f"stratagate tier: {exc}", file=sys.stderr)
        return 2

    async def work(db: Any) -> dict[str, Any]:
        if args.user_tier is None:
            return await namespaces.settings_of(db, namespace)
        return await namespaces.set_user_tier(db, namespace, args.user_tier, "user")

    code, result = _on_db("stratagate tier", db_path, lock_timeout, work)
    if code:
        return code
    if args.json:
        print(json.dumps(result, indent=2, ensure_ascii=False))
    else:
        state = "on (shares and sees user-tier memories)" if result["user_tier"] else "off (opted out)"
        print(f"{namespace}: user tier {state}{'' if result.get('changed', True) else ' (unchanged)'}")
    return 0


def erase_command(args: argparse.Namespace, db_path: Path, max_attempts: int, lock_timeout: float) -> int:
    """`stratagate erase`: opens the database itself (safe while a sidecar runs: SQLite serialises writers)."""
    from stratagate import ids
    from stratagate.erase import erase_subject
    from stratagate.namespaces import ResolveParams, resolve

    if ids.parse(args.id.strip(), "evt") is None and ids.parse(args.id.strip(), "msg") is None:
        print(f"stratagate erase: {args.id!r} is not an event id (evt_12) or a message id (msg_40)", file=sys.stderr)
        return 1
    try:
        check_db(db_path)
    except DbProblem as exc:
        print(f"stratagate erase: {exc}", file=sys.stderr)
        return 2
    namespace = args.namespace or resolve(ResolveParams(mode="project", cwd=os.getcwd()))["namespace"]
    if not args.yes:
        if not sys.stdin.isatty():
            print("stratagate erase: erasing cannot be undone; pass --yes to confirm", file=sys.stderr)
            return 1
        answer = input(f"Erase {args.id} from {namespace} for good (cannot be undone)? [y/N] ")
        if answer.strip().lower() not in ("y", "yes"):
            print("stratagate erase: nothing erased", file=sys.stderr)
            return 1

    async def work(db: Any) -> dict[str, Any]:
        return await erase_subject(db, namespace, args.id, "user", max_attempts=max_attempts)

    code, result = _on_db("stratagate erase", db_path, lock_timeout, work)
    if code:
        return code
    if args.json:
        print(json.dumps(result, indent=2, ensure_ascii=False))
    else:
        counts = ", ".join(f"{k} {v}" for k, v in sorted(result["counts"].items()))
        print(f"erased: {result['id']} ({counts})")
    return 0


async def _read_only(db: Path, uri: str, lock_timeout: float) -> aiosqlite.Connection:
    """A read-only connection (safe while a sidecar runs; it cannot write a byte) to a database of this schema."""
    import aiosqlite

    from stratagate.storage.db import SchemaError
    from stratagate.storage.schema import SCHEMA_VERSION

    conn = await aiosqlite.connect(uri, uri=True, timeout=lock_timeout)
    conn.row_factory = sqlite3.Row
    try:
        row = await (await conn.execute("PRAGMA user_version")).fetchone()
        assert row is not None  # the pragma always answers one row
        version = int(row[0])
    except BaseException:
        await conn.close()
        raise
    if version != SCHEMA_VERSION:
        await conn.close()
        if version > SCHEMA_VERSION:
            raise SchemaError(f"database {db} has schema version {version}, newer than this stratagate understands "
                              f"({SCHEMA_VERSION}); upgrade stratagate")
        raise SchemaError(f"database {db} has schema version {version}, older than {SCHEMA_VERSION}; start the "
                          "sidecar (or run `stratagate maintain` without --dry-run) once to migrate it")
    return conn


def _print_maintenance(result: dict[str, Any], as_json: bool) -> None:
    if as_json:
        print(json.dumps(result, indent=2, ensure_ascii=False))
        return
    verb = "would merge" if result["dry_run"] else "merged"
    print(f"{'dry run' if result['dry_run'] else 'run ' + str(result['run_id'])}: {verb} {result['merged']}")
    for m in result["merges"]:
        print(f"    {m['merged']} into {m['survivor']} ({m['match']}, similarity {m['similarity']},"
              f" ns={m['namespace']})")
    for key, values in result["reprojection"].items():
        print(f"{key}: {_ids(values)}")
    for side, n in result["fallbacks_requeued"].items():
        if n is not None:
            print(f"fallback {side} requeued: {n}")


def team_command(args: argparse.Namespace, settings: Settings) -> int:
    """`stratagate team status`: the local sync state through a read-only connection (safe while a sidecar runs),
    and, when a team database is configured, how many server changes each shared project has not pulled yet."""
    from stratagate.safety.dsn import shown
    from stratagate.team.sync import status_of

    try:
        check_db(settings.db, create=args.action != "status")
    except DbProblem as exc:
        print(f"stratagate team: {exc}", file=sys.stderr)
        return 2
    if args.action != "status":
        return _team_share(args, settings)

    async def run() -> dict[str, Any]:
        local = await _read_only(settings.db, f"{settings.db.resolve().as_uri()}?mode=ro", settings.db_lock_timeout_s)
        server = None
        try:
            if settings.team_dsn:
                import asyncpg

                try:
                    server = await asyncpg.connect(settings.team_dsn, timeout=10)
                except Exception as exc:  # shown without the DSN's secrets
                    error = f"{type(exc).__name__} ({shown(settings.team_dsn)})"
                    return await status_of(local) | {"reachable": False, "reach_error": error}
            return await status_of(local, server) | ({"reachable": True} if server is not None else {})
        finally:
            if server is not None:
                await server.close()
            await local.close()

    result = asyncio.run(run())
    if args.json:
        print(json.dumps(result, indent=2, ensure_ascii=False))
    elif not result["enabled"]:
        print("team memory: off (set STRATAGATE_TEAM_DSN and STRATAGATE_TEAM_MEMBER, then restart the sidecar)")
    else:
        print(f"team memory: on, member {result['member']}, server {result['server']}")
        print(f"  outbox: {result['outbox']} change(s) not pushed" + (
            f" (oldest {result['outbox_oldest']})" if result["outbox_oldest"] else ""))
        print(f"  last push: {result['pushed_at'] or 'never'}; last pull: {result['pulled_at'] or 'never'}")
        for project, behind in sorted((result.get("behind") or {}).items()):
            print(f"  {project}: {behind} server change(s) not pulled yet")
        if result.get("reachable") is False:
            print(f"  server unreachable now: {result['reach_error']}")
        if result["last_error"]:
            print(f"  last error ({result['error_at']}): {result['last_error']}")
    return 0


def _team_share(args: argparse.Namespace, settings: Settings) -> int:
    from stratagate import namespaces
    from stratagate.events import team
    from stratagate.storage import lookup

    namespace = args.namespace or namespaces.resolve(
        namespaces.ResolveParams(mode="project", cwd=os.getcwd()))["namespace"]

    async def work(db: Any) -> dict[str, Any]:
        async with db.transaction() as conn:
            ns = await lookup.ensure_namespace(conn, namespace)
            await team.set_namespace_team(conn, ns, default=args.action == "share", project=args.project)
            return await team.namespace_team(conn, ns)

    code, result = _on_db("stratagate team", settings.db, settings.db_lock_timeout_s, work)
    if code:
        return code
    if args.json:
        print(json.dumps({"namespace": namespace, **result}, indent=2, ensure_ascii=False))
    else:
        how = "shared with the team by default" if result["team_default"] else "kept in the project unless said as team"
        print(f"{namespace}: decisions, changes, preferences and rules {how} (team project {result['team_project']})")
    return 0


def maintenance_command(args: argparse.Namespace, settings: Any) -> int:
    """`stratagate stats` and `stratagate maintain [--dry-run]`: open the database themselves (safe while a sidecar
    runs); stats and a dry run read through a read-only connection."""
    from stratagate.maintenance import stats
    from stratagate.maintenance.run import Maintenance, dry_run
    from stratagate.storage.db import Database, SchemaError, StorageError
    from stratagate.wiring import register_hooks

    name = f"stratagate {args.command}"
    try:
        check_db(settings.db)
    except DbProblem as exc:
        print(f"{name}: {exc}", file=sys.stderr)
        return 2

    uri = f"{settings.db.resolve().as_uri()}?mode=ro"

    async def run() -> dict[str, Any]:
        if args.command == "stats" or args.dry_run:
            conn = await _read_only(settings.db, uri, settings.db_lock_timeout_s)
            try:
                if args.command == "stats":
                    return await stats.report(conn, settings.db, settings.maintenance_interval_hours)
                return await dry_run(conn, settings)
            finally:
                await conn.close()
        register_hooks()  # the stores' hooks, as the app registers them: a merge supersedes events
        db = Database(settings.db, lock_timeout=settings.db_lock_timeout_s)
        await db.open()
        try:
            return await Maintenance(db, settings).run_pass("manual", "user", full=args.full)
        finally:
            await db.close()

    try:
        result = asyncio.run(run())
    except _db_errors(SchemaError, StorageError) as exc:
        print(f"{name}: {db_problem(settings.db, exc)}", file=sys.stderr)
        return 2
    _used(settings.db)
    if args.command == "stats":
        print(json.dumps(result, indent=2, ensure_ascii=False))
    else:
        _print_maintenance(result, args.json)
    return 0


def _tokenizer_in_background() -> None:
    """Start building the token encoding in a daemon thread (what counts tokens waits for it: App.tokens_ready;
    a failure here is reported by the first count, which builds again)."""
    import threading

    from stratagate import tokens

    def build() -> None:
        with contextlib.suppress(Exception):
            tokens.get_encoding()

    threading.Thread(target=build, name="tokenizer", daemon=True).start()


def _serve_command(args: argparse.Namespace, settings: Settings) -> int:
    _tokenizer_in_background()
    from stratagate.context.settings import parse_config

    try:
        parse_config(settings.context_config)
    except ValueError as exc:
        print(f"stratagate: invalid configuration: {exc}", file=sys.stderr)
        return 2
    from stratagate.rpc.server import serve

    # The secret detector is built in a thread once the first answer is out (App.answered), or earlier by a request
    # that needs it. The token encoding's build started above, before the imports: it holds the GIL for ~75 ms in
    # one C call (tiktoken's CoreBPE), which overlaps the imports there instead of stalling the serving loop, and a
    # recall (the usual first request) needs it anyway.
    try:
        return asyncio.run(serve(settings))
    except KeyboardInterrupt:
        return 130


def _mcp_command(args: argparse.Namespace, settings: Settings) -> int:
    """`stratagate mcp`: the MCP server (stratagate/mcp_server/); the SDK is imported by this command only."""
    if args.project is not None and not args.project.is_dir():
        print(f"stratagate mcp: --project {args.project} is not a folder", file=sys.stderr)
        return 2
    # Before anything else may print: stdout is the protocol's (stdio), or stays unused (--http).
    out_fd = None
    if args.http is None:
        from stratagate.mcp_server.stdio import protocol_stdout

        out_fd = protocol_stdout()
    from stratagate.mcp_server.server import ListenError, run

    _used(settings.db)
    project = str(args.project.resolve()) if args.project is not None else None
    return _run_server("stratagate mcp", run(settings, project, args.http, out_fd), settings, ListenError)


def _tools_command(args: argparse.Namespace, settings: Settings) -> int:
    from stratagate.tools.catalog import tool_specs

    print(json.dumps(tool_specs(), indent=2, ensure_ascii=False))
    return 0


def _settings_command(args: argparse.Namespace, settings: Settings) -> int:
    from stratagate.settings_table import plugin_manifest

    print(json.dumps(plugin_manifest(), indent=2, ensure_ascii=False))
    return 0


def _prompt_section_command(args: argparse.Namespace, settings: Settings) -> int:
    from stratagate.dsh.prompt import prompt_section

    print(json.dumps(prompt_section().model_dump(), indent=2, ensure_ascii=False))
    return 0


def _turn_events_command(args: argparse.Namespace, settings: Settings) -> int:
    from stratagate.dsh.events import TURN_EVENT_TYPES

    print(json.dumps({"event_types": list(TURN_EVENT_TYPES)}, indent=2))
    return 0


def _info_command(args: argparse.Namespace, settings: Settings) -> int:
    from stratagate.app import App
    from stratagate.cli_report import known_namespaces, one_shot_info
    from stratagate.storage.db import SchemaError, StorageError

    if not settings.db.exists() and not settings.db.is_symlink():
        # An inspector: "nothing there yet" is an answer (a fresh DSH home has no folder either), not an error.
        _used(settings.db)
        print(json.dumps({"db_path": str(settings.db), "exists": False}, indent=2))
        return 0
    try:
        check_db(settings.db)
    except DbProblem as exc:
        print(f"stratagate info: {exc}", file=sys.stderr)
        return 2

    async def show() -> dict[str, Any]:
        app = App(settings)  # not started: no job runner, no warm-up threads
        await app.db.open()
        try:
            return await app.info()
        finally:
            await app.db.close()

    try:
        info = asyncio.run(show())
        namespaces = known_namespaces(settings.db, settings.db_lock_timeout_s)
    except _db_errors(SchemaError, StorageError) as exc:
        print(f"stratagate info: {db_problem(settings.db, exc)}", file=sys.stderr)
        return 2
    _used(settings.db)
    report = one_shot_info(info, namespaces, settings.db.stat().st_size)
    print(json.dumps(report, indent=2, ensure_ascii=False))
    return 0


def _audit_command(args: argparse.Namespace, settings: Settings) -> int:
    from stratagate.storage.db import SchemaError

    try:
        check_db(settings.db)
        if _namespace_unknown("stratagate audit", settings.db, args.namespace, settings.db_lock_timeout_s):
            return 1
        entries = audit_entries(settings.db, args.namespace, args.limit, settings.db_lock_timeout_s)
    except _db_errors(SchemaError) as exc:
        print(f"stratagate audit: {db_problem(settings.db, exc)}", file=sys.stderr)
        return 2
    _used(settings.db)
    _print_audit(entries, args.json)
    return 0


COMMANDS: dict[str, Callable[[argparse.Namespace, Settings], int]] = {
    "serve": _serve_command,
    "ui": ui_command,
    "mcp": _mcp_command,
    "tools": _tools_command,
    "settings": _settings_command,
    "prompt-section": _prompt_section_command,
    "turn-events": _turn_events_command,
    "info": _info_command,
    "audit": _audit_command,
    "import": lambda args, s: import_command(args, s.db, s.db_lock_timeout_s),
    "stats": maintenance_command,
    "maintain": maintenance_command,
    "team": team_command,
    "erase": lambda args, s: erase_command(args, s.db, s.job_max_attempts, s.db_lock_timeout_s),
    "tier": lambda args, s: tier_command(args, s.db, s.db_lock_timeout_s),
}
"""The commands that run on the loaded settings (``redact`` runs without them: it must work when they are broken)."""


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    configure_logging(getattr(args, "log_level", None) or os.environ.get("STRATAGATE_LOG_LEVEL") or "INFO")
    if args.command == "redact":
        return redact_command(args)
    try:
        settings = load_settings({"db": getattr(args, "db", None), "block_turns": getattr(args, "block_turns", None)})
    except SettingsError as exc:
        print(f"stratagate: {exc}", file=sys.stderr)
        return 2
    command = COMMANDS.get(args.command)
    return 2 if command is None else command(args, settings)
