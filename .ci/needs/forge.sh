#!/usr/bin/env bash
# The forge's integration tests use real git: bare repositories, worktrees, `git apply`, and a
# smart-HTTP remote served by `git http-backend` (shipped in Debian's `git` package), and SSH-signed
# commits (ssh-keygen). Idempotent.
set -euo pipefail

if ! command -v git >/dev/null 2>&1 || [ ! -x /usr/lib/git-core/git-http-backend ] || ! command -v ssh-keygen >/dev/null 2>&1; then
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  # openssh-client: git signs the server's commits with `ssh-keygen -Y sign` (gpg.format=ssh).
  apt-get install -y -qq git openssh-client
fi
git --version
