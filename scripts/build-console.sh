#!/usr/bin/env bash
# The web console (console/, docs/console.md): built by Vite into console/dist/ when missing or
# when its sources or the lock file changed since the last build (a stamp of their hash, kept in
# console/dist/.sources.sha256). The check hashes a few dozen small files: well under a second.
set -euo pipefail
cd "$(dirname "$0")/.."
stamp=console/dist/.sources.sha256
hash=$( { find console -path console/dist -prune -o -type f -print | LC_ALL=C sort | xargs sha256sum; sha256sum package-lock.json; } | sha256sum | cut -d' ' -f1)
if [ -f console/dist/index.html ] && [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$hash" ]; then exit 0; fi
echo "setup: building the web console (console/ → console/dist/)"
if ! out=$(npx vite build --config console/vite.config.ts --logLevel warn 2>&1); then
  echo "$out" >&2
  echo "setup: the console's build failed (its messages are above): fix what they say, then run this again" >&2
  exit 1
fi
echo "$hash" > "$stamp"
