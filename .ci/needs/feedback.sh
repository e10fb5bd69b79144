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
