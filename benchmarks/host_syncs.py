"""Host syncs and CPU wall time per call of the Megatron THD paths, on several verl trees side by side.

    build/venv/bin/python benchmarks/host_syncs.py [--tree LABEL=PATH ...] [--batches 1 4 16]

Default trees: `base` (a scratch git worktree of build/verl at its upstream/* tag) and `patched`
(build/verl). Each tree runs in its own interpreter with the tree first on sys.path. Counted with the
series' counter (tests/models/_host_sync.py of build/verl: scalar reads, nonzero, boolean indexing,
masked_select, copies to the host, .tolist()), plus the .tolist() calls made inside nested-tensor ops
that the counter does not see, on CPU tensors, single rank (TP=1, CP=1). The NPU path is
selected by setting `is_npu_available` in verl.models.mcore.util, with MindSpeed's two setters
replaced by no-ops. The model is a stand-in that returns a precomputed packed output, so only verl's
code is counted. Rows:

- `vlm thd forward (npu)`: gptmodel_forward_model_engine(vision_model=True), THD, post-processing
  included (preprocess_thd_engine, build_vlm_attn_mask_thd, postprocess_thd_engine);
- `preprocess_thd_engine (npu)` and `build_vlm_attn_mask_thd (npu)` alone.
Wall time is the mean of --repeats calls with one intra-op thread (on a shared 2-core machine the
multi-threaded small kernels of both trees took milliseconds of thread contention). Figures are not
asserted by any test.
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
TREE = ROOT / "build" / "verl"
COUNTER = TREE / "tests" / "models" / "_host_sync.py"


def _worker(batches: list[int], counter_path: str, repeats: int) -> dict:
    import importlib.util
    import time
    import types

    import torch

    torch.set_num_threads(1)
    spec = importlib.util.spec_from_file_location("_host_sync", counter_path)
    host_sync = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(host_sync)

    from verl.models.mcore import model_forward, util

    for name in ("mindspeed", "mindspeed.core", "mindspeed.core.context_parallel"):
        sys.modules[name] = types.ModuleType(name)
    sys.modules["mindspeed.utils"] = types.SimpleNamespace(set_position_ids=lambda pos: None)
    sys.modules["mindspeed.core.context_parallel.get_batch_utils"] = types.SimpleNamespace(
        set_actual_seq_len=lambda seq: None
    )
    util.is_npu_available = True
    util.mpu.get_tensor_model_parallel_world_size = lambda: 1
    util.mpu.get_context_parallel_world_size = lambda: 1
    util.mpu.get_context_parallel_rank = lambda: 0
    util.mpu.get_context_parallel_group = lambda: None

    class Model:
        pre_process = True
        post_process = True
        config = types.SimpleNamespace(fp8=None)
        output = None

        def __call__(self, **kwargs):
            return self.output

    def nested(batch):
        lengths = [64 + (37 * i) % 200 for i in range(batch)]
        return torch.nested.nested_tensor([torch.arange(1, n + 1) for n in lengths], layout=torch.jagged)

    original_tolist = torch.Tensor.tolist
    tolist_calls = []

    def counting_tolist(self):
        tolist_calls.append(1)
        return original_tolist(self)

    def measure(fn):
        # Nested-tensor ops read their offsets with .tolist() below the counter's torch-function level
        # (e.g. input_ids[i] unbinds the batch); those calls are counted by patching Tensor.tolist.
        tolist_calls.clear()
        torch.Tensor.tolist = counting_tolist
        try:
            with host_sync.HostSyncCounter() as counter:
                fn()
        finally:
            torch.Tensor.tolist = original_tolist
        missed = len(tolist_calls) - counter.ops.get("tolist", 0)
        start = time.perf_counter()
        for _ in range(repeats):
            fn()
        return counter.count + missed, (time.perf_counter() - start) / repeats * 1e3

    rows = {}
    for batch in batches:
        nt = nested(batch)
        model = Model()
        packed, _, _ = util.preprocess_thd_engine(nt, pre_process=True)
        model.output = packed.unsqueeze(-1).float()
        cases = {
            "vlm thd forward (npu)": lambda nt=nt, model=model: model_forward.gptmodel_forward_model_engine(
                model, nt, {}, vision_model=True, pad_token_id=0
            ),
            "preprocess_thd_engine (npu)": lambda nt=nt: util.preprocess_thd_engine(nt, pre_process=True),
            "build_vlm_attn_mask_thd (npu)": lambda nt=nt: util.build_vlm_attn_mask_thd(nt, 0),
        }
        for name, fn in cases.items():
            rows.setdefault(name, {})[batch] = measure(fn)
    return rows


def _base_worktree(tmp: Path) -> Path:
    tag = subprocess.run(
        ["git", "-C", str(TREE), "describe", "--tags", "--abbrev=0", "--match", "upstream/*"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    path = tmp / "base"
    cmd = ["git", "-C", str(TREE), "worktree", "add", "--detach", str(path), tag]
    subprocess.run(cmd, capture_output=True, check=True)
    return path


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--tree", action="append", default=[], help="LABEL=PATH of a verl tree (repeatable)")
    parser.add_argument("--batches", nargs="*", type=int, default=[1, 4, 16])
    parser.add_argument("--repeats", type=int, default=20)
    parser.add_argument("--counter", default=str(COUNTER))
    parser.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.worker:
        print(json.dumps(_worker(args.batches, args.counter, args.repeats)))
        return 0

    with tempfile.TemporaryDirectory() as tmp:
        trees = [tuple(t.split("=", 1)) for t in args.tree]
        base = None
        if not trees:
            base = _base_worktree(Path(tmp))
            trees = [("base", str(base)), ("patched", str(TREE))]
        try:
            results = {}
            for label, path in trees:
                cmd = [sys.executable, __file__, "--worker", "--counter", args.counter, "--repeats", str(args.repeats)]
                cmd += ["--batches", *map(str, args.batches)]
                env = {**os.environ, "PYTHONPATH": os.pathsep.join([path, os.environ.get("PYTHONPATH", "")])}
                proc = subprocess.run(cmd, capture_output=True, text=True, env=env, cwd=path)
                if proc.returncode != 0:
                    print(f"{label}: failed\n{proc.stderr[-2000:]}", file=sys.stderr)
                    return 1
                results[label] = json.loads(proc.stdout.strip().splitlines()[-1])
        finally:
            if base is not None:
                subprocess.run(["git", "-C", str(TREE), "worktree", "remove", "--force", str(base)], check=False)

    labels = [label for label, _ in trees]
    header = f"{'path':<32}{'B':>5}" + "".join(f"{label + ' syncs':>16}{label + ' ms':>14}" for label in labels)
    print(header)
    for name in results[labels[0]]:
        for batch in args.batches:
            cells = ""
            for label in labels:
                syncs, ms = results[label][name][str(batch)]
                cells += f"{syncs:>16}{ms:>14.3f}"
            print(f"{name:<32}{batch:>5}{cells}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
