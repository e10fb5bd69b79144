#!/bin/sh
# Runs inside the base image build (both the registry-free recipe and the production Dockerfile).
# Installs the agent's tools and creates the non-root user sandboxes run as.
set -eu
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
# libatomic1: the registry's Node toolchains from 26 on link libatomic.so.1, which minbase lacks
# (without it `node` exits 127 before a repository's install starts).
# Python build backends and test plugins from Debian's packages: a project is installed without
# build isolation (the package index may be unreachable), so its backend must be here already.
# `flit` carries flit_core; `python3-pdm-pep517` is pdm's older backend (bookworm has no
# pdm-backend). A project that needs a newer one gets it from DOCKHAND_PIP_INDEX_URL.
apt-get install -y -qq --no-install-recommends \
  ca-certificates git ripgrep universal-ctags \
  nodejs npm libatomic1 \
  python3 python3-pytest python3-pip python3-venv \
  python3-hatchling python3-hatch-vcs flit python3-pdm-pep517 python3-poetry-core python3-setuptools-scm python3-wheel \
  python3-pytest-cov python3-pytest-xdist python3-pytest-mock python3-hypothesis tox \
  procps coreutils findutils diffutils patch less make >/dev/null
apt-get clean
# hatchling's default editable build (no dev-mode-exact) imports `editables` only to write a .pth
# file naming the source directory; bookworm does not package it. This stand-in does that part
# (EditableProject.add_to_path) and refuses map() (dev-mode-exact), which needs the real package.
mkdir -p /usr/lib/python3/dist-packages/editables
cat > /usr/lib/python3/dist-packages/editables/__init__.py <<'PY'
"""Dockhand's stand-in for the `editables` package: the .pth form only (see install.sh)."""
from pathlib import Path

__version__ = "0.3"


class EditableException(Exception):
    pass


class EditableProject:
    def __init__(self, project_name, project_dir):
        self.project_name = project_name
        self.project_dir = Path(project_dir)
        self.path_entries = []

    def map(self, name, target):
        raise EditableException(
            "dev-mode-exact needs the real `editables` package, which the sandbox base image lacks: "
            "configure a package index (DOCKHAND_PIP_INDEX_URL) or drop dev-mode-exact"
        )

    def add_to_path(self, dirname):
        self.path_entries.append(Path(dirname))

    def files(self):
        yield f"{self.project_name}.pth", "\n".join(str(entry) for entry in self.path_entries)

    def dependencies(self):
        return []
PY
rm -rf /var/lib/apt/lists/* /var/cache/apt/*.bin /usr/share/doc/* /usr/share/man/*
# The sandbox user: uid/gid 1000, no sudo, home on the writable workspace side.
groupadd --gid 1000 dockhand
useradd --uid 1000 --gid 1000 --home-dir /home/dockhand --create-home --shell /bin/bash dockhand
mkdir -p /workspace && chown dockhand:dockhand /workspace
git config --system --add safe.directory /workspace
git config --system user.name "Dockhand Sandbox"
git config --system user.email "sandbox@dockhand.invalid"
git config --system init.defaultBranch main
