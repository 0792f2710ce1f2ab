# Run `make help` for the list of commands.
PY := .venv/bin/python
SPEC ?= conf/sample.yaml

.PHONY: help setup demo demo-kafka validate graph test unit integration e2e reliability lint typecheck check bench clean

help:  ## list the commands
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  make %-12s %s\n", $$1, $$2}'

setup:  ## create .venv, install pinned dependencies, fetch the Delta jars (idempotent)
	@bash scripts/setup.sh

demo: setup  ## run the sample medallion pipeline end to end on generated data
	@$(PY) -m framework.cli demo

demo-kafka: setup  ## run the Kafka example pipeline twice against a local broker (started and stopped)
	@bash scripts/kafka_demo.sh

validate: setup  ## dry-run the sample spec (load, build the graph, check)
	@$(PY) -m framework.cli validate $(SPEC)

graph: setup  ## draw the sample pipeline's dataset graph (Mermaid + HTML)
	@$(PY) -m framework.cli graph $(SPEC)

test: setup  ## run every test (unit, integration, e2e)
	@$(PY) -m pytest tests -q

unit: setup  ## unit tests only (no Spark)
	@$(PY) -m pytest tests/unit -q

integration: setup  ## integration tests (Spark + Delta)
	@$(PY) -m pytest tests/integration -q

e2e: setup  ## end-to-end tests over the CLI
	@$(PY) -m pytest tests/e2e -q

reliability: setup  ## kill -9, concurrency and bad-input tests
	@$(PY) -m pytest tests/reliability -q

lint: setup  ## ruff lint
	@$(PY) -m ruff check framework tests bench pipelines

typecheck: setup  ## mypy on framework/
	@$(PY) -m mypy

check: lint typecheck test  ## everything CI checks

bench: setup  ## run the benchmarks (see bench/README.md)
	@$(PY) -m bench.run_all

clean:  ## remove runs, caches and build output (keeps .venv and the jar cache)
	rm -rf runs .pytest_cache .mypy_cache .ruff_cache build dist *.egg-info
