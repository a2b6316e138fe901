# verl-patches: `make` builds (apply, check, patched wheel, series table); `make test` runs every test.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
TOOL := $(BIN)/verl-patches
export PATH := $(CURDIR)/$(BIN):$(PATH)

.PHONY: all build tool apply check wheel table test test-tool test-series lint prove bench clean distclean

all: build

$(VENV)/.installed: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --disable-pip-version-check -e '.[dev]'
	touch $@

tool: $(VENV)/.installed

build: tool
	$(TOOL) apply
	$(TOOL) check
	$(TOOL) wheel
	$(TOOL) table

apply check wheel table prove: tool
	$(TOOL) $@

test: lint test-tool test-series

test-tool: tool
	$(BIN)/python -m pytest tests

test-series: tool
	$(TOOL) test

lint: tool
	$(BIN)/pre-commit run --all-files --show-diff-on-failure --color=never
	$(TOOL) check

bench: tool
	$(BIN)/python benchmarks/bench_tool.py

clean:
	rm -rf dist build/verl

distclean: clean
	rm -rf build $(VENV)
