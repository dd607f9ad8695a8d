# The two commands of the README: `make start` runs the whole system, `make test` runs every test.
.PHONY: start test setup typecheck

setup:
	@bash scripts/setup.sh

start: setup
	@node --import tsx client/launcher.ts

test: setup
	@npx tsc -p . && bash scripts/check-test-exit-code.sh && npx vitest run


typecheck: setup
	@npx tsc -p .
