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
