#!/usr/bin/env bash
# A failing test must fail the run. A dependency once turned vitest's exit code into 0 from a
# process hook; this runs one failing test under the real global set-up and insists on non-zero.
set -uo pipefail
cd "$(dirname "$0")/.."
if npx vitest run --config test/canary/vitest.canary.mts >/dev/null 2>&1; then
  echo "check-test-exit-code: a failing test exited 0: test results cannot be trusted" >&2
  exit 1
fi
echo "check-test-exit-code: a failing test fails the run, as it must"
