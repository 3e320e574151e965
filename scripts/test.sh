#!/usr/bin/env bash
# The one way to run every check: lint, then the whole test suite. Extra arguments go to pytest.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/bootstrap.sh
echo "== ruff"
.venv/bin/ruff check sidecar tests bench
echo "== pytest"
.venv/bin/python -m pytest "$@"
