"""Host syncs and CPU wall time per call of verl's mask, THD and no-padding builders, on the base
and on the patched tree side by side. Prints figures; asserts nothing.

    python benchmarks/bench_padding_builders.py                 # B = 8, 64, 256
    python benchmarks/bench_padding_builders.py --batch-sizes 8 64 --repeats 20

The base is `upstream/<version>` of build/verl, checked out into a temporary folder; the patched
tree is build/verl itself (`make apply` first). Each tree is measured in its own subprocess of
build/venv/bin/python (or VERL_PATCHES_PYTHON) with that tree first on sys.path. Host syncs are
counted with the patched tree's tests/models/_host_sync.py (a TorchDispatchMode that counts scalar
reads, nonzero, boolean indexing, masked_select, copies to the host and .tolist()); on CPU they cost
nothing, on an accelerator each one waits for the device. Wall time is the median of the repeats,
on CPU tensors, TP = CP = 1. The NPU rows patch is_npu_available to True and install stand-in
mindspeed setter modules, as on an Ascend host.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

# Runs inside each tree's subprocess: argv = [host_sync.py, batch sizes (comma-separated), repeats].
WORKER = r"""
import importlib.util, json, statistics, sys, time, types, warnings
warnings.filterwarnings("ignore")
import torch
from tensordict import TensorDict

spec = importlib.util.spec_from_file_location("_host_sync", sys.argv[1])
host_sync = importlib.util.module_from_spec(spec)
spec.loader.exec_module(host_sync)
batch_sizes = [int(b) for b in sys.argv[2].split(",")]
repeats = int(sys.argv[3])

from verl.models.mcore import util
from verl.utils import tensordict_utils as tu
from verl.workers.utils import padding

for name in ("get_tensor_model_parallel_world_size", "get_context_parallel_world_size"):
    setattr(util.mpu, name, lambda: 1)
util.mpu.get_context_parallel_rank = lambda: 0
for mod in ("mindspeed", "mindspeed.utils", "mindspeed.core", "mindspeed.core.context_parallel",
            "mindspeed.core.context_parallel.get_batch_utils"):
    sys.modules.setdefault(mod, types.ModuleType(mod))
sys.modules["mindspeed.core.context_parallel.get_batch_utils"].set_actual_seq_len = lambda value: None
sys.modules["mindspeed.utils"].set_position_ids = lambda value: None


def lengths(b, low, high, seed):
    gen = torch.Generator().manual_seed(seed)
    return torch.randint(low, high, (b,), generator=gen).tolist()


def nested(rows):
    return torch.nested.as_nested_tensor(rows, layout=torch.jagged)


def measure(call):
    call()  # warm-up
    with host_sync.HostSyncCounter() as counter:
        call()
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        call()
        times.append(time.perf_counter() - start)
    return counter.count, statistics.median(times) * 1e3


def cases(b):
    seq = lengths(b, 16, 512, b)
    ids = nested([torch.randint(1, 1000, (n,)) for n in seq])
    prompt = lengths(b, 8, 256, b + 1)
    response = lengths(b, 1, 256, b + 2)
    full = [p + r for p, r in zip(prompt, response)]
    log_probs = nested([torch.randn(n) for n in full])
    data = tu.get_tensordict(
        {"prompts": nested([torch.ones(p, dtype=torch.long) for p in prompt]),
         "responses": nested([torch.ones(r, dtype=torch.long) for r in response])},
        non_tensor_dict={"max_response_len": max(response)},
    )
    response_mask = nested([torch.ones(r, dtype=torch.long) for r in response])
    padded_response = torch.randn(b, max(response))

    def on_npu(call):
        def run():
            saved = util.is_npu_available
            util.is_npu_available = True
            try:
                return call()
            finally:
                util.is_npu_available = saved
        return run

    yield "build_vlm_attn_mask_thd", lambda: util.build_vlm_attn_mask_thd(ids, pad_token_id=0)
    yield "build_vlm_attn_mask_thd (NPU)", on_npu(lambda: util.build_vlm_attn_mask_thd(ids, pad_token_id=0))
    yield "preprocess_thd_engine", lambda: util.preprocess_thd_engine(ids, pre_process=True)
    yield "preprocess_thd_engine (NPU)", on_npu(lambda: util.preprocess_thd_engine(ids, pre_process=True))
    yield "no_padding_2_padding", lambda: padding.no_padding_2_padding(log_probs, data)
    yield "response_from_nested", lambda: padding.response_from_nested(log_probs, response_mask)
    yield "response_to_nested", lambda: padding.response_to_nested(padded_response, response_mask)


import verl

results = {"__verl__": verl.__file__}
for b in batch_sizes:
    for name, call in cases(b):
        try:
            results[f"{name}|{b}"] = measure(call)
        except Exception as e:
            results[f"{name}|{b}"] = repr(e)[:60]
print(json.dumps(results))
"""


def run_tree(python: str, tree: Path, host_sync: Path, batch_sizes: list[int], repeats: int) -> dict:
    env = {**os.environ, "PYTHONPATH": str(tree), "PYTHONDONTWRITEBYTECODE": "1"}
    proc = subprocess.run(
        [python, "-c", WORKER, str(host_sync), ",".join(map(str, batch_sizes)), str(repeats)],
        cwd=tree,
        env=env,
        capture_output=True,
        text=True,
    )
    if proc.returncode != 0:
        raise SystemExit(f"measuring {tree} failed:\n{proc.stderr[-3000:]}")
    results = json.loads(proc.stdout.strip().splitlines()[-1])
    imported = Path(results.pop("__verl__")).resolve()
    if tree.resolve() not in imported.parents:
        raise SystemExit(f"measuring {tree} imported verl from {imported}")
    return results


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--batch-sizes", type=int, nargs="+", default=[8, 64, 256])
    parser.add_argument("--repeats", type=int, default=10)
    args = parser.parse_args()

    build = Path(os.environ.get("VERL_PATCHES_BUILD_DIR", ROOT / "build"))
    patched = build / "verl"
    python = os.environ.get("VERL_PATCHES_PYTHON", str(build / "venv" / "bin" / "python"))
    host_sync = patched / "tests" / "models" / "_host_sync.py"
    if not host_sync.is_file() or not Path(python).exists():
        raise SystemExit(f"needs {host_sync} and {python}: run `make apply` and `verl-patches test` first")
    tag = subprocess.run(
        ["git", "describe", "--tags", "--match", "upstream/*", "--abbrev=0", "HEAD"],
        cwd=patched,
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()

    with tempfile.TemporaryDirectory(prefix="verl-bench-base-") as tmp:
        base = Path(tmp) / "verl"
        archive = subprocess.run(["git", "archive", tag, "verl"], cwd=patched, capture_output=True, check=True)
        base.mkdir()
        subprocess.run(["tar", "-x", "-C", str(base)], input=archive.stdout, check=True)
        before = run_tree(python, base, host_sync, args.batch_sizes, args.repeats)
    after = run_tree(python, patched, host_sync, args.batch_sizes, args.repeats)

    print(f"base: {tag}; patched: build/verl ({len(series_names())} patch(es)); median of {args.repeats} calls, CPU")
    header = f"{'builder':<32}{'B':>5}  {'syncs base':>10} {'syncs patched':>13}  {'ms base':>9} {'ms patched':>10}"
    print(header)
    print("-" * len(header))
    for key in before:
        name, b = key.split("|")
        old, new = before[key], after.get(key, "missing")
        if isinstance(old, list) and isinstance(new, list):
            print(f"{name:<32}{b:>5}  {old[0]:>10} {new[0]:>13}  {old[1]:>9.3f} {new[1]:>10.3f}")
        else:
            print(f"{name:<32}{b:>5}  base: {old}; patched: {new}")
    return 0


def series_names() -> list[str]:
    text = (ROOT / "patches" / "series").read_text()
    return [ln for ln in text.splitlines() if ln.strip() and not ln.startswith("#")]


if __name__ == "__main__":
    sys.exit(main())
