# Two commands do everything on a fresh machine: `make demo` and `make test`.
# Everything they need (virtual environment, Python packages, Debian brokers) is installed here.
PYTHON ?= python3
VENV   ?= .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed
# The package's own modules: the install compiles the core from them (setup.py, docs/compiled.md),
# so a change to any of them installs it again, and the tests always run the source as it is.
SOURCE := $(wildcard src/topicmatch/*.py src/topicmatch/_engine/*.py)
# The library's tests, run a second time on the pure build: everything but the Spark pipeline,
# the latency harness and the benchmarks' smoke runs.
PURE_TESTS := -m "not spark and not latency and not slow"
# The library alone, without brokers, Spark, latency runs or slow smoke tests: `make test-fast`,
# and what `make test` runs on each other CPython it finds.
FAST_TESTS := -m "not brokers and not spark and not cluster and not latency and not slow"
# The other CPythons (scripts/test-pythons.sh): every version pyproject.toml's classifiers declare
# but the main interpreter's, and these planned ones, each where found (python3.X on PATH, pyenv's
# versions), compiled in a venv of its own (.venv-3.X); the run of a planned one is not counted.
PLANNED_PYTHONS := 3.14
TEST_PYTHONS = bash scripts/test-pythons.sh --main $(if $(wildcard $(PY)),$(PY),$(PYTHON)) \
	--planned "$(PLANNED_PYTHONS)" $(FAST_TESTS)

.PHONY: help venv brokers java compiler demo test test-fast test-pure test-pythons test-brokers check format clean

help:  ## list the targets
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | sed 's/:.*## /\t/'

# The venv holds every extra (scripts/extras.py reads them from pyproject.toml) and the dev tools
# (the dependency group `dev`, which `pip install --group` reads from pip 25.1 on; the pip a new
# venv comes with may be older).
$(STAMP): pyproject.toml latency/pyproject.toml setup.py $(SOURCE)
	@bash scripts/check-prerequisites.sh $(PYTHON) venv
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet 'pip>=25.1'
	$(PY) -m pip install --quiet -e ".[$$($(PY) scripts/extras.py)]" --group dev -e './latency[spark]'
	touch $(STAMP)

venv: $(STAMP)  ## create the virtual environment: the matching library (its core compiled) with every extra, the latency harness, dev tools

brokers:  ## install RabbitMQ, Mosquitto, nats-server, Redis, ActiveMQ and Java (17 on Debian 12, 21 on 13) from Debian (needs root)
	@LOG=$(BROKERS_LOG) bash scripts/install-brokers.sh

java:  ## install the Java Spark needs from Debian (17 on Debian 12, 21 on 13; needs root unless one is there)
	@LOG=$(BROKERS_LOG) bash scripts/install-brokers.sh --java

compiler:  ## check first what the compiled core needs (gcc, the Python headers), each missing piece with its fix
	@bash scripts/check-prerequisites.sh $(PYTHON) compiler

# What `make demo` writes (and `make clean` removes), the log of the brokers' install, and the
# logs of make test's runs (scripts/test-builds.sh).
DEMO := out/demo
DEMO_OUTPUTS := $(DEMO)/data $(DEMO)/routed
BROKERS_LOG := out/install-brokers.log
TEST_LOGS := out/test

demo: venv java  ## the main job, local mode: generate 1,000,000 messages and 10,000 subscriptions, route them on Spark
	$(VENV)/bin/topicmatch generate --messages 1000000 --subscriptions 10000 --invalid-fraction 0.0001 --out $(DEMO)/data
	PYSPARK_PYTHON=$(abspath $(PY)) SPARK_LOCAL_IP=127.0.0.1 $(VENV)/bin/topicmatch route --overwrite \
		--messages $(DEMO)/data/messages --subscriptions $(DEMO)/data/subscriptions.parquet --out $(DEMO)/routed

check: venv  ## lint (ruff), format check and strict typing (mypy)
	$(VENV)/bin/ruff check src latency/src latency/tests tests benchmarks setup.py conftest.py
	$(VENV)/bin/ruff format --check src latency/src latency/tests tests benchmarks setup.py conftest.py
	$(VENV)/bin/mypy

# Two queues at once (scripts/test-builds.sh: the compiled build's Spark and harness tests, then
# the pure build; the compiled build's other tests, then the other CPythons), each run's output in
# out/test/; every run happens even when one before it fails; the last lines say how each build and each
# other CPython did (`make test: compiled build: passed`, `make test: pure build: FAILED (exit 1)`,
# `make test: CPython 3.12.1 (compiled, .venv-3.12): passed (install 0 s, tests 95 s)`,
# `make test: CPython 3.14: not found (skipped; ...)`).
test: compiler venv brokers check  ## the whole suite on the compiled core, the library's tests on the pure one, the fast tests compiled on each other CPython found; two runs at a time
	@$(PY) -c 'import sys, topicmatch; sys.exit(topicmatch.BUILD != "compiled" and 		"the compiled core does not run here (not compiled, or TOPICMATCH_PURE set): make test needs gcc and the Python headers (docs/compiled.md)")'
	@TEST_LOGS=$(TEST_LOGS) bash scripts/test-builds.sh $(PY) $(PURE_TESTS) -- $(TEST_PYTHONS)

test-fast: venv  ## the library alone, in about 2 minutes: no brokers, Spark, latency runs or slow smoke tests
	$(PY) -m pytest $(FAST_TESTS)

test-pythons:  ## make test's part on the other CPythons: each found gets a venv (.venv-3.X), the package compiled, the fast tests
	@$(TEST_PYTHONS)

test-pure: venv brokers  ## the library's tests (broker conformance included) on the pure-Python core
	TOPICMATCH_PURE=1 $(PY) -m pytest $(PURE_TESTS)

test-brokers: venv brokers  ## only the conformance tests against the real brokers
	$(PY) -m pytest -m brokers tests/brokers

format: venv  ## reformat the code
	$(VENV)/bin/ruff format src latency/src latency/tests tests benchmarks setup.py conftest.py
	$(VENV)/bin/ruff check --fix src latency/src latency/tests tests benchmarks setup.py conftest.py

clean:  ## remove what the targets wrote: the demo's data and output, the venvs, caches, the install and test logs, the core compiled in place
	rm -rf $(DEMO_OUTPUTS) $(BROKERS_LOG) $(TEST_LOGS)
	rmdir $(DEMO) out 2>/dev/null || true
	rm -rf $(VENV) .venv-3.* .pytest_cache .mypy_cache .ruff_cache .hypothesis build latency/build src/*.egg-info latency/src/*.egg-info
	rm -f src/*.so src/topicmatch/*.so src/topicmatch/_engine/*.so src/topicmatch/_compiled.json
