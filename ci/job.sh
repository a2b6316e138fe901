#!/usr/bin/env bash
# Steps of the CI jobs (.github/workflows/cpu.yml, gpu.yml, npu.yml), called through make ci-* targets.
# Usage: ci/job.sh STEP   (STEP: see the case below)
# CI_DRY_RUN=1 checks each step's inputs and prints its heavy commands (venv builds, tests, training)
# instead of running them; tests/test_workflows.py replays the workflows that way on CPU.
set -euo pipefail
cd "$(dirname "$0")/.."

# The NPU smoke script, relative to the patched tree.
NPU_SMOKE_SCRIPT=${NPU_SMOKE_SCRIPT:-tests/special_npu/run_qwen3_5_2b_grpo_megatron.sh}
TOOL=.venv/bin/verl-patches
DRY=0
case "${CI_DRY_RUN:-0}" in
0 | "") ;;
1) DRY=1 ;;
*)
    echo "ci/job.sh: CI_DRY_RUN must be 0 or 1, not '${CI_DRY_RUN}'" >&2
    exit 2
    ;;
esac
# The base whose queue a step works on (make ci-* sets it for each of BASES); the tool reads it too.
BASE=${VERL_PATCHES_BASE:-}
[ -n "$BASE" ] || {
    echo "ci/job.sh: VERL_PATCHES_BASE is not set: name the base (make ci-* sets it for each of BASES)" >&2
    exit 2
}
TREE=build/$BASE/verl
RESULTS=${CI_RESULTS_DIR:-build/ci}/$BASE

die() {
    echo "ci/job.sh: $*" >&2
    exit 1
}

# Run a command, or with CI_DRY_RUN=1 check that it can be found and print it.
heavy() {
    if [ "$DRY" = 1 ]; then
        command -v "$1" >/dev/null || die "dry run: '$1' is not an executable here"
        echo "+ (dry run) $*"
    else
        echo "+ $*"
        "$@"
    fi
}

# The tool's test command; with CI_DRY_RUN=1 it prints what it would run (--list) without a venv.
tool_test() {
    [ -x "$TOOL" ] || die "$TOOL is missing: run make first"
    [ -d "$TREE/.git" ] || die "$TREE is missing: run make first"
    if [ "$DRY" = 1 ]; then
        "$TOOL" test --no-apply --list "$@"
    else
        "$TOOL" test --no-apply "$@"
    fi
}

# A variable the job must set (repository variable or input).
need() {
    [ -n "${!1:-}" ] || die "$1 is not set: $2"
}

ray_stop() {
    local python=${NPU_SMOKE_PYTHON:-python3}
    if "$python" -c 'import ray' 2>/dev/null; then
        heavy "$python" -m ray.scripts.scripts stop --force
    else
        echo "no ray importable with $python: nothing to stop"
    fi
}

step=${1:-}
case "$step" in
gpu-info)
    command -v nvidia-smi >/dev/null || die "nvidia-smi is not on PATH: this is no NVIDIA GPU host"
    nvidia-smi -L
    ;;
venv)
    # build/venv with the torch build of TORCH_INDEX_URL (empty: pip's own configuration).
    echo "torch index: ${TORCH_INDEX_URL:-pip configuration}"
    tool_test --venv-only
    ;;
gpu-tests)
    mkdir -p "$RESULTS"
    tool_test --gpu --junit-dir "$RESULTS"
    ;;
cpu-upstream)
    # verl's own CPU suite on the base and with the series, compared per test.
    tool_test --upstream
    ;;
gpu-upstream)
    mkdir -p "$RESULTS"
    tool_test --gpu --upstream --junit-dir "$RESULTS"
    ;;
gpu-distributed)
    tool_test --distributed --nproc "${CI_NPROC:-2}"
    ;;
gpu-extras)
    # Optional verl extras (e.g. gpu: flash-attn, built from source for torch 2.13) into build/venv.
    if [ -z "${VERL_EXTRAS:-}" ]; then
        echo "no verl extras requested (VERL_EXTRAS is empty)"
        exit 0
    fi
    [[ "$VERL_EXTRAS" =~ ^[a-z0-9_,-]+$ ]] || die "VERL_EXTRAS must be a comma-separated list of extras, not '$VERL_EXTRAS'"
    python=build/venv/bin/python
    [ "$DRY" = 1 ] || [ -x "$python" ] || die "$python is missing: run make venv first"
    run_venv() {
        if [ "$DRY" = 1 ]; then echo "+ (dry run) $*"; else echo "+ $*" && "$@"; fi
    }
    # Built from a copy of the tree's HEAD, so that the build writes nothing into build/verl.
    copy=$(mktemp -d)
    git -C "$TREE" archive HEAD | tar -x -C "$copy"
    run_venv "$python" -m pip install --quiet ninja
    run_venv env MAX_JOBS="${MAX_JOBS:-4}" "$python" -m pip install --no-build-isolation \
        --constraint requirements/cpu-test.txt "${copy}[${VERL_EXTRAS}]"
    # The extras' packages stay; verl itself is imported from the tree.
    run_venv "$python" -m pip uninstall --yes verl
    rm -rf "$copy"
    ;;
npu-info)
    command -v npu-smi >/dev/null || die "npu-smi is not on PATH: this is no Ascend host"
    npu-smi info
    need NPU_CANN_VERSION "the CANN release the container image must have"
    info=${ASCEND_TOOLKIT_HOME:-/usr/local/Ascend/ascend-toolkit/latest}/$(uname -m)-linux/ascend_toolkit_install.info
    [ -f "$info" ] || die "no CANN toolkit: $info does not exist"
    cat "$info"
    found=$(sed -n 's/^version=//p' "$info" | head -n 1)
    [ "$found" = "$NPU_CANN_VERSION" ] || die "CANN $found in the image, but NPU_CANN_VERSION is $NPU_CANN_VERSION"
    ;;
npu-venv)
    tool_test --npu --venv-only
    ;;
npu-tests)
    mkdir -p "$RESULTS"
    tool_test --npu --junit-dir "$RESULTS"
    ;;
ray-stop)
    ray_stop
    ;;
npu-smoke)
    need MODEL_PATH "set the repository variable NPU_SMOKE_MODEL_PATH"
    need TRAIN_FILE "set the repository variable NPU_SMOKE_TRAIN_FILE"
    need TEST_FILE "set the repository variable NPU_SMOKE_VAL_FILE"
    script=$TREE/$NPU_SMOKE_SCRIPT
    [ -f "$script" ] || die "the smoke script $script does not exist in the patched tree"
    mkdir -p "$RESULTS"
    metrics=$PWD/$RESULTS/npu-smoke-metrics.jsonl
    rm -f "$metrics"
    export PYTHON=${NPU_SMOKE_PYTHON:-python3}
    export PYTHONPATH="$PWD/$TREE${PYTHONPATH:+:$PYTHONPATH}"
    export VERL_FILE_LOGGER_PATH=$metrics
    # The script runs python3: the one of the Ascend training environment.
    PATH="$(dirname "$(command -v "$PYTHON")"):$PATH"
    # Hydra overrides after the script's own (the later value wins).
    smoke_args=("trainer.logger=[console,file]" "data.train_max_samples=${TRAIN_MAX_SAMPLES:-32}"
        "data.val_max_samples=${VAL_MAX_SAMPLES:-8}")
    if [ -n "${CKPT_DIR:-}" ]; then
        smoke_args+=("trainer.default_local_dir=$CKPT_DIR")
    fi
    ray_stop
    # The launch command must compose; DRY_RUN=1 only prints it.
    DRY_RUN=1 bash "$script" "${smoke_args[@]}" >"$RESULTS/npu-smoke-command.txt"
    cat "$RESULTS/npu-smoke-command.txt"
    if [ "$DRY" = 1 ]; then
        echo "+ (dry run) bash $script"
        echo "+ (dry run) .venv/bin/python -m verl_patches.smoke_check --thresholds ci/smoke-thresholds.toml $metrics"
        .venv/bin/python -m verl_patches.smoke_check --thresholds ci/smoke-thresholds.toml --show-rules
        exit 0
    fi
    "$PYTHON" -c 'import sys, verl; assert verl.__file__.startswith(sys.argv[1]), verl.__file__' "$PWD/$TREE"
    DRY_RUN=0 bash "$script" "${smoke_args[@]}" 2>&1 | tee "$RESULTS/npu-smoke-console.log"
    .venv/bin/python -m verl_patches.smoke_check --thresholds ci/smoke-thresholds.toml "$metrics"
    ;;
*)
    die "unknown step '${step}' (gpu-info, venv, cpu-upstream, gpu-extras, gpu-tests, gpu-upstream, gpu-distributed, npu-info,
npu-venv, npu-tests, ray-stop, npu-smoke)"
    ;;
esac
