# `make run` and `make test` do all the set-up: a virtual environment in .venv, the pinned
# requirements, the library and the lab beside it (lab/) in editable mode. Re-running skips what is
# already installed.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed
DOCS_STAMP := $(VENV)/.docs-installed
MODEL  ?= minilm-l6
PORT   ?= 8501
# Only this machine by default; `make run HOST=0.0.0.0` serves every network interface on purpose
# (SECURITY.md: what a visitor can then do).
HOST   ?= 127.0.0.1

LAB_DIR ?= lab-class
# The suite runs on this many pytest-xdist workers: most of its time is spent waiting on a browser, a
# server or a subprocess, so two workers nearly halve it on two cores. The ten slowest tests are listed
# at the end, so that a regression shows.
TEST_WORKERS ?= 2
# How the tests are dealt to the workers: each gets one half of the suite, in order, and an idle worker
# takes the last half of what another has left ("worksteal"). A module's tests then mostly run in one
# process, which pays once for the module's fixtures (a trained sweep, a model, a page's cached
# bootstraps); "load" deals out runs of tests that shrink towards the end, where the lab's sweeps are,
# splitting a module at every run's end and making both workers pay for its fixtures.
TEST_DIST ?= worksteal

.PHONY: run test lint docs docs-serve notebooks bench clean browser lab-reference lab-finetune

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)

# --no-compile: pip would byte-compile every module it installs (about 20,000 files with the documentation's,
# a minute of one core); Python compiles those that are imported (about 4,200 for the whole suite) when
# they first are, and keeps them.
$(STAMP): requirements.txt pyproject.toml lab/pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet --no-compile -r requirements.txt
	$(BIN)/python -m pip install --quiet --no-deps --no-build-isolation -e . -e ./lab
	touch $(STAMP)

# The documentation toolchain (mkdocs-material, mkdocstrings, mkdocs-jupyter) and the notebooks' kernel,
# from their own pinned file: the package's install stays as it is.
$(DOCS_STAMP): requirements-docs.txt $(STAMP)
	$(BIN)/python -m pip install --quiet --no-compile -r requirements-docs.txt
	touch $(DOCS_STAMP)

run: $(STAMP)
	$(BIN)/python -m dashboard.serve --server.address $(HOST) --server.port $(PORT)

test: lint docs browser
	$(BIN)/python -m pytest -n $(TEST_WORKERS) --dist $(TEST_DIST) --durations=10

# The site in site/, offline; --strict fails on any warning (a broken link, an unresolved reference).
docs: $(DOCS_STAMP)
	NO_MKDOCS_2_WARNING=1 $(BIN)/mkdocs build --strict --quiet

docs-serve: $(DOCS_STAMP)
	NO_MKDOCS_2_WARNING=1 $(BIN)/mkdocs serve --dev-addr 127.0.0.1:8000

# Run the documentation's notebooks and store them with their outputs (what the site shows); the test
# suite runs them again and compares, so run this after a change that moves one of their numbers.
notebooks: $(DOCS_STAMP)
	$(BIN)/python docs/hooks/notebooks.py

# ruff (lint and format) and mypy, configured in pyproject.toml; any finding fails the target.
lint: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/mypy

# The browser tests drive Debian's Chromium; install it when it is missing and we may (root + apt).
browser:
	@command -v chromium >/dev/null 2>&1 || { \
	  if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then \
	    echo "installing Debian's chromium for the browser tests"; \
	    DEBIAN_FRONTEND=noninteractive apt-get update -qq && \
	    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null; \
	  else echo "chromium is missing: the browser tests will be skipped (apt-get install chromium)"; fi; }

bench: $(STAMP) browser
	$(BIN)/python benchmarks/bench_spectra.py
	$(BIN)/python benchmarks/bench_families.py
	$(BIN)/python benchmarks/bench_callback.py
	$(BIN)/python benchmarks/bench_dashboard.py

# Retrain the lab's shipped references and ship their results (minutes to about an hour each on 2 cores:
# the manual gives each one's cost; finetune needs peft).
lab-reference: $(STAMP)
	$(BIN)/specbound lab sweep --preset class --out $(LAB_DIR) --export-reference
	$(BIN)/specbound lab sweep --preset class --task markov --family gpt2 --out $(LAB_DIR)-decoder --export-reference
	$(BIN)/specbound lab sweep --preset grok --task modular --family gpt2 --out $(LAB_DIR)-grok --export-reference
	$(BIN)/specbound lab sweep --preset fit --out $(LAB_DIR)-fit --workers 2 --export-reference
	$(BIN)/specbound lab sweep --preset fit --family gpt2 --out $(LAB_DIR)-fit --workers 2 --export-reference
	$(BIN)/specbound lab sweep --preset fit --task markov --family gpt2 --out $(LAB_DIR)-fit --workers 2 --export-reference
	$(BIN)/specbound lab sweep --preset fit --task markov --family llama --out $(LAB_DIR)-fit --workers 2 --export-reference
	$(BIN)/specbound lab sweep --preset finetune --out $(LAB_DIR)-finetune --workers 2 --export-reference
	$(BIN)/specbound lab sweep --preset scaling --out $(LAB_DIR)-scaling --export-reference

clean:
	rm -rf $(VENV) .pytest_cache test-artifacts

# Retrain the shipped fine-tuning trio (a base, its full fine-tune, a LoRA adapter; about two minutes):
# the adapter is made by peft, a test requirement only.
lab-finetune: $(STAMP)
	$(BIN)/python -m specbound_lab.finetune
