#!/usr/bin/env bash
# Steps of the CI jobs (.github/workflows/cpu.yml, gpu.yml, npu.yml), called through make ci-* targets.
# Usage: ci/job.sh STEP   (STEP: see the case below)
# CI_DRY_RUN=1 checks each step's inputs and prints its heavy commands (venv builds, tests, training)
# instead of running them; tests/ci/test_workflows.py replays the workflows that way on CPU.
set -euo pipefail
cd "$(dirname "$0")/.."

# The NPU smoke script, relative to the patched tree.
NPU_SMOKE_SCRIPT=${NPU_SMOKE_SCRIPT:-tests/special_npu/nightly_ci_ascend/run_grpo_qwen3_5_2b_megatron_npu.sh}
TOOL=.venv/bin/verl-patches
# The NPU job's test environment: the image's Python with its own packages, plus requirements/npu.txt.
NPU_VENV=build/npu-venv
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
    fi
    later "$@"
}

# Run a command, or with CI_DRY_RUN=1 print it (for an executable that an earlier heavy command creates).
later() {
    if [ "$DRY" = 1 ]; then
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
    local python=${NPU_PYTHON:-python3}
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
    # verl's own GPU unit tests on the base and with the series, compared per test.
    mkdir -p "$RESULTS"
    tool_test --gpu --upstream --junit-dir "$RESULTS"
    ;;
gpu-distributed)
    tool_test --distributed --nproc "${CI_NPROC:-2}"
    ;;
gpu-flash-attn)
    # A prebuilt flash-attn wheel into build/venv, when one is named; nothing is built from source here.
    wheel=${FLASH_ATTN_WHEEL:-}
    if [ -z "$wheel" ]; then
        echo "no flash-attn wheel given (input flash_attn_wheel, repository variable GPU_FLASH_ATTN_WHEEL):" \
            "verl's tests that import it fail on the base and with the series alike"
        exit 0
    fi
    [[ "$wheel" =~ ^[^[:space:]]*/flash_attn-[^/[:space:]]+\.whl$ ]] ||
        die "FLASH_ATTN_WHEEL must be the URL or path of a prebuilt flash_attn-*.whl, not '$wheel'"
    python=build/venv/bin/python
    [ "$DRY" = 1 ] || [ -x "$python" ] || die "$python is missing: run make venv first"
    # The constraints keep build/venv's torch; only the wheel and what it needs besides torch are added.
    later "$python" -m pip install --only-binary=:all: --constraint requirements/cpu-test.txt "$wheel"
    ;;
gpu-models)
    # verl's GPU tests load models from ~/models/<org>/<name>: link that to the runner's folder of models.
    models=${VERL_TEST_MODELS:-}
    link=$HOME/models
    if [ -z "$models" ]; then
        if [ -e "$link" ]; then
            echo "GPU_MODELS_DIR is not set: the tests use $link as it is"
        else
            echo "GPU_MODELS_DIR is not set and $link does not exist: verl's tests that load a model fail on the" \
                "base and with the series alike"
        fi
        exit 0
    fi
    [ -d "$models" ] || die "GPU_MODELS_DIR $models is not a folder on this runner"
    if [ -L "$link" ] && [ "$(readlink "$link")" = "$models" ]; then
        echo "$link already links to $models"
    elif [ -e "$link" ] || [ -L "$link" ]; then
        die "$link exists and is not a link to $models: move it away, or leave GPU_MODELS_DIR unset to use it"
    else
        later ln -s "$models" "$link"
    fi
    ls "$models"
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
    # The series' tests run on the image's own Python, torch and torch_npu (built for its CANN): the venv sees
    # the image's packages and adds only the test packages of requirements/npu.txt that they do not satisfy.
    python=${NPU_PYTHON:-python3}
    heavy "$python" -m venv --system-site-packages "$NPU_VENV"
    later "$NPU_VENV/bin/python" -m pip install --quiet -r requirements/npu.txt
    echo "added to the image's packages:"
    later "$NPU_VENV/bin/python" -m pip list --local --format=freeze
    later "$NPU_VENV/bin/python" -c 'import torch, torch_npu; print("torch", torch.__version__, "torch_npu", torch_npu.__version__)'
    ;;
npu-tests)
    mkdir -p "$RESULTS"
    VERL_PATCHES_PYTHON=$PWD/$NPU_VENV/bin/python tool_test --npu --junit-dir "$RESULTS"
    ;;
ray-stop)
    ray_stop
    ;;
npu-smoke)
    need MODEL_PATH "set the repository variable NPU_SMOKE_MODEL_PATH"
    need TRAIN_FILE "set the repository variable NPU_SMOKE_TRAIN_FILE"
    need TEST_FILE "set the repository variable NPU_SMOKE_VAL_FILE"
    steps=${TOTAL_TRAINING_STEPS:-2}
    [[ "$steps" =~ ^[1-9][0-9]*$ ]] || die "TOTAL_TRAINING_STEPS must be a positive number of steps, not '$steps'"
    script=$TREE/$NPU_SMOKE_SCRIPT
    [ -f "$script" ] || die "the smoke script $script does not exist in the patched tree"
    mkdir -p "$RESULTS"
    metrics=$PWD/$RESULTS/npu-smoke-metrics.jsonl
    console=$PWD/$RESULTS/npu-smoke-console.log
    rm -f "$metrics" "$console"
    export PYTHON=${NPU_PYTHON:-python3}
    export PYTHONPATH="$PWD/$TREE${PYTHONPATH:+:$PYTHONPATH}"
    export VERL_FILE_LOGGER_PATH=$metrics TOTAL_TRAINING_STEPS=$steps
    # The script runs python3: the one of the Ascend training environment.
    PATH="$(dirname "$(command -v "$PYTHON")"):$PATH"
    # Hydra overrides after the script's own (the later value wins): both loggers, the step count the check
    # expects, the rollout log-probs that the probability-gap and NLL metrics need, checkpoints under the runner's
    # temporary folder (RUNNER_TEMP is the container's own path there).
    smoke_args=("trainer.logger=[console,file]" "trainer.total_training_steps=$steps"
        "actor_rollout_ref.rollout.calculate_log_probs=True"
        "data.train_max_samples=${TRAIN_MAX_SAMPLES:-32}" "data.val_max_samples=${VAL_MAX_SAMPLES:-8}"
        "trainer.default_local_dir=${CKPT_DIR:-${RUNNER_TEMP:-${TMPDIR:-/tmp}}/npu-smoke-ckpt}")
    check=(.venv/bin/python ci/smoke_check.py --thresholds ci/smoke-thresholds.toml --steps "$steps"
        "$metrics" "$console")
    ray_stop
    # The launch command must compose; DRY_RUN=1 only prints it.
    DRY_RUN=1 bash "$script" "${smoke_args[@]}" >"$RESULTS/npu-smoke-command.txt"
    cat "$RESULTS/npu-smoke-command.txt"
    if [ "$DRY" = 1 ]; then
        echo "+ (dry run) bash $script"
        echo "+ (dry run) ${check[*]}"
        "${check[0]}" "${check[@]:1:3}" --show-rules
        exit 0
    fi
    "$PYTHON" -c 'import sys, verl; assert verl.__file__.startswith(sys.argv[1]), verl.__file__' "$PWD/$TREE"
    run_status=0
    DRY_RUN=0 bash "$script" "${smoke_args[@]}" 2>&1 | tee "$console" || run_status=$?
    # The metrics are checked whatever the run's exit status: they tell how far it got.
    check_status=0
    "${check[@]}" || check_status=$?
    [ "$run_status" = 0 ] || die "the smoke run exited with status $run_status"
    exit "$check_status"
    ;;
*)
    die "unknown step '${step}' (gpu-info, venv, cpu-upstream, gpu-flash-attn, gpu-models, gpu-tests, gpu-upstream,
gpu-distributed, npu-info, npu-venv, npu-tests, ray-stop, npu-smoke)"
    ;;
esac
