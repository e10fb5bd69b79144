#!/usr/bin/env bash
# Prepares a Debian/Ubuntu host to run Dockhand sandboxes: Docker engine + gVisor (runsc).
# Idempotent: safe to run again; it only installs, registers and starts what is missing.
# It will not: touch a host that is not Debian-like, change an existing daemon.json beyond
# adding the runsc runtime and the experimental flag, or stop a running engine it did not start
# unless the runsc registration changed.
set -euo pipefail

log() { printf '[setup-host] %s\n' "$*" >&2; }
die() { printf '[setup-host] error: %s\n' "$*" >&2; exit 1; }

[ "$(uname -s)" = "Linux" ] || die "Dockhand sandboxes need Linux with gVisor (runsc); this is $(uname -s). Run the server on a Debian or Ubuntu host."
[ -r /etc/os-release ] && . /etc/os-release
case " ${ID:-} ${ID_LIKE:-} " in
  *" debian "*|*" ubuntu "*) ;;
  *) die "this script knows Debian and Ubuntu (apt); found '${PRETTY_NAME:-unknown}'. Install docker and runsc yourself and register runsc in /etc/docker/daemon.json (see README)." ;;
esac
[ "$(id -u)" = 0 ] || die "run as root (it installs packages and writes /etc/docker/daemon.json)"

EXTRA_PACKAGES=${DOCKHAND_EXTRA_PACKAGES:-}
need=()
command -v dockerd >/dev/null || need+=(docker.io)
command -v runsc >/dev/null || need+=(runsc)
command -v debootstrap >/dev/null || need+=(debootstrap)
command -v git >/dev/null || need+=(git)
# git signs the server's commits through ssh-keygen (gpg.format=ssh); --no-install-recommends leaves it out of git.
command -v ssh-keygen >/dev/null || need+=(openssh-client)
# The pip-through-the-front tests' authenticating Python index (.ci/needs/pyindex.sh): nginx's
# auth_basic, and Debian's python3 with setuptools and wheel to build its package offline.
command -v nginx >/dev/null || [ -x /usr/sbin/nginx ] || need+=(nginx-light)
for p in python3-setuptools python3-wheel; do dpkg -s "$p" >/dev/null 2>&1 || need+=("$p"); done
for p in $EXTRA_PACKAGES; do dpkg -s "$p" >/dev/null 2>&1 || need+=("$p"); done
if [ ${#need[@]} -gt 0 ]; then
  log "installing: ${need[*]}"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
fi

RUNSC=$(command -v runsc)
mkdir -p /etc/docker
changed=$(node - "$RUNSC" <<'JS'
const fs = require('node:fs');
const file = '/etc/docker/daemon.json';
const runsc = process.argv[2];
let cfg = {};
try { cfg = JSON.parse(fs.readFileSync(file, 'utf8')); } catch { cfg = {}; }
const before = JSON.stringify(cfg);
cfg.experimental = true;
cfg.runtimes = cfg.runtimes || {};
// runsc here cannot run with network in the root namespace: --network=none is the default.
cfg.runtimes.runsc = { path: runsc, runtimeArgs: ['--network=none'] };
// An allowlisted-egress variant: host networking inside an --internal Docker network.
cfg.runtimes['runsc-egress'] = { path: runsc, runtimeArgs: ['--network=host'] };
const after = JSON.stringify(cfg);
if (before !== after) fs.writeFileSync(file, JSON.stringify(cfg, null, 2) + '\n');
process.stdout.write(before !== after ? 'yes' : 'no');
JS
)

engine_up() { docker info >/dev/null 2>&1; }

if engine_up && [ "$changed" = yes ]; then
  log "runsc registration changed; reloading the engine"
  if command -v systemctl >/dev/null && systemctl is-active --quiet docker 2>/dev/null; then
    systemctl restart docker
  else
    kill -HUP "$(cat /var/run/docker.pid)" 2>/dev/null || true
    sleep 1
  fi
fi

if ! engine_up; then
  if command -v systemctl >/dev/null && systemctl is-system-running >/dev/null 2>&1; then
    systemctl start docker || true
  fi
fi
if ! engine_up; then
  # No init system (containers, CI): start dockerd ourselves. A stale pid file from a killed
  # engine stops dockerd from starting, so remove it when no engine process is alive.
  if [ -f /var/run/docker.pid ] && ! kill -0 "$(cat /var/run/docker.pid)" 2>/dev/null; then
    rm -f /var/run/docker.pid
  fi
  pgrep -x containerd >/dev/null || true
  log "starting dockerd in the background (log: /var/log/dockerd.log)"
  nohup dockerd >/var/log/dockerd.log 2>&1 &
  for _ in $(seq 1 60); do engine_up && break; sleep 0.5; done
fi
engine_up || die "the Docker engine did not start; see /var/log/dockerd.log"

docker info --format '{{json .Runtimes}}' | grep '"runsc"' >/dev/null || die "the engine answers but runsc is not registered; check /etc/docker/daemon.json"
log "ready: Docker $(docker version --format '{{.Server.Version}}'), runtime runsc registered ($RUNSC)"
