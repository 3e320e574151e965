#!/usr/bin/env bash
# The main job: a local, pinned DeepSeek Harness with StrataGate-Py installed, serving `dsh web`.
# Uses DeepSeek when DEEPSEEK_API_KEY is set, else the offline demo model on 127.0.0.1 with StrataGate in
# zero-model mode (scripts/demo_settings.py: no model call; titles, summaries and events written by rule).
#   STRATAGATE_DEMO_HOME  DSH home for the demo (default .dsh-local/home; your ~/.dsh is not touched)
#   STRATAGATE_DEMO_PORT  port of the web UI (default 3099)
# Progress goes to stderr, one line per step with its elapsed time, and a line at least every 5 s within a step.
set -euo pipefail
REPO=$(cd "$(dirname "$0")/.." && pwd)
cd "$REPO"
. scripts/progress.sh
PORT=${STRATAGATE_DEMO_PORT:-3099}
STEPS=4
started=$SECONDS
step_no=0
step_t0=$SECONDS
say() { echo "start: $*" >&2; }
step() {
  step_no=$((step_no + 1))
  step_t0=$SECONDS
  say "[$step_no/$STEPS] $*"
}
step_done() { say "[$step_no/$STEPS] done in $((SECONDS - step_t0)) s${1:+ ($1)}"; }

step "Python environment (.venv with the sidecar; the first run downloads its packages, a few minutes)"
bash scripts/bootstrap.sh --demo >&2
step_done

step "DeepSeek Harness (pinned DSH, Node 22 and pnpm under .dsh-local; the first run takes a few minutes)"
bin=$(bash scripts/install-dsh.sh | sed -n 's/^bin=//p')
export PATH="$bin:$PATH"
step_done "$(dsh --version 2>/dev/null | head -n1)"

export DSH_HOME=${STRATAGATE_DEMO_HOME:-$REPO/.dsh-local/home}
export DSH_TELEMETRY_DISABLED=1
mkdir -p "$DSH_HOME" "$REPO/.dsh-local/pack"

step "StrataGate plugin (npm pack, then install into the web profile of $DSH_HOME)"
rm -f "$REPO"/.dsh-local/pack/*.tgz
with_progress "npm pack" npm pack --silent --pack-destination "$REPO/.dsh-local/pack" >/dev/null
tgz=$(ls "$REPO"/.dsh-local/pack/*.tgz)
if [ -f "$DSH_HOME/profiles/web/package.json" ] && grep -q '"stratagate-py"' "$DSH_HOME/profiles/web/package.json"; then
  with_progress "dsh plugin remove (the previous build)" dsh plugin --profile web remove stratagate-py >/dev/null
fi
with_progress "dsh plugin add" dsh plugin --profile web add "$tgz" >/dev/null
# The sidecar runs from this checkout's .venv (no separate venv needed for the demo).
export STRATAGATE_PYTHON="$REPO/.venv/bin/python"
step_done "$(basename "$tgz")"

step "start (model, then dsh web on port $PORT)"
model_pid=""
web_pid=""
cleanup() {
  if [ -n "$web_pid" ]; then kill "$web_pid" 2>/dev/null || true; wait "$web_pid" 2>/dev/null || true; fi
  if [ -n "$model_pid" ]; then kill "$model_pid" 2>/dev/null || true; fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM
if [ -n "${DEEPSEEK_API_KEY:-}" ]; then
  say "DEEPSEEK_API_KEY is set: DSH talks to DeepSeek, and StrataGate uses DSH's model for its summaries"
  .venv/bin/python scripts/demo_settings.py remove --home "$DSH_HOME"
else
  say "no DEEPSEEK_API_KEY: the offline demo model answers, and StrataGate runs in zero-model mode"
  fifo=$(mktemp -u)
  mkfifo "$fifo"
  .venv/bin/python scripts/demo_model.py >"$fifo" &
  model_pid=$!
  read -r _ base_url <"$fifo"
  rm -f "$fifo"
  while IFS='=' read -r key value; do
    export "$key=$value"
  done < <(.venv/bin/python scripts/demo_settings.py write --home "$DSH_HOME" --base-url "$base_url")
fi
dsh web --no-open --port "$PORT" "$@" &
web_pid=$!
# Ready when the web API answers (any HTTP status); give up if dsh exits first.
answers() {
  .venv/bin/python - "$PORT" <<'PY'
import sys, urllib.error, urllib.request
try:
    urllib.request.urlopen(f"http://127.0.0.1:{sys.argv[1]}/", timeout=2).close()
except urllib.error.HTTPError:
    pass  # any HTTP answer means the server is up
except OSError:
    sys.exit(1)
PY
}
last_said=$SECONDS
until answers; do
  if ! kill -0 "$web_pid" 2>/dev/null; then
    wait "$web_pid" || code=$?
    say "dsh web exited (code ${code:-0}) before it served; see its output above"
    exit "${code:-1}"
  fi
  if [ $((SECONDS - last_said)) -ge 5 ]; then
    say "  waiting for dsh web to answer on port $PORT ($((SECONDS - step_t0)) s)"
    last_said=$SECONDS
  fi
  sleep 0.5 # polling the port until dsh web answers
done
step_done "everything in $((SECONDS - started)) s"
cat >&2 <<EOF

  StrataGate-Py is running in DSH web:  http://127.0.0.1:$PORT

  First, in the browser:
    1. Dismiss the notice DSH shows on its first start.
    2. Choose a workspace (a project folder): StrataGate's memory namespace follows it, so each
       project keeps its own memory.
  Then chat; /memory status, and Settings → Memory, show what memory holds.
  Ctrl-C stops DSH web.

EOF
wait "$web_pid"
