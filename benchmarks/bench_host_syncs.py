"""Host syncs and CPU wall time per call of verl's mask, THD and no-padding builders and of a whole VLM THD
forward, on the base and on the patched tree side by side. Prints figures; asserts nothing.

    build/venv/bin/python benchmarks/bench_host_syncs.py                    # B = 8, 64, 256
    build/venv/bin/python benchmarks/bench_host_syncs.py --batch-sizes 1 4 16 --repeats 20

Trees: the base is `upstream/<version>` of build/<version>/verl, extracted with `git archive` into a temporary
folder (nothing is written to it); the patched tree is build/<version>/verl itself (`make apply` first).
Each tree is measured in its own subprocess of build/venv/bin/python (or VERL_PATCHES_PYTHON) with the
tree first on sys.path; the run fails if verl is imported from anywhere else.

Counting: every figure is the count of the series' counter (tests/utils/host_sync.py of the patched tree:
scalar reads, nonzero, boolean indexing, masked_select, copies to the host, and every Tensor.tolist() and
.numpy() call, including the offsets a nested tensor reads inside nt[i] and nt.unbind()); the `.tolist`
columns say how many of the total are .tolist() calls. On CPU every .tolist() is counted, including lists
that stay on the host in a device run, so the counts are upper bounds for a device run; on an accelerator
each sync waits for the device.

Setting: CPU tensors, a single rank (TP = CP = 1), one intra-op thread; wall time is the median of
--repeats calls after one warm-up call. The `(NPU)` rows set `is_npu_available` in verl.models.mcore.util
to True, with MindSpeed's two setters (set_actual_seq_len, set_position_ids) replaced by no-ops, as on an
Ascend host. Rows:

- build_vlm_attn_mask_thd, preprocess_thd_engine: alone, on both paths;
- vlm thd forward (NPU): gptmodel_forward_model_engine(vision_model=True) in THD, post-processing
  included (preprocess_thd_engine, build_vlm_attn_mask_thd, postprocess_thd_engine), with a stand-in
  model that returns a precomputed packed output, so only verl's code is counted;
- no_padding_2_padding (with max_response_len), response_from_nested, response_to_nested.
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
MINDSPEED_MODULES = (
    "mindspeed",
    "mindspeed.utils",
    "mindspeed.core",
    "mindspeed.core.context_parallel",
    "mindspeed.core.context_parallel.get_batch_utils",
)


def _worker(counter_path: str, batch_sizes: list[int], repeats: int) -> dict:
    """Runs inside a tree's subprocess: {"<row>|<B>": [syncs, .tolist calls, ms] or "error"}."""
    import importlib.util
    import statistics
    import time
    import types
    import warnings

    warnings.filterwarnings("ignore")
    import torch

    torch.set_num_threads(1)
    spec = importlib.util.spec_from_file_location("host_sync", counter_path)
    host_sync = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(host_sync)

    # Stand-in MindSpeed setters: the NPU branch of the THD packer imports and calls them.
    for name in MINDSPEED_MODULES:
        sys.modules[name] = types.ModuleType(name)
    sys.modules["mindspeed.utils"].set_position_ids = lambda value: None
    sys.modules["mindspeed.core.context_parallel.get_batch_utils"].set_actual_seq_len = lambda value: None

    import verl
    from verl.models.mcore import model_forward, util
    from verl.utils import tensordict_utils as tu
    from verl.workers.utils import padding

    util.mpu.get_tensor_model_parallel_world_size = lambda: 1
    util.mpu.get_context_parallel_world_size = lambda: 1
    util.mpu.get_context_parallel_rank = lambda: 0
    util.mpu.get_context_parallel_group = lambda: None

    def measure(call):
        call()  # warm-up
        with host_sync.HostSyncCounter() as counter:
            call()
        times = []
        for _ in range(repeats):
            start = time.perf_counter()
            call()
            times.append(time.perf_counter() - start)
        return [counter.count, counter.ops.get("tolist", 0), statistics.median(times) * 1e3]

    def on_npu(call):
        def run():
            saved = util.is_npu_available
            util.is_npu_available = True
            try:
                return call()
            finally:
                util.is_npu_available = saved

        return run

    def lengths(batch, low, high, seed):
        gen = torch.Generator().manual_seed(seed)
        return torch.randint(low, high, (batch,), generator=gen).tolist()

    def nested(rows):
        return torch.nested.as_nested_tensor(rows, layout=torch.jagged)

    class StandInModel:
        pre_process = True
        post_process = True
        config = types.SimpleNamespace(fp8=None)
        output = None

        def __call__(self, **kwargs):
            return self.output

    def cases(batch):
        ids = nested([torch.randint(1, 1000, (n,)) for n in lengths(batch, 16, 512, batch)])
        prompt = lengths(batch, 8, 256, batch + 1)
        response = lengths(batch, 1, 256, batch + 2)
        log_probs = nested([torch.randn(p + r) for p, r in zip(prompt, response, strict=True)])
        data = tu.get_tensordict(
            {
                "prompts": nested([torch.ones(p, dtype=torch.long) for p in prompt]),
                "responses": nested([torch.ones(r, dtype=torch.long) for r in response]),
            },
            non_tensor_dict={"max_response_len": max(response)},
        )
        response_mask = nested([torch.ones(r, dtype=torch.long) for r in response])
        padded_response = torch.randn(batch, max(response))
        model = StandInModel()
        packed = on_npu(lambda: util.preprocess_thd_engine(ids, pre_process=True))()[0]
        model.output = packed.unsqueeze(-1).float()

        yield "build_vlm_attn_mask_thd", lambda: util.build_vlm_attn_mask_thd(ids, 0)
        yield "build_vlm_attn_mask_thd (NPU)", on_npu(lambda: util.build_vlm_attn_mask_thd(ids, 0))
        yield "preprocess_thd_engine", lambda: util.preprocess_thd_engine(ids, pre_process=True)
        yield "preprocess_thd_engine (NPU)", on_npu(lambda: util.preprocess_thd_engine(ids, pre_process=True))
        yield (
            "vlm thd forward (NPU)",
            on_npu(
                lambda: model_forward.gptmodel_forward_model_engine(model, ids, {}, vision_model=True, pad_token_id=0)
            ),
        )
        yield "no_padding_2_padding", lambda: padding.no_padding_2_padding(log_probs, data)
        yield "response_from_nested", lambda: padding.response_from_nested(log_probs, response_mask)
        yield "response_to_nested", lambda: padding.response_to_nested(padded_response, response_mask)

    results = {"__verl__": verl.__file__}
    for batch in batch_sizes:
        for name, call in cases(batch):
            try:
                results[f"{name}|{batch}"] = measure(call)
            except Exception as e:  # a builder missing or failing in one tree is reported, not fatal
                results[f"{name}|{batch}"] = repr(e)[:80]
    return results


def run_tree(python: str, tree: Path, counter: Path, batch_sizes: list[int], repeats: int) -> dict:
    cmd = [python, str(Path(__file__).resolve()), "--worker", str(counter), "--repeats", str(repeats)]
    cmd += ["--batch-sizes", *map(str, batch_sizes)]
    env = {**os.environ, "PYTHONPATH": str(tree), "PYTHONDONTWRITEBYTECODE": "1"}
    proc = subprocess.run(cmd, cwd=tree, env=env, capture_output=True, text=True)
    if proc.returncode != 0:
        raise SystemExit(f"measuring {tree} failed:\n{proc.stderr[-3000:]}")
    results = json.loads(proc.stdout.strip().splitlines()[-1])
    imported = Path(results.pop("__verl__")).resolve()
    if tree.resolve() not in imported.parents:
        raise SystemExit(f"measuring {tree} imported verl from {imported}")
    return results


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--batch-sizes", type=int, nargs="+", default=[8, 64, 256])
    parser.add_argument("--repeats", type=int, default=10, help="timed calls per row (default 10)")
    parser.add_argument("--base", help="the base whose build tree to measure (default: as the tool picks it)")
    parser.add_argument("--worker", metavar="COUNTER", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.worker:
        print(json.dumps(_worker(args.worker, args.batch_sizes, args.repeats)))
        return 0

    from _trees import build_dir, default_tree

    patched = default_tree(args.base)
    python = os.environ.get("VERL_PATCHES_PYTHON", str(build_dir() / "venv" / "bin" / "python"))
    counter = patched / "tests" / "utils" / "host_sync.py"
    if not counter.is_file() or not Path(python).exists():
        raise SystemExit(f"needs {counter} and {python}: run `make apply` and `verl-patches test` first")
    tag = subprocess.run(
        ["git", "describe", "--tags", "--match", "upstream/*", "--abbrev=0", "HEAD"],
        cwd=patched,
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()

    shown = patched.relative_to(ROOT) if patched.is_relative_to(ROOT) else patched
    patches = subprocess.run(
        ["git", "rev-list", "--count", f"{tag}..HEAD"], cwd=patched, capture_output=True, text=True, check=True
    ).stdout.strip()

    with tempfile.TemporaryDirectory(prefix="verl-bench-base-") as tmp:
        base = Path(tmp) / "verl"
        base.mkdir()
        archive = subprocess.run(["git", "archive", tag, "verl"], cwd=patched, capture_output=True, check=True)
        subprocess.run(["tar", "-x", "-C", str(base)], input=archive.stdout, check=True)
        before = run_tree(python, base, counter, args.batch_sizes, args.repeats)
    after = run_tree(python, patched, counter, args.batch_sizes, args.repeats)

    print(
        f"base: {tag}; series: {shown} ({patches} patches); CPU, TP = CP = 1, one thread, "
        f"median of {args.repeats} calls; syncs include every .tolist() call"
    )
    header = (
        f"{'row':<30}{'B':>5}  {'syncs base':>10} {'syncs series':>12}  "
        f"{'.tolist base/series':>26}  {'ms base':>9} {'ms series':>9}"
    )
    print(header)
    print("-" * len(header))
    for key, old in before.items():
        name, batch = key.split("|")
        new = after.get(key, "missing")
        if isinstance(old, list) and isinstance(new, list):
            nested = f"{old[1]}/{new[1]}"
            print(f"{name:<30}{batch:>5}  {old[0]:>10} {new[0]:>12}  {nested:>26}  {old[2]:>9.3f} {new[2]:>9.3f}")
        else:
            print(f"{name:<30}{batch:>5}  base: {old}; series: {new}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
