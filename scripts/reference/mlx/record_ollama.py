#!/usr/bin/env python3
"""Record Ollama's MLX-runner sampler (x/mlxrunner/sample/sample.go) by running
its MLX ops through the real MLX 0.32.4 on CPU.

Ollama's MLX runner is Go over mlx-c; there is no Python package to import.
This script is a line-by-line transliteration of the single-sequence path of
`sample.go` at ollama/ollama fb3076099 (v0.33.0-rc2), each Go call replaced
by the MLX op it wraps (x/mlxrunner/mlx/*.go: `DivScalar` = `mx.divide` by
a float32 scalar, `SoftmaxAxis(.., true)` = `mx.softmax(precise=True)`,
`ArgpartitionAxis`, `ArgsortAxis`, `Cumsum`, `TakeAlongAxis`,
`PutAlongAxis`, `ScatterAddAxis`, `RandomKey` = `mx.random.key`,
`CategoricalWithKey` = `mx.random.categorical(key=...)`). The arithmetic,
sorting and random numbers are MLX's own; the Rust replica
(crates/ollama-sampling/src/mlx/mod.rs) is checked against what MLX computes
here:

  * `Options.normalize`: repeat_penalty <= 0 -> 1; repeat_last_n < 0 -> the
    whole context (num_ctx >= prompt + output); penalties need
    repeat_last_n != 0; seed < 0 -> unseeded;
  * penalties over the last repeat_last_n ids of the context (the runner's
    `Sampler.Add(slot, opts, inputs)` seeds the ring with the prompt);
  * temperature <= 0: argmax; else the sparse path (0 < top_k < V:
    argpartition, softmax over the k scores / T) or the dense path
    (softmax(scores / T)), then top-p, min-p, normalisation;
  * draws: `categorical(log(probs), key=mx.random.key(mixSeed(seed, n)))`
    for n = 0, 1, ... (SplitMix64 of the seed and the slot's counter).

Output: fixtures/mlx/ollama_mlx.jsonl (kept ids in the runner's order, p,
and 40 seeded draws per case).

Usage: scripts/reference/mlx/.venv/bin/python scripts/reference/mlx/record_ollama.py [--check]
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from pathlib import Path

import numpy as np

import mlx.core as mx

sys.path.insert(0, str(Path(__file__).resolve().parent))
import record as mlxrec  # noqa: E402  (fixtures and the write-or-check helper)

REPO = mlxrec.REPO
OUT = REPO / "fixtures" / "mlx" / "ollama_mlx.jsonl"
FORMAT = "sampling-parity-ollama-mlx/1"
OLLAMA_COMMIT = "fb3076099"
SEED = 42
DRAWS = 40
F32 = mx.float32

# api.DefaultOptions (api/types.go at fb3076099); min_p unset = 0.
DEFAULTS = {"temperature": 0.8, "top_k": 40, "top_p": 0.9, "min_p": 0.0, "repeat_last_n": 64,
            "repeat_penalty": 1.0, "presence_penalty": 0.0, "frequency_penalty": 0.0, "seed": -1}
INTS = ("top_k", "repeat_last_n", "seed")

REQUESTS: list[tuple[str, dict]] = [
    ("defaults", {}),
    ("t07_k40_p09", {"temperature": 0.7, "top_k": 40, "top_p": 0.9}),
    ("t07_k0_p09", {"temperature": 0.7, "top_k": 0, "top_p": 0.9}),
    ("t07_k0_minp05", {"temperature": 0.7, "top_k": 0, "top_p": 1.0, "min_p": 0.05}),
    ("t13_k10_p05_minp02", {"temperature": 1.3, "top_k": 10, "top_p": 0.5, "min_p": 0.2}),
    ("t1_k20_rep13_n8", {"temperature": 1.0, "top_k": 20, "repeat_penalty": 1.3, "repeat_last_n": 8}),
    ("t1_k30_pres05_freq04", {"temperature": 1.0, "top_k": 30, "presence_penalty": 0.5,
                              "frequency_penalty": 0.4}),
    ("t09_k50_rep08_all", {"temperature": 0.9, "top_k": 50, "repeat_penalty": 0.8,
                           "repeat_last_n": -1, "frequency_penalty": -0.3}),
    ("t1_k20_rep13_n0", {"temperature": 1.0, "top_k": 20, "repeat_penalty": 1.3, "repeat_last_n": 0}),
    ("rep_negative_is_1", {"temperature": 1.0, "top_k": 20, "repeat_penalty": -2.0,
                           "presence_penalty": 0.25}),
    ("greedy_rep13", {"temperature": 0.0, "repeat_penalty": 1.3}),
    ("t_negative", {"temperature": -1.0}),
    ("k1", {"top_k": 1}),
    ("float_top_k", {"top_k": 7.9, "temperature": 1.0}),
]
SMALL_ONLY: list[tuple[str, dict]] = [
    ("t1_dense", {"temperature": 1.0, "top_k": 0, "top_p": 1.0}),
    ("t07_k_vocab", {"temperature": 0.7, "top_k": 49152, "top_p": 1.0}),
    ("t1_k2", {"temperature": 1.0, "top_k": 2, "top_p": 1.0}),
    ("t1_k3", {"temperature": 1.0, "top_k": 3, "top_p": 1.0}),
    ("t1_k5", {"temperature": 1.0, "top_k": 5, "top_p": 1.0}),
    ("t1_k0_p05", {"temperature": 1.0, "top_k": 0, "top_p": 0.5}),
    ("t1_k0_p075", {"temperature": 1.0, "top_k": 0, "top_p": 0.75}),
    ("t1_k0_p08", {"temperature": 1.0, "top_k": 0, "top_p": 0.8}),
    ("t1_k5_p08", {"temperature": 1.0, "top_k": 5, "top_p": 0.8}),
    ("t1_k0_minp05", {"temperature": 1.0, "top_k": 0, "top_p": 1.0, "min_p": 0.5}),
    ("t05_pen_n3", {"temperature": 0.5, "top_k": 0, "top_p": 1.0, "repeat_penalty": 2.0,
                    "repeat_last_n": 3, "frequency_penalty": 0.5, "presence_penalty": 1.0}),
]


def resolve(request: dict) -> dict:
    """Options.FromMap over DefaultOptions: ints truncated (Go int64(float64)),
    floats to float32."""
    o = dict(DEFAULTS)
    for k, v in request.items():
        o[k] = int(v) if k in INTS else float(np.float32(v))
    return o


def mix_seed(seed: int, counter: int) -> int:
    m = (1 << 64) - 1
    z = (seed + 0x9E3779B97F4A7C15 * (counter + 1)) & m
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & m
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & m
    return z ^ (z >> 31)


def f32(x: float) -> mx.array:
    return mx.array(np.float32(x))


def run(o: dict, logits: np.ndarray, context: list[int]) -> dict:
    # Options.normalize
    rp = o["repeat_penalty"] if o["repeat_penalty"] > 0 else 1.0
    n = o["repeat_last_n"] if o["repeat_last_n"] >= 0 else len(context)
    uses = n != 0 and (rp != 1 or o["presence_penalty"] != 0 or o["frequency_penalty"] != 0)
    seeded = o["seed"] >= 0
    scores = mx.array(logits)[None]
    take = min(len(context), n) if uses else 0
    if take > 0:
        hist = mx.array(context[len(context) - take:], dtype=mx.int32)[None]
        pp, fp = np.float32(o["presence_penalty"]), np.float32(o["frequency_penalty"])
        if rp != 1 or pp != 0:
            adj = mx.take_along_axis(scores, hist, axis=-1)
            if rp != 1:
                rp32 = np.float32(rp)
                factor = mx.where(adj < f32(0), f32(rp32), f32(np.float32(1) / rp32))
                adj = adj * factor
            if pp != 0:
                adj = adj + f32(-pp)
            scores = mx.put_along_axis(scores, hist, adj, axis=-1)
        if fp != 0:
            scores = scores.at[0, hist[0]].add(f32(-fp))
    t = np.float32(o["temperature"])
    if t <= 0:
        g = int(mx.argmax(scores, axis=-1).item())
        return {"greedy": g, "ids": [g], "p": [1.0]}
    vocab = scores.shape[-1]
    k = o["top_k"]
    if 0 < k < vocab:
        ids = mx.argpartition(-scores, kth=k - 1, axis=-1)[:, :k].astype(mx.int32)
        top = mx.take_along_axis(scores, ids, axis=-1).astype(F32)
        probs = mx.softmax(mx.divide(top, f32(t)), axis=-1, precise=True)
    else:
        ids = None
        probs = mx.softmax(mx.divide(scores.astype(F32), f32(t)), axis=-1, precise=True)
    top_p = np.float32(o["top_p"])
    if 0 < top_p < 1:
        order = mx.argsort(-probs, axis=-1)
        s = mx.take_along_axis(probs, order, axis=-1)
        prev = mx.cumsum(s, axis=-1, reverse=False, inclusive=True) - s
        kept = mx.where(prev < f32(top_p), s, f32(0))
        probs = mx.put_along_axis(mx.zeros(probs.shape, dtype=probs.dtype), order, kept, axis=-1)
    min_p = np.float32(o["min_p"])
    if 0 < min_p <= 1:
        thr = probs.max(axis=-1, keepdims=True) * f32(min_p)
        probs = mx.where(probs < thr, f32(0), probs)
    probs = probs / mx.maximum(probs.sum(axis=-1, keepdims=True), f32(1e-20))
    p = np.array(probs[0], dtype=np.float32)
    if np.isnan(p).any():
        # scores / T overflowed to inf: MLX's softmax is NaN and the draw
        # picks whatever its NaN comparisons give. Nothing to compare.
        return {"skipped": "scores / temperature overflow: the softmax is NaN"}
    order_ids = list(range(vocab)) if ids is None else np.array(ids[0]).tolist()
    out = {"order": None if ids is None else order_ids,
           "ids": [int(order_ids[i]) for i in range(len(p)) if p[i] > 0],
           "p": [float(p[i]) for i in range(len(p)) if p[i] > 0]}
    if seeded:
        logp = mx.where(probs <= f32(0), f32(-math.inf), mx.log(mx.maximum(probs, f32(1e-20))))
        tokens = []
        for c in range(DRAWS):
            key = mx.random.key(mix_seed(o["seed"], c))
            choice = int(mx.random.categorical(logp, axis=-1, key=key).item())
            tokens.append(int(order_ids[choice]))
        out["tokens"] = tokens
    return out


def record() -> list[str]:
    lines = [json.dumps({"format": FORMAT, "mlx": mx.__version__, "ollama_commit": OLLAMA_COMMIT,
                         "seed": SEED, "draws": DRAWS}, sort_keys=True)]
    inputs = []
    for path in sorted((REPO / "fixtures" / "smollm2").glob("*.safetensors")):
        logits, ids, plen = mlxrec.load(path)
        inputs.append((f"smollm2/{path.stem}", None, logits, ids, plen, REQUESTS))
    for path in sorted((REPO / "fixtures" / "edge").glob("*.safetensors")):
        logits, ids, plen = mlxrec.load(path)
        inputs.append((f"edge/{path.stem}", None, logits, ids, plen, REQUESTS + SMALL_ONLY))
    for name, logits, ids, plen in mlxrec.synthetic():
        inputs.append((f"synthetic/{name}", logits, logits, ids, plen, REQUESTS + SMALL_ONLY))
    for fixture, inline, logits, context, plen, requests in inputs:
        for name, request in requests:
            request = dict(request)
            request.setdefault("seed", SEED)
            case = {"fixture": fixture, "name": name, "request": request}
            if inline is not None:
                case.update(logits=[x if math.isfinite(x) else "-inf" for x in inline.tolist()],
                            input_ids=context, prompt_len=plen)
            o = resolve(request)
            case["options"] = o
            n = o["repeat_last_n"] if o["repeat_last_n"] >= 0 else len(context)
            window = context[len(context) - min(len(context), n):] if n else []
            rp = o["repeat_penalty"] if o["repeat_penalty"] > 0 else 1.0
            penalised = n != 0 and (rp != 1 or o["presence_penalty"] != 0
                                    or o["frequency_penalty"] != 0)
            if penalised and any(not 0 <= t < len(logits) for t in window):
                case["skipped"] = "a penalised id is outside the vocabulary (MLX does not check)"
            elif not np.isfinite(logits).any():
                case["skipped"] = "every logit is -inf"
            else:
                case.update(run(o, logits, context))
            lines.append(json.dumps(case, sort_keys=True))
        print(f"record_ollama.py: {fixture}: {len(requests)} requests", file=sys.stderr)
    return lines


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--check", action="store_true",
                    help="regenerate in memory and fail with a diff if the fixture differs")
    opts = ap.parse_args()
    if mx.__version__ != mlxrec.MLX_VERSION:
        print(f"record_ollama.py: mlx {mx.__version__} is not the pinned {mlxrec.MLX_VERSION}",
              file=sys.stderr)
        return 2
    mx.set_default_device(mx.cpu)
    text = "\n".join(record()) + "\n"
    return mlxrec.write_or_check(OUT, text, opts.check, "mlx/record_ollama.py",
                                 on_diff="; regenerate with scripts/reference/mlx/.venv/bin/python "
                                         "scripts/reference/mlx/record_ollama.py")


if __name__ == "__main__":
    sys.exit(main())
