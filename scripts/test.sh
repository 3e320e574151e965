#!/usr/bin/env bash
# The one way to run every check, in lanes: the cheap ones first so a mistake fails fast, the rest side by side where
# the machine has room (CI has 2 cores).
#
#   setup    .venv (scripts/bootstrap.sh: the sidecar, test tools, chromium, playwright-core); the pinned DSH starts
#            installing in the background (scripts/install-dsh.sh)
#   lint     ruff, import-linter (the layers contract), mypy (the type checker)
#   unit     pytest -m 'not e2e' on 2 workers (pytest-xdist, a file per worker at a time) under coverage, while the
#            shim's node tests run beside it
#   browser  the Memory page in headless chromium (tests/browser/)
#   host     pytest -m e2e: the real, pinned DSH (tests/e2e/)
#   report   coverage against the floor in .ci/coverage-floor, and the 25 slowest tests of the run
#
# `npm test` runs every lane. With arguments (`npm test -- -k decay`, `npm test -- tests/test_jobs.py`), the lint lane
# runs and then one pytest run with those arguments on 2 workers. STRATAGATE_TEST_LANES picks lanes
# (e.g. `STRATAGATE_TEST_LANES="lint unit" npm test`); STRATAGATE_TEST_WORKERS sets the workers (default 2).
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
OUT=$ROOT/.test-out
rm -rf "$OUT"
mkdir -p "$OUT"
WORKERS=${STRATAGATE_TEST_WORKERS:-2}
LANES=${STRATAGATE_TEST_LANES:-setup lint unit browser host report}
[ $# -gt 0 ] && LANES="setup lint args"
has() { case " $LANES " in *" $1 "*) return 0 ;; *) return 1 ;; esac; }
T0=$(date +%s)
lane() { echo; echo "== $1 (at $(( $(date +%s) - T0 )) s)"; }

# Downloads (pip's and npm's caches, the DSH install) live outside the clone, where a runner keeps them.
export STRATAGATE_DSH_LOCAL=${STRATAGATE_DSH_LOCAL:-${XDG_CACHE_HOME:-$HOME/.cache}/stratagate/dsh-local}

lane setup
bash scripts/bootstrap.sh
# The shim's tests and the e2e plugin run the sidecar with this venv (bootstrap.sh reads the same variable as the
# Python to create .venv with, so it is set only now).
export STRATAGATE_PYTHON=$ROOT/.venv/bin/python
dsh_pid=
if has host; then
  # Network-bound: it downloads while the lint and unit lanes use the CPU. The e2e fixture runs the same script,
  # which then finds the install up to date (the script holds a lock while it installs).
  bash scripts/install-dsh.sh >"$OUT/install-dsh.log" 2>&1 &
  dsh_pid=$!
fi

if has lint; then
  lane lint
  echo "-- ruff"
  .venv/bin/ruff check sidecar tests bench scripts
  echo "-- import-linter"
  # PYTHONPATH makes grimp read this checkout's sidecar/ even when .venv's editable install points at another worktree.
  PYTHONPATH="$ROOT/sidecar" .venv/bin/lint-imports --no-cache
  echo "-- mypy"
  PYTHONPATH="$ROOT/sidecar" .venv/bin/mypy
fi

pytest_run() { # name, then pytest arguments
  local name=$1
  shift
  .venv/bin/python -m pytest -n "$WORKERS" --dist loadfile --junitxml="$OUT/$name.xml" "$@"
}

if has args; then
  lane pytest
  pytest_run args "$@"
  exit 0
fi

status=0
if has unit; then
  lane "unit (pytest on $WORKERS workers, beside the shim's node tests)"
  node --test tests/js/*.test.mjs >"$OUT/node.log" 2>&1 &
  node_pid=$!
  pytest_run unit -m 'not e2e' --cov --cov-report= || status=$?
  node_status=0
  wait "$node_pid" || node_status=$?
  echo "-- node --test (shim): exit $node_status"
  cat "$OUT/node.log"
  [ "$status" = 0 ] || { echo "unit lane: pytest failed (exit $status)"; exit "$status"; }
  [ "$node_status" = 0 ] || { echo "unit lane: the shim's node tests failed (exit $node_status)"; exit "$node_status"; }
fi

if has browser; then
  lane browser
  node --test tests/browser/*.test.mjs
fi

if has host; then
  lane "host (pytest -m e2e on $WORKERS workers, the real DSH)"
  dsh_status=0
  wait "$dsh_pid" || dsh_status=$?
  echo "-- install-dsh.sh: exit $dsh_status"
  tail -n 5 "$OUT/install-dsh.log"
  # A failed install is reported by the e2e fixture itself (every e2e test fails with the install log).
  cov=(--cov --cov-report=)
  has unit && cov+=(--cov-append)
  pytest_run host -m e2e "${cov[@]}"
fi

if has report; then
  lane report
  .venv/bin/python scripts/test_report.py --floor .ci/coverage-floor "$OUT"/unit.xml "$OUT"/host.xml
fi
echo
echo "== all lanes passed in $(( $(date +%s) - T0 )) s"
