#!/usr/bin/env bash
# The corpus check (test/corpus/) builds real repositories on the host and runs their own test
# commands there to verify each planted bug: Debian's python3 with pytest (the sandbox's Python),
# apt-helper and dpkg-deb (part of apt/dpkg) for Debian sources. Node toolchains, pnpm and yarn
# come from the npm registry at build time, cached under .dockhand-corpus/.toolchains. Idempotent.
set -euo pipefail
if ! /usr/bin/python3 -c 'import pytest' >/dev/null 2>&1; then
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends python3-pytest
fi
command -v dpkg-deb >/dev/null
test -x /usr/lib/apt/apt-helper
