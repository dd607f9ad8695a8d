#!/usr/bin/env bash
# `make test` after setup: the type check, the code's habits (scripts/check-code.sh) and the
# canary (scripts/check-test-exit-code.sh) run beside the test suite rather than before it. They
# take about 40 s of one core; the suite leaves a core partly idle while its files wait on real
# timeouts, so beside it they cost the run far less than in front of it. Their output is kept and
# printed after the suite's, followed by the suite's closing line again ("N passed, N failed",
# which CI reads at the end). The run fails if either failed.
set -uo pipefail
cd "$(dirname "$0")/.."
# Outside .build/: the build the suite's set-up runs removes files there it did not make.
checks_log=$(mktemp)
summary=$(mktemp)
trap 'rm -f "$checks_log" "$summary"' EXIT
export TEST_SUMMARY_FILE="$summary"
(npx tsc -p . && bash scripts/check-code.sh && bash scripts/check-test-exit-code.sh) > "$checks_log" 2>&1 &
checks=$!
npx vitest run
tests=$?
wait "$checks"
checked=$?
echo
echo "Checks (type check, code habits, canary), beside the suite:"
sed 's/^/  /' "$checks_log"
[ "$checked" -eq 0 ] || echo "The checks FAILED (above): the run fails even if every test passed."
# The suite's closing line last, where CI reads it.
cat "$summary"
[ "$tests" -eq 0 ] && [ "$checked" -eq 0 ]
