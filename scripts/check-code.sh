#!/usr/bin/env bash
# The habits the tools keep, before any test runs: the formatter's check, the linter,
# the layer rules and the dead-code check. Each failure names the file and the rule; `make fix`
# formats and applies the safe fixes.
set -uo pipefail
cd "$(dirname "$0")/.."
failed=0
step() {
  local name="$1"; shift
  local started=$SECONDS
  if "$@"; then
    echo "check-code: $name passed ($((SECONDS - started)) s)"
  else
    echo "check-code: $name FAILED (above: the file and the rule); \`make fix\` formats and applies the safe fixes" >&2
    failed=1
  fi
}
step "format (prettier --check)" npx prettier --check --log-level warn .
step "lint (eslint)" npx eslint --max-warnings 0 .
step "layers (dependency-cruiser)" npx depcruise activities executors bench bin client db domain git ssh worker workflows --config .dependency-cruiser.cjs --output-type err
step "dead code (knip)" npx knip --no-progress
exit $failed
