#!/usr/bin/env bash
# The forge's integration tests use real git: bare repositories, worktrees, `git apply`, and a
# smart-HTTP remote served by `git http-backend` (shipped in Debian's `git` package). Idempotent.
set -euo pipefail

if ! command -v git >/dev/null 2>&1 || [ ! -x /usr/lib/git-core/git-http-backend ]; then
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq git
fi
git --version
