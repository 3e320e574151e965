"""Command line: `stratagate serve` runs the JSON-RPC sidecar on stdio."""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
import sys
from pathlib import Path

from stratagate import __version__
from stratagate.config import SettingsError, load_settings


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="stratagate", description="StrataGate-Py memory sidecar for DSH")
    parser.add_argument("--version", action="version", version=f"stratagate {__version__}")
    sub = parser.add_subparsers(dest="command", required=True)
    serve = sub.add_parser("serve", help="speak JSON-RPC 2.0 on stdin/stdout (one JSON object per line)")
    serve.add_argument("--db", type=Path, help="SQLite file (default $STRATAGATE_DB or $DSH_HOME/stratagate/memory.db)")
    serve.add_argument("--block-turns", type=int, help="turns per sealed block (default 6)")
    serve.add_argument("--log-level", default="INFO", choices=["DEBUG", "INFO", "WARNING", "ERROR"])
    info = sub.add_parser("info", help="print database path, schema version and counts as JSON")
    info.add_argument("--db", type=Path)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    logging.basicConfig(
        stream=sys.stderr,
        level=getattr(args, "log_level", "INFO"),
        format="%(asctime)s stratagate %(levelname)s %(name)s: %(message)s",
    )
    try:
        settings = load_settings({"db": args.db, "block_turns": getattr(args, "block_turns", None)})
    except SettingsError as exc:
        print(f"stratagate: {exc}", file=sys.stderr)
        return 2
    if args.command == "serve":
        from stratagate.rpc.server import serve

        try:
            return asyncio.run(serve(settings))
        except KeyboardInterrupt:
            return 130
    if args.command == "info":
        from stratagate.app import App

        if not settings.db.exists():
            print(json.dumps({"db_path": str(settings.db), "exists": False}, indent=2))
            return 0

        async def show() -> None:
            app = App(settings)
            await app.db.open()
            try:
                print(json.dumps(await app.info(), indent=2, ensure_ascii=False))
            finally:
                await app.db.close()

        asyncio.run(show())
        return 0
    return 2
