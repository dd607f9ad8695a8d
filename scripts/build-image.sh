#!/usr/bin/env bash
# The container executor's default agent image, built here from Debian's packages (no registry is
# needed): mmdebstrap makes a Debian bookworm root file system with git, and podman imports it as
# TWS_CONTAINER_IMAGE (default tws-agent:bookworm). Nothing is pulled at launch: a launch whose
# image is missing is refused. Idempotent: an image already there is kept (`--force` builds anew).
# Needs root, podman, runc and mmdebstrap (installed here from Debian's packages when missing).
set -euo pipefail
image="${TWS_CONTAINER_IMAGE:-tws-agent:bookworm}"
packages="git,ca-certificates,procps"
if [ "${1:-}" != "--force" ] && command -v podman >/dev/null 2>&1 && podman image exists "$image" 2>/dev/null; then
  exit 0
fi
if { ! command -v podman || ! command -v runc || ! command -v mmdebstrap; } >/dev/null 2>&1; then
  if [ "$(id -u)" != 0 ] || ! command -v apt-get >/dev/null 2>&1; then
    echo "image: podman, runc and mmdebstrap are needed (Debian's packages); install them, then run this again" >&2
    exit 1
  fi
  echo "image: installing podman, runc and mmdebstrap (Debian's packages)"
  { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq podman runc mmdebstrap; } >/dev/null
fi
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
echo "image: building $image from Debian bookworm packages ($packages), about 80 s"
if ! mmdebstrap --quiet --variant=apt --include="$packages" bookworm "$work/rootfs.tar" >"$work/log" 2>&1; then
  tail -20 "$work/log" >&2
  echo "image: mmdebstrap failed (above)" >&2
  exit 1
fi
podman import --quiet --change 'CMD ["/bin/sleep", "infinity"]' --change 'LABEL io.task-workspaces.image=agent' \
  "$work/rootfs.tar" "$image" >/dev/null
echo "image: $image is ready"
