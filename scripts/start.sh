#!/usr/bin/env bash
# The main job: a local, pinned DeepSeek Harness with StrataGate-Py installed, serving `dsh web`.
# Uses DeepSeek when DEEPSEEK_API_KEY is set, else an offline demo model on 127.0.0.1.
#   STRATAGATE_DEMO_HOME  DSH home for the demo (default .dsh-local/home; your ~/.dsh is not touched)
#   STRATAGATE_DEMO_PORT  port of the web UI (default 3099)
set -euo pipefail
REPO=$(cd "$(dirname "$0")/.." && pwd)
cd "$REPO"
bash scripts/bootstrap.sh >&2
bin=$(bash scripts/install-dsh.sh | sed -n 's/^bin=//p')
export PATH="$bin:$PATH"
export DSH_HOME=${STRATAGATE_DEMO_HOME:-$REPO/.dsh-local/home}
export DSH_TELEMETRY_DISABLED=1
PORT=${STRATAGATE_DEMO_PORT:-3099}
mkdir -p "$DSH_HOME" "$REPO/.dsh-local/pack"

echo "start: packing the plugin and installing it into the web profile of $DSH_HOME" >&2
rm -f "$REPO"/.dsh-local/pack/*.tgz
npm pack --silent --pack-destination "$REPO/.dsh-local/pack" >/dev/null
tgz=$(ls "$REPO"/.dsh-local/pack/*.tgz)
if [ -f "$DSH_HOME/profiles/web/package.json" ] && grep -q '"stratagate-py"' "$DSH_HOME/profiles/web/package.json"; then
  dsh plugin --profile web remove stratagate-py >/dev/null
fi
dsh plugin --profile web add "$tgz" >/dev/null
# The sidecar runs from this checkout's .venv (no separate venv needed for the demo).
export STRATAGATE_PYTHON="$REPO/.venv/bin/python"

settings="$DSH_HOME/settings.yaml"
model_pid=""
if [ -n "${DEEPSEEK_API_KEY:-}" ]; then
  echo "start: DEEPSEEK_API_KEY is set: DSH uses DeepSeek" >&2
  if [ -f "$settings" ] && grep -q 'stratagate-demo' "$settings"; then rm -f "$settings"; fi
else
  echo "start: no DEEPSEEK_API_KEY: using the offline demo model" >&2
  fifo=$(mktemp -u)
  mkfifo "$fifo"
  "$REPO/.venv/bin/python" "$REPO/scripts/demo_model.py" >"$fifo" &
  model_pid=$!
  read -r _ base_url <"$fifo"
  rm -f "$fifo"
  cat >"$settings" <<YAML
# Written by scripts/start.sh (stratagate-demo): DSH's model is the offline demo model.
llm-pi-ai:
  providers:
    stratagate-demo:
      displayName: StrataGate offline demo model
      apiKeyEnv: STRATAGATE_DEMO_KEY
      api: openai-completions
      baseURL: $base_url
      compat:
        supportsDeveloperRole: false
        maxTokensField: max_tokens
      models:
        - id: stratagate-demo
          contextWindow: 65536
          maxTokens: 4096
agent-default-model:
  provider: stratagate-demo
  model: stratagate-demo
YAML
  export STRATAGATE_DEMO_KEY=offline-demo
fi
cleanup() { [ -n "$model_pid" ] && kill "$model_pid" 2>/dev/null || true; }
trap cleanup EXIT
echo "start: DSH web on http://127.0.0.1:$PORT (Ctrl-C stops it)" >&2
dsh web --no-open --port "$PORT" "$@"
