# `make run` and `make test` do all the set-up: a virtual environment in .venv, the pinned
# requirements, the package in editable mode. Re-running skips what is already installed.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed
MODEL  ?= minilm-l6
PORT   ?= 8501

.PHONY: run test bench clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)

$(STAMP): requirements.txt pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -r requirements.txt
	$(BIN)/python -m pip install --quiet --no-deps --no-build-isolation -e .
	touch $(STAMP)

run: $(STAMP)
	$(BIN)/specbound analyze $(MODEL)

test: $(STAMP)
	$(BIN)/python -m pytest

bench: $(STAMP)
	$(BIN)/python benchmarks/bench_spectra.py

clean:
	rm -rf $(VENV) .pytest_cache test-artifacts
