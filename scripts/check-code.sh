#!/usr/bin/env bash
# The habits the tools keep, before any test runs: the type check, the formatter's check, the
# linter, the layer rules and the dead-code check. Each failure names the file and the rule; `make
# fix` formats and applies the safe fixes.
#
# The six run at once: each is one single-threaded process, and the type-aware linter alone
# takes half of their CPU time, so on 2 cores the checks take about as long as the linter rather
# than the sum of all five (about 60 s of CPU, 60 s one after another, 35 s together). Each one's
# output is kept and shown after all have ended, in the order below, under its name.
set -uo pipefail
cd "$(dirname "$0")/.."
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
names=()
hints=()
step() {
  local name="$1" hint="$2"
  shift 2
  local i=${#names[@]}
  names+=("$name")
  hints+=("$hint")
  (
    started=$SECONDS
    "$@" >"$out/$i.log" 2>&1
    echo "$? $((SECONDS - started))" >"$out/$i.status"
  ) &
}
fixes='`make fix` formats and applies the safe fixes'
step "types (tsc)" "the file, line and type error" npx tsc -p .
step "console types (tsc -p console)" "the file, line and type error" npx tsc -p console
step "format (prettier --check)" "$fixes" npx prettier --check --log-level warn .
step "lint (eslint)" "the file and the rule; $fixes" npx eslint --max-warnings 0 .
step "layers (dependency-cruiser)" "the import and the rule it breaks" \
  npx depcruise activities executors bench bin client console db domain git ssh worker workflows --config .dependency-cruiser.cjs --output-type err
step "dead code (knip)" "the unused file, export or dependency" npx knip --no-progress
wait
failed=0
for i in "${!names[@]}"; do
  read -r code seconds <"$out/$i.status" || { code=1; seconds='?'; }
  if [ "$code" = 0 ]; then
    cat "$out/$i.log"
    echo "check-code: ${names[$i]} passed ($seconds s)"
  else
    cat "$out/$i.log" >&2
    echo "check-code: ${names[$i]} FAILED (above: ${hints[$i]})" >&2
    failed=1
  fi
done
exit $failed
