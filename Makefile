# The two commands of the README: `make start` runs the whole system, `make test` runs every test.
.PHONY: start test bench setup typecheck

setup:
	@bash scripts/setup.sh

start: setup
	@node --import tsx client/launcher.ts

test: setup
	@npx tsc -p . && bash scripts/check-test-exit-code.sh && npx vitest run


# The benchmark (not a test): bench/results/latest.{json,md,svg}; see bench/README.md.
bench: setup
	@node --import tsx bench/run.ts

typecheck: setup
	@npx tsc -p .
