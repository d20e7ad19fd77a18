# Set-up and everyday commands. Everything installs into ./.venv from pyproject.toml.
VENV ?= .venv
PY := $(VENV)/bin/python
PYTEST_WORKERS ?= 3

.PHONY: setup demo test lint bench clean

$(VENV)/.installed: pyproject.toml
	python3 -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e '.[dev]'
	touch $@

setup: $(VENV)/.installed  ## create .venv and install labmgr with its test and dev tools

demo: setup  ## run the whole loop offline against the sandbox
	$(VENV)/bin/labmgr demo

test: setup  ## run the test suite (PostgreSQL tests run when LABMGR_TEST_PG_URL is set)
	$(PY) -m pytest -n $(PYTEST_WORKERS)

lint: setup  ## ruff, mypy and the import contracts (layers, no cycles)
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .
	$(VENV)/bin/mypy
	$(VENV)/bin/lint-imports

bench: setup  ## performance figures (minutes; see docs/benchmarks.md), not part of the tests
	$(PY) benchmarks/sandbox_throughput.py
	$(PY) benchmarks/model_groups.py
	$(PY) benchmarks/jobs_update.py
	$(PY) benchmarks/eval_throughput.py --skip-llmcomp
	$(PY) benchmarks/eval_em.py --skip-llmcomp
	$(PY) benchmarks/rate_limits.py --skip-llmcomp

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache
