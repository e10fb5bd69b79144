#!/usr/bin/env bash
# Installs what the VS Code extension's browser and code-server tests need: Chromium, the native
# build dependencies of code-server's modules, and code-server itself in a cached tool folder
# outside the project's node_modules (so the project's own install stays fast). Idempotent.
set -euo pipefail

CODE_SERVER_VERSION=4.100.3   # newest release whose engines allow Node 20 (see VSCODE-E2E.md)
TOOLS_DIR="${DOCKHAND_TOOLS_DIR:-/var/cache/dockhand-tools}"
TARGET="$TOOLS_DIR/code-server-$CODE_SERVER_VERSION"

need_packages=()
for pkg in chromium ripgrep libkrb5-dev libx11-dev libxkbfile-dev libsecret-1-dev pkg-config build-essential python3; do
  dpkg -s "$pkg" >/dev/null 2>&1 || need_packages+=("$pkg")
done
if ((${#need_packages[@]})); then
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq "${need_packages[@]}"
fi

MARKER="$TARGET/.installed"
if [[ -f "$MARKER" && -x "$TARGET/node_modules/.bin/code-server" ]]; then
  echo "code-server $CODE_SERVER_VERSION already in $TARGET"
  exit 0
fi

rm -rf "$TARGET"
mkdir -p "$TARGET"
scratch="$(mktemp -d)"
trap 'rm -rf "$scratch"' EXIT

# @vscode/ripgrep's postinstall would download rg from GitHub; it accepts a cached archive first.
rg_cache="$scratch/vscode-ripgrep-cache-1.15.11"
mkdir -p "$rg_cache/bin"
cp /usr/bin/rg "$rg_cache/bin/rg"
tar -C "$rg_cache/bin" -czf "$rg_cache/ripgrep-v13.0.0-10-x86_64-unknown-linux-musl.tar.gz" rg

cd "$TARGET"
# npm 11 runs no install scripts unless allowed: code-server's postinstall builds its own modules;
# argon2 (loaded at start even with --auth none) fails to download its prebuilt binary and builds
# from source against the host's Node headers.
cat > package.json <<'JSON'
{"name":"dockhand-code-server-tool","private":true,"allowScripts":{"code-server":true,"argon2":true}}
JSON
# unsafe_perm: its postinstall refuses to run as root otherwise; yes: node-pty runs `npx node-gyp`.
TMPDIR="$scratch" npm_config_unsafe_perm=true npm_config_yes=true \
  npm install --no-audit --no-fund --foreground-scripts=false "code-server@$CODE_SERVER_VERSION"
test -x "$TARGET/node_modules/.bin/code-server"
test -d "$TARGET/node_modules/code-server/lib/vscode/node_modules/node-pty/build"
test -f "$TARGET/node_modules/argon2/lib/binding/napi-v3/argon2.node"
touch "$MARKER"
echo "code-server $CODE_SERVER_VERSION installed in $TARGET"
