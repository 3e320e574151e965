#!/usr/bin/env bash
# Create .venv (Python >= 3.11) and install the sidecar with its test tools. Safe to run again.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${STRATAGATE_PYTHON:-python3}
if ! "$PY" -c 'import sys; sys.exit(0 if sys.version_info >= (3, 11) else 1)'; then
  echo "bootstrap: $PY is older than Python 3.11; set STRATAGATE_PYTHON to a newer interpreter" >&2
  exit 1
fi
if [ ! -x .venv/bin/python ]; then
  echo "bootstrap: creating .venv"
  "$PY" -m venv .venv
fi
stamp=.venv/.stratagate-installed
if [ ! -f "$stamp" ] || [ pyproject.toml -nt "$stamp" ]; then
  echo "bootstrap: installing the sidecar and test tools into .venv"
  .venv/bin/python -m pip install --quiet --upgrade pip
  .venv/bin/python -m pip install --quiet -e '.[test]'
  touch "$stamp"
fi
