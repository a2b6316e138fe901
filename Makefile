# verl-patches: `make` builds (apply, check, patched wheel, series table); `make test` runs every test.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
TOOL := $(BIN)/verl-patches
export PATH := $(CURDIR)/$(BIN):$(PATH)

.PHONY: all build tool apply check wheel table test test-tool test-series test-wheel lint prove bench clean distclean
# The index torch is installed from into build/venv (empty: pip's own configuration), e.g.
# https://download.pytorch.org/whl/cpu or .../cu128. Part of build/venv's stamp: a change rebuilds it.
TORCH_INDEX_URL ?=
export TORCH_INDEX_URL
# CI steps (ci/job.sh); CI_DRY_RUN=1 prints their heavy commands instead of running them.
CI_STEPS := cpu-upstream gpu-info gpu-extras gpu-tests gpu-upstream gpu-distributed npu-info npu-venv npu-tests npu-smoke ray-stop
.PHONY: venv gpu-kit $(CI_STEPS:%=ci-%)

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

TEST_PARTS := lint test-tool test-series test-wheel
ifeq ($(CI_DRY_RUN),1)
test: tool
	$(MAKE) --dry-run $(TEST_PARTS)
else
test: $(TEST_PARTS)
endif

# build/venv: the pinned test environment (apply first: make or make apply).
venv: tool
	ci/job.sh venv

$(CI_STEPS:%=ci-%): tool
	ci/job.sh $(@:ci-%=%)

# A kit that runs the series' GPU tests on a CUDA host with torch and no network (docs/gpu-evidence.md).
gpu-kit: apply
	$(BIN)/python ci/gpu_kit/build.py

test-tool: tool
	$(BIN)/python -m pytest tests

test-series: tool
	$(TOOL) test

# The patched wheel imports and composes the Megatron trainer config (no GPU, no ray start).
test-wheel: test-series
	rm -rf build/wheel-check
	$(TOOL) wheel --outdir build/wheel-check
	$(BIN)/python -m zipfile -e build/wheel-check/verl-*.whl build/wheel-check/site
	PYTHONPATH=$(CURDIR)/build/wheel-check/site build/venv/bin/python -c \
		"import verl, sys; sys.exit(0 if '/wheel-check/site/' in verl.__file__ else 'verl not from the wheel')"
	PYTHONPATH=$(CURDIR)/build/wheel-check/site build/venv/bin/python -m verl.trainer.main_ppo \
		--config-name ppo_megatron_trainer --cfg job > build/wheel-check/job.yaml
	grep -q '^actor_rollout_ref:' build/wheel-check/job.yaml
	@echo "wheel check: $$(ls build/wheel-check/*.whl) composes ppo_megatron_trainer"

lint: tool
	$(BIN)/pre-commit run --all-files --show-diff-on-failure --color=never
	$(TOOL) check

bench: tool
	$(BIN)/python benchmarks/bench_tool.py

clean:
	rm -rf dist build/verl

distclean: clean
	rm -rf build $(VENV)
