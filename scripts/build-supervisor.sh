#!/usr/bin/env bash
# Compiles the agent supervisor (native/agent-supervisor.c) into .tools/agent-supervisor:
# only when the binary is missing or older than its source. Without it no agent starts on this
# host (executors/host/agent-shim.ts), so a missing C compiler fails with one line.
# Run by scripts/setup.sh and by the Dockerfile; CC picks the compiler (default cc).
set -euo pipefail
cd "$(dirname "$0")/.."
src=native/agent-supervisor.c
out=.tools/agent-supervisor
if [ -x "$out" ] && [ ! "$src" -nt "$out" ]; then exit 0; fi
cc=${CC:-cc}
if ! command -v "$cc" >/dev/null 2>&1; then
  echo "setup: no C compiler ($cc) to build the agent supervisor from $src: install one (Debian: apt-get install gcc libc6-dev), or set CC, then run this again" >&2
  exit 1
fi
echo "setup: compiling the agent supervisor ($src → $out)"
mkdir -p .tools
# Built aside and renamed into place: an agent starting meanwhile runs the old binary or the new, never half of one.
if ! "$cc" -O2 -Wall -Wextra -Werror -o "$out.tmp.$$" "$src"; then
  rm -f "$out.tmp.$$"
  echo "setup: $cc could not compile the agent supervisor $src (its messages are above)" >&2
  exit 1
fi
mv -f "$out.tmp.$$" "$out"
