# Two commands do everything on a fresh machine: `make demo` and `make test`.
# Everything they need (virtual environment, Python packages, Debian brokers) is installed here.
PYTHON ?= python3
VENV   ?= .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed
# The package's own modules: the install compiles the core from them (setup.py, docs/compiled.md),
# so a change to any of them installs it again, and the tests always run the source as it is.
SOURCE := $(wildcard src/topicmatch/*.py)
# The library's tests, run a second time on the pure build: everything but the Spark pipeline,
# the latency harness and the benchmarks' smoke runs.
PURE_TESTS := -m "not spark and not latency and not slow"

.PHONY: help venv brokers demo test test-fast test-pure test-brokers check format clean

help:  ## list the targets
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | sed 's/:.*## /\t/'

$(STAMP): pyproject.toml setup.py $(SOURCE)
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e '.[dev]'
	touch $(STAMP)

venv: $(STAMP)  ## create the virtual environment with the package (its core compiled) and its dev tools

brokers:  ## install RabbitMQ, Mosquitto, nats-server, Redis and ActiveMQ from Debian (needs root)
	bash scripts/install-brokers.sh

demo: venv  ## the main job, local mode: generate 1,000,000 messages and 10,000 subscriptions, route them on Spark
	$(VENV)/bin/topicmatch generate --messages 1000000 --subscriptions 10000 --invalid-fraction 0.0001 --out out/demo/data
	PYSPARK_PYTHON=$(abspath $(PY)) SPARK_LOCAL_IP=127.0.0.1 $(VENV)/bin/topicmatch route --overwrite \
		--messages out/demo/data/messages --subscriptions out/demo/data/subscriptions.parquet --out out/demo/routed

check: venv  ## lint (ruff), format check and strict typing (mypy)
	$(VENV)/bin/ruff check src tests benchmarks setup.py conftest.py
	$(VENV)/bin/ruff format --check src tests benchmarks setup.py conftest.py
	$(VENV)/bin/mypy

test: venv brokers check  ## the whole suite on the compiled core, then the library's tests on the pure one
	@$(PY) -c 'import sys, topicmatch; sys.exit(topicmatch.BUILD != "compiled" and 		"the compiled core does not run here (not compiled, or TOPICMATCH_PURE set): make test needs gcc and the Python headers (docs/compiled.md)")'
	$(PY) -m pytest
	TOPICMATCH_PURE=1 $(PY) -m pytest $(PURE_TESTS)

test-fast: venv  ## the library alone, in about 2 minutes: no brokers, Spark, latency runs or slow smoke tests
	$(PY) -m pytest -m "not brokers and not spark and not cluster and not latency and not slow"

test-pure: venv brokers  ## the library's tests (broker conformance included) on the pure-Python core
	TOPICMATCH_PURE=1 $(PY) -m pytest $(PURE_TESTS)

test-brokers: venv brokers  ## only the conformance tests against the real brokers
	$(PY) -m pytest -m brokers tests/brokers

format: venv  ## reformat the code
	$(VENV)/bin/ruff format src tests benchmarks setup.py conftest.py
	$(VENV)/bin/ruff check --fix src tests benchmarks setup.py conftest.py

clean:  ## remove the virtual environment and caches
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache .hypothesis build src/*.egg-info
	rm -f src/*.so src/topicmatch/*.so src/topicmatch/_compiled.json  # the core compiled in place
