#!/usr/bin/env bash
# Run the sidecar: JSON-RPC 2.0 on stdin/stdout (this is what the DSH shim starts). Arguments go to `serve`.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/bootstrap.sh >&2
exec .venv/bin/stratagate serve "$@"
