#!/usr/bin/env bash
# The agent's unit tests run its tools on the host through a directory-backed sandbox double, so
# the host needs the same programs the sandbox image has: ripgrep (search, list_files),
# universal-ctags with JSON output (list_symbols) and git (diffs). The e2e tests
# (test/e2e/agent-*.test.ts) need Docker + runsc (scripts/setup-host.sh) and dockhand/base,
# which they build through sandbox-images/base/build.sh (cached by recipe hash). Idempotent.
set -euo pipefail
here=$(cd "$(dirname "$0")/../.." && pwd)

need=()
command -v rg >/dev/null 2>&1 || need+=(ripgrep)
command -v git >/dev/null 2>&1 || need+=(git)
if ! command -v ctags >/dev/null 2>&1 || ! ctags --list-features 2>/dev/null | grep '^json' >/dev/null; then need+=(universal-ctags); fi
if [ ${#need[@]} -gt 0 ]; then
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "${need[@]}"
fi
rg --version | sed -n 1p
ctags --version | sed -n 1p

if command -v docker >/dev/null 2>&1 && docker info >/dev/null 2>&1; then
  "$here/sandbox-images/base/build.sh" >/dev/null
fi
