#!/bin/sh
# Runs inside the base image build (both the registry-free recipe and the production Dockerfile).
# Installs the agent's tools and creates the non-root user sandboxes run as.
set -eu
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
# libatomic1: the registry's Node toolchains from 26 on link libatomic.so.1, which minbase lacks
# (without it `node` exits 127 before a repository's install starts).
apt-get install -y -qq --no-install-recommends \
  ca-certificates git ripgrep universal-ctags \
  nodejs npm libatomic1 \
  python3 python3-pytest python3-pip python3-venv \
  procps coreutils findutils diffutils patch less >/dev/null
apt-get clean
rm -rf /var/lib/apt/lists/* /var/cache/apt/*.bin /usr/share/doc/* /usr/share/man/*
# The sandbox user: uid/gid 1000, no sudo, home on the writable workspace side.
groupadd --gid 1000 dockhand
useradd --uid 1000 --gid 1000 --home-dir /home/dockhand --create-home --shell /bin/bash dockhand
mkdir -p /workspace && chown dockhand:dockhand /workspace
git config --system --add safe.directory /workspace
git config --system user.name "Dockhand Sandbox"
git config --system user.email "sandbox@dockhand.invalid"
git config --system init.defaultBranch main
