"""Share of the MoE router's tokens that are THD padding, without and with the router padding mask. Prints
figures; asserts nothing.

    build/venv/bin/python benchmarks/bench_moe_padding.py                      # B = 8, 32; seed 0
    build/venv/bin/python benchmarks/bench_moe_padding.py --batch-sizes 4 16 64 --seed 1

Runs on the patched tree build/<version>/verl (`make apply` first; `--base` or `--tree` for another), with its
preprocess_thd_engine and the router padding mask the Megatron engine passes for THD
(verl.utils.dynamic_cp_scheduler._local_padding_mask), on CPU, with Megatron's parallel sizes replaced by the
values of each row (no process group is needed).

Lengths: one seeded batch per batch size, prompt + response lengths of an RL step: prompt uniform in
[64, 1024), response log-normal with median 512 tokens, clipped to [1, 8192).

For every row (TP, CP, fp8, pad_to_length_bucket) the batch is packed on each CP rank as the Megatron
forward packs it (zigzag CP layout). `routed` is the number of packed rows summed over the CP ranks,
i.e. the tokens the router counts without a mask (sequence parallelism splits them over TP ranks, the
aux loss sums them back); `padding` the rows that hold no token of the batch. `before` is padding /
routed; `unmarked padding` is the share of the rows the mask leaves unmarked (the rows the router still counts
with the mask) that are padding, measured by comparing the mask with the packed buffer. The mask changes the
router's statistics only: every packed row is still dispatched to the experts.
"""

from __future__ import annotations

import argparse
import random
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def generated_lengths(batch_size: int, seed: int) -> list[int]:
    rng = random.Random(seed * 1000 + batch_size)
    lengths = []
    for _ in range(batch_size):
        prompt = rng.randrange(64, 1024)
        response = min(max(int(rng.lognormvariate(6.238, 0.8)), 1), 8191)
        lengths.append(prompt + response)
    return lengths


def measure(lengths, tp, cp, fp8, bucket):
    import torch
    from verl.models.mcore import util
    from verl.utils.dynamic_cp_scheduler import _local_padding_mask

    ones = torch.nested.nested_tensor([torch.ones(n, dtype=torch.long) for n in lengths], layout=torch.jagged)
    routed = padding = counted = counted_padding = 0
    for rank in range(cp):
        util.mpu.get_tensor_model_parallel_world_size = lambda: tp
        util.mpu.get_context_parallel_world_size = lambda: cp
        util.mpu.get_context_parallel_rank = lambda rank=rank: rank
        packed, _, _ = util.preprocess_thd_engine(
            ones, pre_process=True, use_fp8_padding=fp8, pad_to_length_bucket=bucket
        )
        is_padding = packed[0] == 0
        mask = _local_padding_mask(
            lengths, cp_size=cp, cp_rank=rank, tp_size=tp, use_fp8_padding=fp8, pad_to_length_bucket=bucket
        )
        routed += packed.numel()
        padding += int(is_padding.sum())
        counted += int((~mask).sum())
        counted_padding += int((is_padding & ~mask).sum())
    assert routed - padding == sum(lengths)
    return routed, padding, padding / routed, counted_padding / counted


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--base", help="the base whose build tree to measure (default: as the tool picks it)")
    parser.add_argument("--tree", type=Path, help="the patched tree (default: build/<base>/verl)")
    parser.add_argument("--batch-sizes", type=int, nargs="+", default=[8, 32])
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    if args.tree is None:
        from _trees import default_tree

        args.tree = default_tree(args.base)
    tree = args.tree.resolve()
    sys.path.insert(0, str(tree))
    import warnings

    warnings.filterwarnings("ignore")
    import verl

    if Path(verl.__file__).resolve().parents[1] != tree:
        raise SystemExit(f"verl was imported from {verl.__file__}, not from {tree}")

    import logging

    logging.disable(logging.WARNING)
    print(
        "| B | tokens | TP | CP | fp8 | bucket | routed rows | padding rows | before (no mask) "
        "| unmarked padding (mask) |"
    )
    print("| ---: | ---: | ---: | ---: | --- | ---: | ---: | ---: | ---: | ---: |")
    for batch_size in args.batch_sizes:
        lengths = generated_lengths(batch_size, args.seed)
        for tp in (2, 4):
            for cp in (1, 2):
                for fp8 in (False, True):
                    for bucket in (None, 128):
                        routed, padding, before, after = measure(lengths, tp, cp, fp8, bucket)
                        print(
                            f"| {batch_size} | {sum(lengths)} | {tp} | {cp} | {'on' if fp8 else 'off'} | "
                            f"{bucket or '-'} | {routed} | {padding} | {before:.2%} | {after:.2%} |"
                        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
