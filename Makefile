# The README's two commands: `make start` runs the whole system, `make test` runs every test.
.PHONY: start test bench setup typecheck check fix graph image cli screenshots record-histories

setup:
	@bash scripts/setup.sh

start: setup
	@node --import tsx client/launcher/launcher.ts

test: setup
	@bash scripts/build-image.sh && bash scripts/check-code.sh && bash scripts/check-test-exit-code.sh && npx vitest run

# `tws` on the PATH from this checkout: a link to bin/tws.mjs in BINDIR (or PREFIX/bin; by default
# ~/.local/bin or /usr/local/bin, whichever is on the PATH and writable), said where (scripts/link-cli.sh).
cli: setup
	@BINDIR="$(BINDIR)" PREFIX="$(PREFIX)" bash scripts/link-cli.sh

# The container executor's default agent image (TWS_CONTAINER_IMAGE), from Debian's packages: once per machine.
image:
	@bash scripts/build-image.sh


# The console's pictures for the README and docs/console.md (docs/images/*.png, 1280x800), taken by
# the browser test that builds the world they show.
screenshots: setup
	@CONSOLE_SCREENSHOTS=1 npx vitest run test/console-screenshots.test.ts

# The replay fixtures (test/histories/) recorded again from real scenarios, after a workflow change meant to change them.
record-histories: setup
	@TWS_RECORD_HISTORIES=1 npx vitest run

# The benchmark (not a test): bench/results/latest.{json,md,svg}; see bench/README.md.
bench: setup
	@node --import tsx bench/run.ts

typecheck: setup
	@npx tsc -p . && npx tsc -p console

# The checks `make test` runs before the suite, alone: type check, code habits, the canary.
check: setup
	@bash scripts/check-code.sh && bash scripts/check-test-exit-code.sh

# Formats every file and applies the linter's safe fixes.
fix: setup
	@npx prettier --write --log-level warn . && npx eslint --fix .

# The import graph as the layer rules see it: .build/dependency-graph.html.
graph: setup
	@mkdir -p .build && npx depcruise activities bench executors bin client console db domain git ssh worker workflows --config .dependency-cruiser.cjs --output-type html > .build/dependency-graph.html && echo ".build/dependency-graph.html"
