#!/usr/bin/env python3
"""Per-token time of transformers' processors + softmax + torch.multinomial, one thread.

The torch column of docs/performance.md: the same logits as the Rust benchmarks
(`bench_support::heavy_tailed_logits(V, 0)`, re-generated here bit for bit:
splitmix64, Box-Muller in f64, cast to f32), the same settings, transformers'
own processor classes as `generate` builds them (batch of one).

Run with the reference venv (torch 2.15.0, transformers 5.23.0):
    scripts/reference/.venv/bin/python scripts/bench-torch.py [--vocab 151936 ...] [--reps 31] [--json]
"""
import argparse
import json
import math
import statistics
import sys
import time

import torch
from transformers.generation.logits_process import (
    LogitsProcessorList,
    MinPLogitsWarper,
    RepetitionPenaltyLogitsProcessor,
    TemperatureLogitsWarper,
    TopKLogitsWarper,
    TopPLogitsWarper,
)

MASK = (1 << 64) - 1


def heavy_tailed_logits(v, seed):
    """Port of bench_support::heavy_tailed_logits (crates/bench-support/src/lib.rs)."""
    state = seed ^ 0x9E3779B97F4A7C15

    def nxt():
        nonlocal state
        state = (state + 0x9E3779B97F4A7C15) & MASK
        z = state
        z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & MASK
        z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & MASK
        return ((z ^ (z >> 31)) >> 11) / float(1 << 53)

    x = []
    for _ in range(v):
        u1, u2 = max(nxt(), 1e-300), nxt()
        x.append(3.0 * math.sqrt(-2.0 * math.log(u1)) * math.cos(math.tau * u2))
    top = math.log(v) + 5.5
    for j in range(min(64, v)):
        pos = int(nxt() * v) % v
        x[pos] = top - 1.1 * math.log(1.0 + j)
    return torch.tensor(x, dtype=torch.float64).to(torch.float32)


SETTINGS = {
    "t07": lambda: [TemperatureLogitsWarper(0.7)],
    "k40": lambda: [TopKLogitsWarper(40)],
    "p09": lambda: [TopPLogitsWarper(0.9)],
    "k40p09": lambda: [TopKLogitsWarper(40), TopPLogitsWarper(0.9)],
    "minp005": lambda: [MinPLogitsWarper(0.05)],
    "rep13_ctx1k": lambda: [RepetitionPenaltyLogitsProcessor(1.3)],
}


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--vocab", type=int, nargs="*", default=[32000, 49152, 151936, 262144])
    ap.add_argument("--reps", type=int, default=31)
    ap.add_argument("--json", action="store_true", help="one JSON document instead of a table")
    args = ap.parse_args()
    torch.set_num_threads(1)
    torch.manual_seed(0)
    rows = []
    for v in args.vocab:
        logits = heavy_tailed_logits(v, 0)[None, :]
        ctx = torch.tensor([[i * 7919 % v for i in range(1000)]], dtype=torch.long)
        empty = torch.zeros((1, 0), dtype=torch.long)
        for name, make in SETTINGS.items():
            procs = LogitsProcessorList(make())
            ids = ctx if name.startswith("rep") else empty

            def step():
                scores = procs(ids, logits.clone())
                probs = torch.softmax(scores, dim=-1)
                return torch.multinomial(probs, 1)

            for _ in range(3):
                step()
            times = []
            for _ in range(args.reps):
                t = time.perf_counter()
                step()
                times.append((time.perf_counter() - t) * 1e6)
            rows.append({"vocab": v, "setting": name, "torch_us": statistics.median(times)})
            if not args.json:
                print(f"{v:>8}  {name:<12} {rows[-1]['torch_us']:>10.1f} µs", flush=True)
    if args.json:
        json.dump({"torch": torch.__version__, "threads": torch.get_num_threads(), "rows": rows}, sys.stdout)
        print()


if __name__ == "__main__":
    main()
