# Sourced by the setup scripts (bootstrap.sh, install-dsh.sh, start.sh): a long step says it is still working.
#   with_progress LABEL COMMAND...   runs COMMAND; while it runs, prints "LABEL: still working (N s)" to stderr every
#                                    STRATAGATE_PROGRESS_S seconds (default 5), so no step is silent for longer.
# Returns COMMAND's exit status.
with_progress() {
  local label=$1
  shift
  local every=${STRATAGATE_PROGRESS_S:-5} t0 ticker status=0
  t0=$(date +%s)
  (
    trap 'exit 0' TERM
    while sleep "$every"; do echo "  $label: still working ($(($(date +%s) - t0)) s)" >&2; done
  ) &
  ticker=$!
  "$@" || status=$?
  kill "$ticker" 2>/dev/null || true
  wait "$ticker" 2>/dev/null || true
  return "$status"
}
