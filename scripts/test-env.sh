#!/usr/bin/env bash
# Prepares what the test suite needs on this machine, idempotently: the Docker engine with runsc,
# the sandbox base image (cached by recipe hash), and each area's extra needs in .ci/needs/*.sh.
# `npm test` runs it first (pretest), so the README's test command works on a fresh machine.
set -euo pipefail
cd "$(dirname "$0")/.."
if [ "$(id -u)" != 0 ] && ! docker info >/dev/null 2>&1; then
  echo "[test-env] the tests need a running Docker engine with runsc; run 'sudo bash scripts/setup-host.sh' first" >&2
  exit 1
fi
if [ "$(id -u)" = 0 ]; then bash scripts/setup-host.sh; fi
bash sandbox-images/base/build.sh >/dev/null
shopt -s nullglob
for need in .ci/needs/*.sh; do
  echo "[test-env] $need" >&2
  bash "$need"
done
