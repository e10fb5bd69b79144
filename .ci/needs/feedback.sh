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

# Real runners for the repository-test-command integration tests (a tape repository whose
# `npm test` pipes into tap-spec; a uvu repository): installed once from the npm registry into a cache the tests
# copy node_modules from. Pinned, so the cache is reused.
runners="${DOCKHAND_FEEDBACK_RUNNERS:-${HOME:-/root}/.cache/dockhand/feedback-runners}"
if [ ! -x "$runners/node_modules/.bin/tape" ] || [ ! -x "$runners/node_modules/.bin/tap-spec" ] || [ ! -x "$runners/node_modules/.bin/uvu" ]; then
  mkdir -p "$runners"
  [ -f "$runners/package.json" ] || echo '{"name":"dockhand-feedback-runners","private":true}' > "$runners/package.json"
  npm install --prefix "$runners" --no-audit --no-fund --silent tape@5.10.2 tap-spec@5.0.0 uvu@0.5.6
fi
echo "feedback runners (tape, tap-spec, uvu) in $runners"

# node-tap 16 for node-tap.int.test.ts (npm/ini's runner), in a cache of its own: its 300-odd
# packages stay out of the other runners' node_modules.
tap16="${DOCKHAND_FEEDBACK_TAP:-${HOME:-/root}/.cache/dockhand/feedback-tap16}"
if [ ! -x "$tap16/node_modules/.bin/tap" ]; then
  mkdir -p "$tap16"
  [ -f "$tap16/package.json" ] || echo '{"name":"dockhand-feedback-tap16","private":true}' > "$tap16/package.json"
  npm install --prefix "$tap16" --no-audit --no-fund --silent tap@16.3.10
fi
echo "node-tap 16 in $tap16"
