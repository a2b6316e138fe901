#!/usr/bin/env bash
# Run the series' GPU tests on a CUDA host that has Python and torch and no network, from the kit that
# `make gpu-kit` builds (build/gpu-kit; docs/gpu-evidence.md). Run it from the kit's folder:
#   bash gpu_evidence.sh [PYTHON]        PYTHON: the interpreter that has torch (default python3)
# Writes results/junit.xml, results/summary.txt (printed) and results/pytest.log. Exit status: pytest's
# (0 only when no test failed), else 3 when torch sees no CUDA device (the tests ran anyway, so the kit
# can be checked on a CPU host, where every test skips).
set -euo pipefail
cd "$(dirname "$0")"
PYTHON=${1:-python3}
for part in tree tests.txt wheelhouse requirements.txt stubs summary.py; do
    [ -e "$part" ] || {
        echo "gpu_evidence.sh: $part is missing: run it in a kit built by make gpu-kit" >&2
        exit 2
    }
done
"$PYTHON" -c 'import torch' || {
    echo "gpu_evidence.sh: $PYTHON cannot import torch; the kit expects it preinstalled" >&2
    exit 2
}
# The host's torch stays where it is; the rest goes into results/site from the wheelhouse only
# (requirements.txt pins every package, so no resolution is needed: --no-deps).
rm -rf results
mkdir -p results
"$PYTHON" -m pip --isolated install --quiet --disable-pip-version-check --no-index --no-deps \
    --find-links wheelhouse --target results/site -r requirements.txt
kit_path="$PWD/tree:$PWD/results/site:$PWD/stubs"
cuda=$(PYTHONPATH="$kit_path" "$PYTHON" -c 'import torch; print(torch.cuda.is_available())')
mapfile -t tests <tests.txt
status=0
(
    cd tree
    PYTHONPATH="$kit_path" "$PYTHON" -m pytest -p no:cacheprovider -rs --timeout=900 --rootdir "$PWD" \
        --junitxml=../results/junit.xml "${tests[@]}"
) >results/pytest.log 2>&1 || status=$?
tail -n 5 results/pytest.log
PYTHONPATH="$kit_path" "$PYTHON" summary.py results/junit.xml tree | tee results/summary.txt
if [ "$cuda" != True ]; then
    echo "torch sees no CUDA device: this run is no GPU evidence" | tee -a results/summary.txt
    [ "$status" -ne 0 ] || status=3
fi
exit "$status"
