#!/usr/bin/env bash
# The feedback engine's unit tests run the fixture suites on the host through a directory-backed
# sandbox double: they need git, node (the project's own), and python3 with pytest. The
# integration tests need the sandbox base image (node 18, python3 + pytest inside). Idempotent.
set -euo pipefail
here=$(cd "$(dirname "$0")/../.." && pwd)

if ! command -v git >/dev/null 2>&1 || ! command -v python3 >/dev/null 2>&1 || ! python3 -c 'import pytest' >/dev/null 2>&1; then
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends git python3 python3-pytest
fi
python3 -m pytest --version

if command -v docker >/dev/null 2>&1 && docker info >/dev/null 2>&1; then
  "$here/sandbox-images/base/build.sh" >/dev/null
fi

# Installs pinned npm packages into a cache directory unless each one is there at its pin (read
# from node_modules/<name>/package.json), so changing a pin refreshes a cache an earlier pin made.
# Quiet when every pin is installed; saved exact, so the cache's package.json names the pins.
install_pins() {
  local dir=$1 name=$2 spec pkg want have stale=()
  shift 2
  for spec in "$@"; do
    pkg=${spec%@*} want=${spec##*@}
    have=$(node -p 'require(process.argv[1]).version' "$dir/node_modules/$pkg/package.json" 2>/dev/null || true)
    [ "$have" = "$want" ] || stale+=("$pkg ${have:-missing}, pinned $want")
  done
  [ ${#stale[@]} -eq 0 ] && return 0
  printf '[needs/feedback] %s: %s: installing %s\n' "$dir" "$(printf '%s; ' "${stale[@]}" | sed 's/; $//')" "$*" >&2
  mkdir -p "$dir"
  # npm trusts its hidden lockfile over the tree; without it, it reads what is really installed.
  rm -f "$dir/node_modules/.package-lock.json"
  [ -f "$dir/package.json" ] || echo "{\"name\":\"$name\",\"private\":true}" > "$dir/package.json"
  npm install --prefix "$dir" --no-audit --no-fund --silent --save-exact "$@"
  for spec in "$@"; do
    pkg=${spec%@*} want=${spec##*@}
    have=$(node -p 'require(process.argv[1]).version' "$dir/node_modules/$pkg/package.json")
    [ "$have" = "$want" ] || { echo "[needs/feedback] $dir: $pkg is $have after the install, not $want" >&2; exit 1; }
  done
}

# Real runners for the repository-test-command integration tests (a tape repository whose
# `npm test` pipes into tap-spec; a uvu repository), from the npm registry into a cache the tests
# copy node_modules from.
runners="${DOCKHAND_FEEDBACK_RUNNERS:-${HOME:-/root}/.cache/dockhand/feedback-runners}"
install_pins "$runners" dockhand-feedback-runners tape@5.10.2 tap-spec@5.0.0 uvu@0.5.6
echo "feedback runners (tape, tap-spec, uvu) in $runners"

# node-tap 16 for node-tap.int.test.ts (npm/ini's runner), in a cache of its own: its 300-odd
# packages stay out of the other runners' node_modules.
tap16="${DOCKHAND_FEEDBACK_TAP:-${HOME:-/root}/.cache/dockhand/feedback-tap16}"
install_pins "$tap16" dockhand-feedback-tap16 tap@16.3.10
echo "node-tap 16 in $tap16"

# jest and ava for side-channel.test.ts (jest inside an `&&` chain, ava started by a wrapper, both
# read through the preload), in a cache of their own: their ~400 packages stay out of the others'.
jest="${DOCKHAND_FEEDBACK_JEST:-${HOME:-/root}/.cache/dockhand/feedback-jest}"
install_pins "$jest" dockhand-feedback-jest jest@30.5.2 ava@6.4.1
echo "jest and ava in $jest"

# tsd and tsc for feedback/judgement.test.ts (a `jest && tsd && tsc` chain red at the base in tsd), in
# a cache of their own beside jest's: the test links both into its repository's node_modules.
tsd="${DOCKHAND_FEEDBACK_TSD:-${HOME:-/root}/.cache/dockhand/feedback-tsd}"
install_pins "$tsd" dockhand-feedback-tsd tsd@0.33.0 typescript@5.9.3
echo "tsd and typescript in $tsd"

# Yarn berry with Plug'n'Play for side-channel.test.ts: berry from the npm registry
# (@yarnpkg/cli-dist, as the sandbox's toolchains get it) and a PnP project with mocha installed
# by it (.pnp.cjs and .yarn/cache, no node_modules), which the test copies into its repository.
pnp="${DOCKHAND_FEEDBACK_PNP:-${HOME:-/root}/.cache/dockhand/feedback-pnp}"
install_pins "$pnp/berry" dockhand-feedback-berry @yarnpkg/cli-dist@4.18.1
pnp_manifest='{"name":"pnp-fixture","private":true,"packageManager":"yarn@4.18.1","scripts":{"test":"node lint.js && mocha test/"},"devDependencies":{"mocha":"11.7.1"}}'
if [ ! -f "$pnp/project/.pnp.cjs" ] || [ "$(cat "$pnp/project/package.json" 2>/dev/null)" != "$pnp_manifest" ]; then
  rm -rf "$pnp/project" && mkdir -p "$pnp/project"
  printf '%s\n' "$pnp_manifest" > "$pnp/project/package.json"
  printf 'nodeLinker: pnp\nenableGlobalCache: false\nenableTelemetry: false\n' > "$pnp/project/.yarnrc.yml"
  # Under CI=true berry makes installs immutable (YN0028: no lockfile may be created); this one makes it.
  (cd "$pnp/project" && YARN_ENABLE_IMMUTABLE_INSTALLS=false node "$pnp/berry/node_modules/@yarnpkg/cli-dist/bin/yarn.js" install >/dev/null) ||
    { echo "[needs/feedback] yarn berry could not install the PnP project in $pnp/project" >&2; exit 1; }
fi
echo "yarn berry and a PnP project (mocha) in $pnp"
