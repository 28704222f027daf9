# notebook-bcc: every target installs what it needs into .venv first (extras included),
# even when .venv already exists; the install step re-runs whenever its inputs change.

PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.notebook-bcc-installed
INSTALL_INPUTS := pyproject.toml $(wildcard labextension/package.json labextension/yarn.lock labextension/tsconfig.json labextension/src/*.ts labextension/src/*.tsx labextension/style/*)

.PHONY: install test lint typecheck test-ts pytest run bench bench-server clean help

help:
	@echo "make run    - run the housing DSLC workflow headless into out/housing/"
	@echo "make test   - ruff, mypy (strict), the panel's TypeScript unit tests and pytest"
	@echo "make test-ts - the panel's TypeScript unit tests only (node --test)"
	@echo "make clean  - remove the venv and build outputs"

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip

$(STAMP): $(BIN)/python $(INSTALL_INPUTS)
	$(BIN)/python -m pip install --quiet -e ".[test,dev,examples,collab]"
	@touch $(STAMP)

install: $(STAMP)

lint: install
	$(BIN)/ruff check notebook_bcc tests
	$(BIN)/ruff format --check notebook_bcc tests

typecheck: install
	$(BIN)/mypy

test-ts: install
	cd labextension && PATH=$(abspath $(BIN)):$$PATH jlpm test

# Two pytest-xdist workers; --dist loadfile keeps each test file on one worker, so a module's
# server, kernel or browser fixture starts once, as in a serial run. --no-loadscope-reorder
# keeps the order tests/conftest.py gives (longest files first) instead of xdist's
# most-tests-first, which left the few-test, minutes-long files for the end.
# PYTEST_WORKERS=0 runs serially.
PYTEST_WORKERS ?= 2
pytest: install
	$(BIN)/python -m pytest -n $(PYTEST_WORKERS) --dist loadfile --no-loadscope-reorder

test: lint typecheck test-ts pytest

HOUSING_PROBLEM := Predict house prices from the submitted data; the held-out RMSE must be below 18,000 and R² above 0.9.

run: install
	$(BIN)/notebook-bcc run examples/housing --auto-confirm \
		--notebook out/housing/housing.ipynb --state-db out/housing/state.sqlite \
		--problem "$(HOUSING_PROBLEM)"

bench: install
	$(BIN)/python -m benchmarks

bench-server: install
	$(BIN)/python -m benchmarks.server_bench

clean:
	rm -rf $(VENV) notebook_bcc/labextension labextension/lib labextension/build-test labextension/node_modules out
