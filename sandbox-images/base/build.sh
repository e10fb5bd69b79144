#!/usr/bin/env bash
# Builds the Dockhand sandbox base image without any container registry:
#   debootstrap (minbase bookworm) -> docker import -> docker build (install.sh inside).
# The image is tagged dockhand/base:<recipe hash> and dockhand/base:latest; a rebuild is skipped
# when an image with the current recipe hash exists, so repeated runs cost nothing.
# Set DOCKHAND_BASE_PRODUCTION=1 to build the registry Dockerfile instead.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
log() { printf '[base-image] %s\n' "$*" >&2; }

MIRROR=${DOCKHAND_DEBIAN_MIRROR:-http://deb.debian.org/debian}
SUITE=${DOCKHAND_DEBIAN_SUITE:-bookworm}
hash=$(cat "$here/install.sh" "$here/Dockerfile.local" "$here/build.sh" | sha256sum | cut -c1-16)
image=dockhand/base:$hash

if docker image inspect "$image" >/dev/null 2>&1; then
  docker tag "$image" dockhand/base:latest
  log "up to date: $image"
  echo "$image"; exit 0
fi

if [ "${DOCKHAND_BASE_PRODUCTION:-0}" = 1 ]; then
  docker build -t "$image" -f "$here/Dockerfile" "$here" >&2
else
  rootfs_image=dockhand/rootfs:$SUITE
  if ! docker image inspect "$rootfs_image" >/dev/null 2>&1; then
    command -v debootstrap >/dev/null || { log "debootstrap is missing: run scripts/setup-host.sh"; exit 1; }
    tmp=$(mktemp -d /var/tmp/dockhand-rootfs.XXXXXX)
    trap 'rm -rf "$tmp"' EXIT
    log "debootstrap $SUITE from $MIRROR (about a minute)"
    debootstrap --variant=minbase "$SUITE" "$tmp/root" "$MIRROR" >"$tmp/debootstrap.log" 2>&1 \
      || { tail -20 "$tmp/debootstrap.log" >&2; exit 1; }
    tar -C "$tmp/root" -c . | docker import - "$rootfs_image" >/dev/null
    rm -rf "$tmp"; trap - EXIT
  fi
  log "installing tools into the image"
  DOCKER_BUILDKIT=0 docker build -q --build-arg ROOTFS_IMAGE="$rootfs_image" -t "$image" \
    -f "$here/Dockerfile.local" "$here" >&2
fi
docker tag "$image" dockhand/base:latest
log "built $image"
echo "$image"
