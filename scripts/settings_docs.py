"""Rewrite the settings tables of README.md and shim-js/README.md from the settings table
(sidecar/stratagate/settings_table.py); tests/test_docs.py fails while they differ.

    PYTHONPATH=sidecar .venv/bin/python scripts/settings_docs.py          # rewrite both
    PYTHONPATH=sidecar .venv/bin/python scripts/settings_docs.py --check  # exit 1 when either is stale
"""

from __future__ import annotations

import argparse
import re
import sys
from collections.abc import Callable
from pathlib import Path

from stratagate import settings_table

REPO = Path(__file__).resolve().parents[1]
BEGIN = (
    "<!-- settings-table: begin (generated from sidecar/stratagate/settings_table.py by scripts/settings_docs.py) -->"
)
END = "<!-- settings-table: end -->"
_BLOCK = re.compile(re.escape(BEGIN) + r"\n.*?" + re.escape(END), re.S)

DOCS: dict[str, Callable[[], str]] = {
    "README.md": settings_table.readme_table,
    "shim-js/README.md": settings_table.shim_table,
}


def marked(text: str) -> str | None:
    """The table between the markers (None: no markers)."""
    found = _BLOCK.search(text)
    return None if found is None else found.group(0)[len(BEGIN) + 1 : -len(END)].rstrip("\n")


def rewrite(text: str, table: str) -> str:
    if _BLOCK.search(text) is None:
        raise ValueError(f"no settings table markers ({BEGIN} … {END})")
    return _BLOCK.sub(lambda _: f"{BEGIN}\n{table}\n{END}", text, count=1)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="only check; exit 1 when a table is stale")
    args = parser.parse_args(argv)
    stale = []
    for name, table in DOCS.items():
        path = REPO / name
        text = path.read_text(encoding="utf-8")
        new = rewrite(text, table())
        if new != text:
            stale.append(name)
            if not args.check:
                path.write_text(new, encoding="utf-8")
    if stale:
        print(("stale: " if args.check else "rewrote: ") + ", ".join(stale))
    return 1 if args.check and stale else 0


if __name__ == "__main__":
    sys.exit(main())
