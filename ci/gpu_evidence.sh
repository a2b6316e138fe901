#!/usr/bin/env bash
# Run the series' GPU tests on a CUDA host that has Python and torch and no network, from the kit that
# `make gpu-kit` builds (build/gpu-kit; docs/gpu-evidence.md):
#   bash gpu_evidence.sh --out DIR [--python PYTHON] [--budget SECONDS]
#     --out DIR         receives the results, and nothing else: junit.xml, summary.txt, run.log, manifest.txt
#     --python PYTHON   the interpreter that has torch (default python3)
#     --budget SECONDS  stop pytest after this long (SIGINT: it still reports the tests that ran)
# The kit is only read; its wheels are installed into a temporary folder, removed at the end.
# Exit status: pytest's when a test failed; 124 when the budget ran out; 3 when torch sees no CUDA device (the
# tests still run and skip: a check of the kit on a CPU host, no GPU evidence); 4 when torch sees one but no test
# passed or failed; 2 when the arguments, the kit or the interpreter are unusable.
set -euo pipefail
kit=$(cd "$(dirname "$0")" && pwd)
usage="usage: bash gpu_evidence.sh --out DIR [--python PYTHON] [--budget SECONDS]"

fail() {
    echo "gpu_evidence.sh: $*" >&2
    exit 2
}

out="" python=python3 budget=""
while [ $# -gt 0 ]; do
    case "$1" in
    --out | --python | --budget)
        [ $# -ge 2 ] || fail "$1 needs a value ($usage)"
        case "$1" in
        --out) out=$2 ;;
        --python) python=$2 ;;
        --budget) budget=$2 ;;
        esac
        shift 2
        ;;
    *) fail "unknown argument '$1' ($usage)" ;;
    esac
done
[ -n "$out" ] || fail "--out DIR is required: the folder that receives the results ($usage)"
[ -z "$budget" ] || [[ "$budget" =~ ^[1-9][0-9]*$ ]] || fail "--budget must be a number of seconds, not '$budget'"
for part in tree tests.txt wheelhouse requirements.txt stubs summary.py KIT; do
    [ -e "$kit/$part" ] || fail "$kit/$part is missing: run this script in a kit built by make gpu-kit"
done
command -v "$python" >/dev/null || fail "'$python' is not an executable here: name the Python that has torch"
wanted=$(sed -n 's/^resolved for CPython \([0-9.]*\) .*/\1/p' "$kit/KIT")
found=$("$python" -c 'import sys; print("%d.%d" % sys.version_info[:2])')
[ "$wanted" = "$found" ] || fail "the kit is built for CPython $wanted, $python is $found: build it with make gpu-kit" \
    "GPU_KIT_ARGS='--python-version $found'"
mkdir -p "$out"
out=$(cd "$out" && pwd)
log=$out/run.log
: >"$log"
"$python" -c 'import torch' >>"$log" 2>&1 || fail "$python cannot import torch (see $log); the kit expects it preinstalled"

work=$(mktemp -d "${TMPDIR:-/tmp}/gpu-kit.XXXXXX")
trap 'rm -rf "$work"' EXIT
# The host's torch stays where it is; the rest goes into $work/site from the wheelhouse alone (requirements.txt
# pins every package: no resolution, --no-deps).
if "$python" -m pip --version >/dev/null 2>&1; then
    install="pip, from the wheelhouse only"
    "$python" -m pip --isolated install --quiet --disable-pip-version-check --no-index --no-deps \
        --find-links "$kit/wheelhouse" --target "$work/site" -r "$kit/requirements.txt" >>"$log" 2>&1 ||
        fail "the wheels did not install (see $log)"
else
    install="unpacked (no pip for $python)"
    for wheel in "$kit"/wheelhouse/*.whl; do
        "$python" -m zipfile -e "$wheel" "$work/site" >>"$log" 2>&1 || fail "cannot unpack $wheel (see $log)"
    done
fi
# A stub stands in for a package only where the host has none.
mkdir -p "$work/stubs"
cp "$kit/stubs/_gpu_kit_stub.py" "$work/stubs/"
stubbed=() kept=()
for stub in "$kit"/stubs/*/; do
    name=$(basename "$stub")
    # shellcheck disable=SC2016 # the Python code is single-quoted on purpose
    if PYTHONPATH="$work/site" "$python" -c 'import importlib.util as u, sys; sys.exit(u.find_spec(sys.argv[1]) is None)' \
        "$name"; then
        kept+=("$name")
    else
        cp -R "$stub" "$work/stubs/$name"
        stubbed+=("$name")
    fi
done

kit_path="$kit/tree:$work/site:$work/stubs"
mapfile -t tests <"$kit/tests.txt"
timeout=900
[ -z "$budget" ] || [ "$budget" -ge "$timeout" ] || timeout=$budget
limit=()
[ -z "$budget" ] || limit=(timeout -s INT -k 30 "$budget")
status=0
(
    cd "$kit/tree"
    PYTHONDONTWRITEBYTECODE=1 PYTHONPATH="$kit_path" "${limit[@]}" "$python" -m pytest -p no:cacheprovider -rs \
        --timeout="$timeout" --rootdir "$kit/tree" --junitxml="$out/junit.xml" "${tests[@]}"
) >>"$log" 2>&1 || status=$?
summary=0
PYTHONPATH="$work/site" "$python" "$kit/summary.py" "$out/junit.xml" "$kit/tree" >"$out/summary.txt" 2>>"$log" ||
    summary=$?
# pytest's own failure wins; else the summary's verdict (3: no CUDA device, 4: nothing ran, 2: no report).
final=$status
[ "$status" -ne 0 ] && [ "$status" -ne 5 ] || final=$summary
{
    cat "$kit/KIT"
    echo "ran on:"
    PYTHONPATH="$work/site" "$python" "$kit/summary.py" --host 2>&1 || true
    echo "wheels: $install"
    echo "stubs used: ${stubbed[*]:-none}; the host's own: ${kept[*]:-none}"
    echo "budget: ${budget:-none}; per-test timeout: ${timeout} s"
    echo "pytest exit $status; gpu_evidence.sh exit $final"
} >"$out/manifest.txt"
cat "$out/summary.txt"
echo "results in $out; exit $final"
exit "$final"
