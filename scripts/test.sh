#!/usr/bin/env bash
# The one way to run every check: lint, the shim's unit tests (Node's test runner), the Memory page's browser tests
# (headless chromium, tests/browser/), then the whole pytest suite, which includes the end-to-end tests against a
# real, pinned DSH (tests/e2e/, installed on first run).
# Extra arguments go to pytest (e.g. `npm test -- -m 'not e2e'`).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/bootstrap.sh
echo "== ruff"
.venv/bin/ruff check sidecar tests bench scripts
echo "== import-linter"
# The layers contract in pyproject.toml ([tool.importlinter]): no import cycle between sidecar packages. PYTHONPATH
# makes grimp read this checkout's sidecar/ even when .venv's editable install points at another worktree.
PYTHONPATH="$PWD/sidecar" .venv/bin/lint-imports --no-cache
echo "== node --test (shim)"
STRATAGATE_PYTHON="$PWD/.venv/bin/python" node --test tests/js/*.test.mjs
echo "== node --test (Memory page in chromium)"
STRATAGATE_PYTHON="$PWD/.venv/bin/python" node --test tests/browser/*.test.mjs
echo "== pytest"
.venv/bin/python -m pytest "$@"
