#!/usr/bin/env python3
"""Record what SGLang's own torch sampler does on the bundled fixture logits.

For every fixture in fixtures/smollm2 and fixtures/edge and every case below,
this builds one request the way SGLang's scheduler does and runs SGLang's real
code on CPU (`--sampling-backend pytorch`, the backend SGLang uses on CPU, in
deterministic inference, and wherever FlashInfer is missing):

  SamplingParams(**params)                      sglang/srt/sampling/sampling_params.py
    .normalize(None); .verify(vocab)            (refusals recorded with their text)
  SamplingBatchInfo.from_schedule_batch(...)    sglang/srt/sampling/sampling_batch_info.py
  penalizer_orchestrator.cumulate_output_tokens once per generated token, as
    ScheduleBatch.prepare_for_decode does      sglang/srt/sampling/penaltylib/*
  copy_for_forward(); apply_logits_bias(logits) (what ModelRunner._preprocess_logits runs)
  Sampler().forward(...)                        sglang/srt/layers/sampler.py

and records what the final draw receives: the weights torch.multinomial (or,
for the unfiltered case, the Gumbel/exponential race of
`sampling_from_probs_torch`) draws from, with the token id of each weight (the
`probs_idx` the sampler gathers through), or the argmax of a greedy request.

Seeded draws. A request's `sampling_seed` is only read under
`--enable-deterministic-inference`; its draw is `multinomial_with_seed`: a
murmur3 hash of (seed, position, column) from a Triton kernel, Gumbel noise in
float64, argmax. Triton kernels cannot run on this CPU, so for those cases the
hash is computed by the kernel's own source run by Triton's CPU interpreter
(TRITON_INTERPRET=1) AND by a hand-written Python version of the same formula;
both must agree on every hash, and every recorded draw is the argmax both give.
These are NOT outputs of the real GPU kernel. torch.compile is disabled
(TORCH_COMPILE_DISABLE=1): `multinomial_with_seed` and
`apply_scaling_penalties` run eagerly.

It also records (fixtures/sglang/server.json) the SamplingParams SGLang
refuses with their error text, what the OpenAI chat and completions routes
make of request bodies (with and without a model generation_config.json merged
by `--sampling-defaults model`), and murmur3 hash test vectors.

Usage (from the repository root, after scripts/reference/sglang/setup.sh):
    scripts/reference/sglang/.venv/bin/python scripts/reference/sglang/record.py          # write
    scripts/reference/sglang/.venv/bin/python scripts/reference/sglang/record.py --check  # regenerate in memory, diff, exit 1 on any difference
"""

import os

# Before torch / triton are imported: both read these at import time.
os.environ["TRITON_INTERPRET"] = "1"
os.environ["TORCH_COMPILE_DISABLE"] = "1"
os.environ.setdefault("SGLANG_LOGGING_LEVEL", "ERROR")

import argparse  # noqa: E402
import json  # noqa: E402
import logging  # noqa: E402
import math  # noqa: E402
import sys  # noqa: E402
import tempfile  # noqa: E402
import types  # noqa: E402
import warnings  # noqa: E402
from pathlib import Path  # noqa: E402

warnings.filterwarnings("ignore")
logging.disable(logging.WARNING)

import numpy as np  # noqa: E402
import torch  # noqa: E402
import triton  # noqa: E402
from safetensors.numpy import load_file, save  # noqa: E402

import sglang  # noqa: E402
from sglang.srt.runtime_context import get_context, get_parallel  # noqa: E402

REPO = Path(__file__).resolve().parents[3]
OUT = REPO / "fixtures" / "sglang"
# The shared --check (standard library only: it leaves torch's kernel
# choice alone, unlike fixturelib).
sys.path.insert(0, str(REPO / "scripts" / "reference"))
import textcheck  # noqa: E402
FORMAT = "sampling-parity-sglang/1"
SPARSE_MAX = 2048  # store every kept weight up to this many, else the TOP largest
TOP = 256
DRAW_SEEDS = [0, 1234, -7, 2**63 - 1]
DRAW_STEPS = 2  # positions p, p+1, ... for each seed (same logits)

MODEL_CASES = [
    ("t1", {}),
    ("t07", {"temperature": 0.7}),
    ("greedy", {"temperature": 0.0}),
    ("t1e7", {"temperature": 1e-7}),
    ("k1_t07", {"temperature": 0.7, "top_k": 1}),
    ("k40", {"temperature": 0.7, "top_k": 40}),
    ("k50", {"top_k": 50}),
    ("k1000", {"top_k": 1000}),
    ("p09", {"temperature": 0.7, "top_p": 0.9}),
    ("k40p09", {"temperature": 0.7, "top_k": 40, "top_p": 0.9}),
    ("k40p05", {"top_k": 40, "top_p": 0.5}),
    ("minp05", {"temperature": 0.7, "min_p": 0.05}),
    ("minp02k40p08", {"min_p": 0.02, "top_k": 40, "top_p": 0.8}),
    ("minp1", {"min_p": 1.0}),
    ("rep13_greedy", {"temperature": 0.0, "repetition_penalty": 1.3}),
    ("rep13_k40", {"temperature": 0.7, "top_k": 40, "repetition_penalty": 1.3}),
    ("freq05_pres03", {"temperature": 0.7, "frequency_penalty": 0.5, "presence_penalty": 0.3}),
    ("freq15", {"frequency_penalty": 1.5}),
    ("pres_neg1", {"presence_penalty": -1.0, "top_k": 20}),
    ("rep2_t07", {"temperature": 0.7, "repetition_penalty": 2.0}),
    ("rep07_freqneg_k100", {"repetition_penalty": 0.7, "frequency_penalty": -0.4, "top_k": 100}),
    ("bias", {"temperature": 0.9, "logit_bias": "top"}),
    ("combo", {"temperature": 0.8, "top_k": 60, "top_p": 0.85, "min_p": 0.02,
               "repetition_penalty": 1.2, "frequency_penalty": 0.3, "presence_penalty": 0.2,
               "logit_bias": "top"}),
    # Without --enable-deterministic-inference the seed is never read.
    ("seed_no_flag", {"sampling_seed": 42}),
    ("seed_no_flag_k40p09", {"temperature": 0.7, "top_k": 40, "top_p": 0.9, "sampling_seed": 42}),
    # --enable-deterministic-inference: the request's sampling_seed is read.
    ("det_t1", {"sampling_seed": 42}, True),
    ("det_noseed", {}, True),
    ("det_k40p09", {"temperature": 0.7, "top_k": 40, "top_p": 0.9, "sampling_seed": 7}, True),
    ("det_p09_rep", {"top_p": 0.9, "repetition_penalty": 1.2, "sampling_seed": 7}, True),
    ("det_minp", {"min_p": 0.05, "sampling_seed": 7}, True),
    ("det_greedy", {"temperature": 0.0, "sampling_seed": 7}, True),
]

EDGE_CASES = [
    ("t1", {}),
    ("greedy", {"temperature": 0.0}),
    ("t07", {"temperature": 0.7}),
    ("k1_t07", {"temperature": 0.7, "top_k": 1}),
    ("k2", {"top_k": 2}),
    ("k5", {"top_k": 5}),
    ("k40", {"top_k": 40}),
    ("p05", {"top_p": 0.5}),
    ("p08", {"top_p": 0.8}),
    ("p09", {"top_p": 0.9}),
    ("k2p09", {"top_k": 2, "top_p": 0.9}),
    ("k100p05", {"top_k": 100, "top_p": 0.5}),
    ("minp01", {"min_p": 0.1}),
    ("minp05", {"min_p": 0.5}),
    ("minp05p05", {"min_p": 0.5, "top_p": 0.5}),
    ("rep13", {"repetition_penalty": 1.3}),
    ("rep07_greedy", {"temperature": 0.0, "repetition_penalty": 0.7}),
    ("freq1_pres1", {"frequency_penalty": 1.0, "presence_penalty": 1.0}),
    ("det_t1", {"sampling_seed": 3}, True),
    ("det_k2p09", {"top_k": 2, "top_p": 0.9, "sampling_seed": 3}, True),
]

# Synthetic logits made here (stored with the recording): tie-heavy rows whose
# top-k cut falls inside a tie, on both torch.topk branches (partial_sort when
# 64·k <= V, nth_element otherwise), a Gaussian row and one with -inf blocks.
SYNTH_CASES = [
    ("t1", {}),
    ("greedy", {"temperature": 0.0}),
    ("k2", {"top_k": 2}),
    ("k10", {"top_k": 10}),
    ("k46", {"top_k": 46}),
    ("k47", {"top_k": 47}),
    ("k500", {"top_k": 500}),
    ("kv", {"top_k": "V"}),
    ("p03", {"top_p": 0.3}),
    ("k10p03", {"top_k": 10, "top_p": 0.3}),
    ("k47p05_minp", {"top_k": 47, "top_p": 0.5, "min_p": 0.5}),
    ("t05_k46", {"temperature": 0.5, "top_k": 46}),
    ("pen_k10", {"top_k": 10, "repetition_penalty": 1.5, "frequency_penalty": 0.7,
                 "presence_penalty": -0.3}),
    ("det_k10", {"top_k": 10, "sampling_seed": 11}, True),
    ("det_k47p05", {"top_k": 47, "top_p": 0.5, "sampling_seed": 11}, True),
]


def synthetic() -> list[tuple[str, np.ndarray, list[int], int]]:
    """(name, logits, input_ids, prompt_len), from a fixed generator."""
    rng = np.random.default_rng(20261201)
    out = []
    for v, levels in ((3000, 4), (3000, 12), (200, 3)):
        logits = rng.integers(0, levels, v).astype(np.float32) / 2
        out.append((f"ties_v{v}_l{levels}", logits))
    g = rng.normal(0.0, 2.0, 5000).astype(np.float32)
    out.append(("gauss_v5000", g))
    b = rng.integers(0, 5, 400).astype(np.float32)
    b[rng.random(400) < 0.6] = -np.inf
    out.append(("neg_inf_blocks_v400", b))
    rows = []
    for name, logits in out:
        ids = [int(i) for i in rng.integers(0, len(logits), 14)]
        ids[-3:] = [ids[-1]] * 3  # a repeated generated id
        rows.append((name, logits, ids, 8))
    return rows


# SamplingParams that SamplingParams.__post_init__/verify refuse (or accept:
# error None), checked against a 49152-token vocabulary.
REJECTED = [
    {"temperature": -0.5},
    {"temperature": float("inf")},
    {"temperature": 3.0},
    {"top_p": 0.0},
    {"top_p": 1.5},
    {"top_k": 0},
    {"top_k": -2},
    {"temperature": 0.0, "top_k": 0},
    {"min_p": 1.5},
    {"min_p": -0.1},
    {"presence_penalty": 2.5},
    {"frequency_penalty": -3.0},
    {"repetition_penalty": 0.0},
    {"repetition_penalty": 2.5},
    {"repetition_penalty": 2.0},
    {"logit_bias": {"49152": 1.0}},
    {"logit_bias": {"-1": 1.0}},
    {"sampling_seed": 2**63},
    {"sampling_seed": -(2**63)},
    {"sampling_seed": 1.5},
]

# OpenAI request bodies through ChatCompletionRequest / CompletionRequest.
GEN_CONFIGS = {
    "none": None,
    "qwen_like": {"temperature": 0.7, "top_p": 0.8, "top_k": 20, "repetition_penalty": 1.05,
                  "do_sample": True, "bos_token_id": 1},
    "minp": {"min_p": 0.1, "temperature": 0.6, "do_sample": False},
    # A model whose generation_config.json says top_k 0 (transformers' "off"):
    # SGLang's verify refuses it for every chat request that omits top_k.
    "topk0": {"top_k": 0, "temperature": 0.8},
}
REQUESTS = [
    {},
    {"temperature": 0.2},
    {"temperature": 0},
    {"temperature": 0, "top_k": 0},
    {"top_k": 0},
    {"top_k": -1},
    {"top_k": 5, "top_p": 0.5, "min_p": 0.05},
    {"top_p": 0},
    {"top_p": 1.0, "temperature": 1.0},
    {"presence_penalty": 2.5},
    {"frequency_penalty": 0.5, "presence_penalty": -0.5, "repetition_penalty": 1.1},
    {"repetition_penalty": 2.5},
    {"seed": 7},
    {"logit_bias": {"5": 10, "07": -100}},
    {"logit_bias": {"60000": 1}},
    {"temperature": None, "top_p": None},
    {"top_k": 2.5},
]


def fnv1a64(data: bytes) -> str:
    h = 0xCBF29CE484222325
    for b in data:
        h ^= b
        h = (h * 0x100000001B3) & 0xFFFFFFFFFFFFFFFF
    return f"{h:016x}"


# ---------------------------------------------------------------------------
# murmur3, by hand (pure Python ints), from the kernel's formula
# (sglang/kernels/ops/sampling/murmur_hash.py), and the kernel itself under
# Triton's CPU interpreter.
# ---------------------------------------------------------------------------

M32 = 0xFFFFFFFF


def _rotl(x: int, r: int) -> int:
    return ((x << r) | (x >> (32 - r))) & M32


def _mix(h: int, k: int) -> int:
    k = (k * 0xCC9E2D51) & M32
    k = _rotl(k, 15)
    k = (k * 0x1B873593) & M32
    h ^= k
    h = _rotl(h, 13)
    return (h * 5 + 0xE6546B64) & M32


def _fmix(h: int) -> int:
    h ^= h >> 16
    h = (h * 0x85EBCA6B) & M32
    h ^= h >> 13
    h = (h * 0xC2B2AE35) & M32
    h ^= h >> 16
    return h


def hand_hash(seed: int, position: int, col: int) -> int:
    s = seed & 0xFFFFFFFFFFFFFFFF  # seed.to(torch.uint64)
    h = _mix(0, s & M32)
    h = _mix(h, s >> 32)
    h = _mix(h, position & M32)
    h = _mix(h, col & M32)
    h ^= 16
    return _fmix(h)


def hand_hashes(seed: int, position: int, m: int) -> np.ndarray:
    """hand_hash for columns 0..m, vectorised with numpy uint64 (same formula)."""
    M = np.uint64(M32)
    s = seed & 0xFFFFFFFFFFFFFFFF

    def mix(h, k):
        k = (k * np.uint64(0xCC9E2D51)) & M
        k = ((k << np.uint64(15)) | (k >> np.uint64(17))) & M
        k = (k * np.uint64(0x1B873593)) & M
        h = h ^ k
        h = ((h << np.uint64(13)) | (h >> np.uint64(19))) & M
        return (h * np.uint64(5) + np.uint64(0xE6546B64)) & M

    h = mix(np.uint64(0), np.uint64(s & M32))
    h = mix(h, np.uint64(s >> 32))
    h = mix(h, np.uint64(position & M32))
    h = mix(np.full(m, h, dtype=np.uint64), np.arange(m, dtype=np.uint64))
    h ^= np.uint64(16)
    h ^= h >> np.uint64(16)
    h = (h * np.uint64(0x85EBCA6B)) & M
    h ^= h >> np.uint64(13)
    h = (h * np.uint64(0xC2B2AE35)) & M
    h ^= h >> np.uint64(16)
    return h


def interpreted_hash(seed: torch.Tensor, positions: torch.Tensor, col_indices: torch.Tensor) -> torch.Tensor:
    """murmur_hash32's GPU branch, with the real Triton kernel run by Triton's CPU interpreter."""
    from sglang.kernels.ops.sampling.murmur_hash import murmur_hash32_kernel

    n, m = seed.shape[0], col_indices.shape[0]
    out = torch.empty((n, m), dtype=torch.uint32)
    murmur_hash32_kernel[(n, triton.cdiv(m, 1024))](seed, positions, col_indices, out, n, m, BLOCK_SIZE=1024)
    return out


# ---------------------------------------------------------------------------
# SGLang's sampler, with its final draw intercepted
# ---------------------------------------------------------------------------

class Batch:
    """The two ScheduleBatch attributes the sampling code reads (weakly referenced)."""

    def __init__(self, reqs: list) -> None:
        self.reqs = reqs
        self.device = "cpu"


class Run:
    def __init__(self) -> None:
        import sglang.srt.layers.sampler as sampler_mod

        self.mod = sampler_mod
        self.overrides = {}
        get_parallel().override_permanently(tp_group=types.SimpleNamespace(device_group=None))
        self.captured: dict = {}
        self.hash_checks = 0
        orig_simple = sampler_mod.sampling_from_probs_torch
        orig_seeded = sampler_mod.multinomial_with_seed

        def simple(probs, sampling_seed=None, positions=None):
            self.captured["path"] = "simple"
            self.captured["weights"] = probs[0].clone()
            return orig_simple(probs, sampling_seed=sampling_seed, positions=positions)

        def seeded(logprobs, seed, positions):
            self.captured["seeded_logprobs"] = logprobs[0].clone()
            self.captured["seed"] = int(seed[0])
            self.captured["position"] = int(positions[0])
            out = orig_seeded(logprobs, seed, positions)
            self.captured.setdefault("seeded_index", int(out[0, 0]))
            return out

        def hashed(seed, positions, col_indices):
            real = interpreted_hash(seed, positions, col_indices)
            s = int(self.captured["seed"])
            hand = hand_hashes(s, int(positions[0]), col_indices.shape[0])
            if not np.array_equal(real[0].numpy().astype(np.uint64), hand):
                raise SystemExit("record.py: Triton-interpreted murmur hash differs from the hand formula")
            self.hash_checks += 1
            return real

        sampler_mod.sampling_from_probs_torch = simple
        sampler_mod.multinomial_with_seed = seeded
        sampler_mod.murmur_hash32 = hashed
        self.orig_multinomial = torch.multinomial
        self.orig_gather = torch.gather

    def context(self, deterministic: bool):
        key = bool(deterministic)
        ov = get_context().override_server_args(
            sampling_backend="pytorch", device="cpu", enable_deterministic_inference=key
        )
        return ov

    def step(self, params_kw: dict, prompt: list, output: list, logits: np.ndarray, deterministic: bool,
             position: int | None = None):
        from sglang.srt.layers.logits_processor import LogitsProcessorOutput
        from sglang.srt.sampling.sampling_batch_info import SamplingBatchInfo
        from sglang.srt.sampling.sampling_params import SamplingParams

        vocab = len(logits)
        ov = self.context(deterministic)
        ov.install()
        try:
            sp = SamplingParams(**params_kw)
            sp.normalize(None)
            sp.verify(vocab)
            req = types.SimpleNamespace(
                sampling_params=sp, return_sampling_mask=False, sampling_logprobs_mode=None,
                custom_logit_processor=None,
            )
            batch = Batch([req])
            info = SamplingBatchInfo.from_schedule_batch(batch, vocab)
            # ScheduleBatch.prepare_for_decode: one call per decode step, each
            # with the last output token.
            for t in output:
                if info.penalizer_orchestrator.is_required:
                    info.penalizer_orchestrator.cumulate_output_tokens(torch.tensor([t], dtype=torch.int64))
            fwd = info.copy_for_forward()
            x = torch.from_numpy(logits.astype(np.float32).copy()).unsqueeze(0)
            fwd.apply_logits_bias(x)
            penalised = x[0].clone()
            self.captured = {}

            def multinomial(w, num_samples, *a, **k):
                self.captured["path"] = "filtered"
                self.captured["weights"] = w[0].clone()
                return self.orig_multinomial(w, num_samples, *a, **k)

            def gather(inp, dim, index, *a, **k):
                if inp.dtype == torch.int32 and "probs_idx" not in self.captured:
                    self.captured["probs_idx"] = inp[0].clone()
                return self.orig_gather(inp, dim, index, *a, **k)

            torch.multinomial = multinomial
            torch.gather = gather
            try:
                sampler = self.mod.Sampler()
                out = LogitsProcessorOutput(next_token_logits=x)
                pos = len(prompt) + len(output) - 1 if position is None else position
                token = sampler(out, fwd, False, [0], [None], torch.tensor([pos], dtype=torch.int64))
            finally:
                torch.multinomial = self.orig_multinomial
                torch.gather = self.orig_gather
            cap = dict(self.captured)
            cap["token"] = int(token[0])
            cap["greedy"] = bool(fwd.is_all_greedy)
            cap["penalised"] = penalised.numpy()
            cap["post_init"] = {"temperature": sp.temperature, "top_k": sp.top_k, "top_p": sp.top_p}
            return cap
        finally:
            ov.restore()


def top_ids(logits: np.ndarray, n: int) -> list[int]:
    order = sorted(range(len(logits)), key=lambda i: (-float(logits[i]), i))
    return [i for i in order if np.isfinite(logits[i])][:n]


def resolve(kwargs: dict, logits: np.ndarray) -> dict:
    kw = dict(kwargs)
    if kw.get("logit_bias") == "top":
        ids = top_ids(logits, 20)
        bias = {}
        if len(ids) > 12:
            bias = {str(ids[10]): 2.5, str(ids[11]): 1.25, str(ids[12]): 0.5, str(ids[0]): -1.75}
        elif ids:
            bias = {str(ids[-1]): 1.5, str(ids[0]): -0.5}
        kw["logit_bias"] = bias
    return kw


def vocab_weights(cap: dict, vocab: int) -> np.ndarray:
    """The draw's weights by token id (0 for tokens it cannot draw)."""
    w = cap["weights"].numpy().astype(np.float32)
    if cap["path"] == "simple":
        return w.copy()
    full = np.zeros(vocab, dtype=np.float32)
    idx = cap["probs_idx"].numpy().astype(np.int64)
    full[idx] = w
    return full


def gumbel_argmax_by_hand(logprobs64: np.ndarray, seed: int, position: int) -> int:
    h = hand_hashes(seed, position, len(logprobs64)).astype(np.float64)
    x = h / float(M32)
    x = np.log(x)
    x = np.clip(x, -np.finfo(np.float64).max, -(2.0 ** -32))
    x = -np.log(-x)
    x = x + logprobs64
    return int(np.argmax(x))


def record_case(run: Run, logits, prompt, output, name, kwargs, deterministic, tensors, cases):
    vocab = len(logits)
    entry = {"name": name, "params": kwargs}
    if deterministic:
        entry["deterministic"] = True
    try:
        cap = run.step(kwargs, prompt, output, logits, deterministic)
    except (ValueError, RuntimeError, AssertionError) as e:  # SGLang refused or failed
        entry["error"] = f"{type(e).__name__}: {e}"
        cases.append(entry)
        return
    pen = cap["penalised"].astype(np.float32)
    entry["penalised_fnv1a64"] = fnv1a64(pen.tobytes())
    if cap["greedy"]:
        entry["greedy_token"] = cap["token"]
        cases.append(entry)
        return
    if deterministic and "probs_idx" in cap:
        # probs_sort.to(float64).log_(): exp in f64 reads each f32 weight back exactly.
        entry["path"] = "seeded_sorted"
        lp = cap["seeded_logprobs"].numpy().astype(np.float64)
        w = np.zeros(vocab, dtype=np.float32)
        w[cap["probs_idx"].numpy().astype(np.int64)] = np.exp(lp).astype(np.float32)
    elif deterministic:
        entry["path"] = "seeded_simple"
        w = cap["weights"].numpy().astype(np.float32).copy()
    elif cap["path"] == "filtered":
        entry["path"] = "topk" if len(cap["weights"]) < vocab else "sorted"
        w = vocab_weights(cap, vocab)
    else:
        entry["path"] = "simple"
        w = vocab_weights(cap, vocab)
    kept = np.flatnonzero(w > 0)
    entry["kept"] = int(len(kept))
    entry["seed_used"] = "seeded_logprobs" in cap
    if np.isnan(w).any():
        # softmax of an all -inf row: NaN weights. The unfiltered draw
        # ((probs / q).argmax()) and multinomial_with_seed then return a token
        # regardless; record the one this step got.
        entry["nan_weights"] = True
        entry["token"] = cap["token"]
    entry["weights_fnv1a64"] = fnv1a64(w.tobytes())
    if len(kept) <= SPARSE_MAX:
        stored = kept
    else:
        stored = np.array(sorted(kept.tolist(), key=lambda i: (-float(w[i]), i))[:TOP], dtype=np.int64)
    tensors[f"{name}.ids"] = stored.astype(np.int64)
    tensors[f"{name}.weights"] = w[stored]
    tensors[f"{name}.probs"] = (w.astype(np.float64) / w.astype(np.float64).sum())[stored]
    if "probs_idx" in cap:
        order = cap["probs_idx"].numpy().astype(np.int64)
        entry["order_prefix"] = order[: min(64, len(order))].tolist()
    if deterministic:
        # The recorded step's own draw, then DRAW_STEPS positions per seed.
        pos0 = len(prompt) + len(output) - 1
        draws = []
        for seed in DRAW_SEEDS:
            for j in range(DRAW_STEPS):
                kw = dict(kwargs, sampling_seed=seed)
                c = run.step(kw, prompt, output, logits, True, position=pos0 + j)
                lp64 = c["seeded_logprobs"].numpy().astype(np.float64)
                hand_index = gumbel_argmax_by_hand(lp64, seed, pos0 + j)
                if hand_index != c["seeded_index"]:
                    raise SystemExit(f"record.py: {name}: hand Gumbel argmax {hand_index} != sampler's {c['seeded_index']}")
                draws.append([seed, pos0 + j, c["seeded_index"], c["token"]])
        entry["draws"] = draws
        entry["step_token"] = cap["token"]
        entry["step_seed"] = cap["seed"]
        entry["step_position"] = cap["position"]
    cases.append(entry)


# ---------------------------------------------------------------------------
# Requests and refusals (server.json)
# ---------------------------------------------------------------------------

def jsonable(v):
    if isinstance(v, float) and not math.isfinite(v):
        return str(v)
    if isinstance(v, dict):
        return {str(a): jsonable(b) for a, b in v.items()}
    if isinstance(v, (list, tuple)):
        return [jsonable(x) for x in v]
    return v


def sampling_fields(sp) -> dict:
    return {
        "temperature": sp.temperature, "top_p": sp.top_p, "top_k": sp.top_k, "min_p": sp.min_p,
        "frequency_penalty": sp.frequency_penalty, "presence_penalty": sp.presence_penalty,
        "repetition_penalty": sp.repetition_penalty, "logit_bias": sp.logit_bias,
        "sampling_seed": sp.sampling_seed,
    }


def rejected_errors() -> list[dict]:
    from sglang.srt.sampling.sampling_params import SamplingParams

    out = []
    for kw in REJECTED:
        try:
            sp = SamplingParams(**kw)
            sp.verify(49152)
            out.append({"params": jsonable(kw), "error": None, "post_init": jsonable(sampling_fields(sp))})
        except Exception as e:
            out.append({"params": jsonable(kw), "error": str(e)})
    return out


def generation_defaults(gc: dict | None) -> dict:
    """ModelConfig.get_default_sampling_params with --sampling-defaults model,
    on a GenerationConfig that transformers reads from a generation_config.json."""
    from sglang.srt.configs.model_config import ModelConfig
    from transformers import GenerationConfig

    mc = object.__new__(ModelConfig)
    mc.sampling_defaults = "model"
    if gc is None:
        mc.hf_generation_config = None
    else:
        with tempfile.TemporaryDirectory() as d:
            Path(d, "generation_config.json").write_text(json.dumps(gc))
            mc.hf_generation_config = GenerationConfig.from_pretrained(d)
    return mc.get_default_sampling_params()


def route_requests() -> list[dict]:
    import pydantic
    from sglang.srt.entrypoints.openai.protocol import ChatCompletionRequest, CompletionRequest
    from sglang.srt.sampling.sampling_params import SamplingParams

    out = []
    for gname, gc in GEN_CONFIGS.items():
        defaults = generation_defaults(gc)
        for body in REQUESTS:
            for route in ("chat", "completions"):
                if route == "completions" and gc is not None:
                    continue  # the completions route reads no generation config
                entry = {"route": route, "generation_config": gname, "request": jsonable(body)}
                try:
                    if route == "chat":
                        req = ChatCompletionRequest(messages=[{"role": "user", "content": "hi"}], **body)
                        params = req.to_sampling_params(stop=[], model_generation_config=defaults)
                    else:
                        from sglang.srt.entrypoints.openai.serving_completions import OpenAIServingCompletion

                        req = CompletionRequest(prompt="hi", **body)
                        params = OpenAIServingCompletion._build_sampling_params(None, req)
                    sp = SamplingParams(**params)
                    sp.normalize(None)
                    sp.verify(49152)
                    entry["sampling_params"] = jsonable(sampling_fields(sp))
                except pydantic.ValidationError as e:
                    entry["validation_error"] = [
                        {"loc": [str(x) for x in err["loc"]], "type": err["type"], "msg": err["msg"]}
                        for err in e.errors()
                    ]
                except ValueError as e:
                    entry["error"] = str(e)
                out.append(entry)
    return out


def murmur_vectors() -> list[dict]:
    vec = []
    for seed in DRAW_SEEDS:
        for pos in (0, 5, 2**32 + 9):  # a position past 2**32 hashes as its low 32 bits
            cols = torch.arange(8)
            real = interpreted_hash(torch.tensor([seed & 0xFFFFFFFFFFFFFFFF], dtype=torch.uint64),
                                    torch.tensor([pos], dtype=torch.int64), cols)
            for c in range(8):
                hh = hand_hash(seed, pos, c)
                if int(real[0, c]) != hh:
                    raise SystemExit(f"record.py: hash mismatch at seed {seed} pos {pos} col {c}")
                vec.append({"seed": seed, "position": pos, "col": c, "hash": hh})
    return vec


# ---------------------------------------------------------------------------

def build() -> dict[str, bytes]:
    run = Run()
    files: dict[str, bytes] = {}
    sources = sorted((REPO / "fixtures" / "smollm2").glob("*.safetensors")) + sorted(
        (REPO / "fixtures" / "edge").glob("*.safetensors")
    )
    total = 0
    for src in sources:
        t = load_file(str(src))
        with open(src, "rb") as f:
            n = int.from_bytes(f.read(8), "little")
            meta = json.loads(f.read(n)).get("__metadata__", {})
        logits = t["logits"]
        ids = [int(i) for i in t["input_ids"]]
        group = src.parent.name
        if group == "smollm2":
            prompt_len = int(meta["prompt_len"])
            case_list = MODEL_CASES
        else:
            prompt_len = len(ids) // 2
            case_list = EDGE_CASES
        prompt, output = ids[:prompt_len], ids[prompt_len:]
        tensors: dict[str, np.ndarray] = {}
        cases: list[dict] = []
        for case in case_list:
            name, kwargs = case[0], case[1]
            det = len(case) > 2 and case[2]
            record_case(run, logits, prompt, output, name, resolve(kwargs, logits), det, tensors, cases)
        for c in cases:
            c["params"] = jsonable(c["params"])
        metadata = {
            "format": FORMAT,
            "source": f"{group}/{src.name}",
            "prompt_len": str(prompt_len),
            "sglang_version": sglang.__version__,
            "torch_version": torch.__version__,
            "cpu_capability": torch.backends.cpu.get_cpu_capability(),
            "cases": json.dumps(cases, sort_keys=True),
        }
        files[f"{group}__{src.stem}.safetensors"] = save(tensors, metadata=metadata)
        total += len(cases)
        print(f"record.py: {group}/{src.name}: {len(cases)} cases", file=sys.stderr)
    for name, logits, ids, prompt_len in synthetic():
        tensors = {"logits": logits, "input_ids": np.array(ids, dtype=np.int64)}
        cases = []
        for case in SYNTH_CASES:
            kwargs = dict(case[1])
            if kwargs.get("top_k") == "V":
                kwargs["top_k"] = len(logits)  # max_top_k == V: the full sort
            det = len(case) > 2 and case[2]
            record_case(run, logits, ids[:prompt_len], ids[prompt_len:], case[0], kwargs, det, tensors, cases)
        for c in cases:
            c["params"] = jsonable(c["params"])
        metadata = {
            "format": FORMAT,
            "source": f"synthetic/{name}",
            "prompt_len": str(prompt_len),
            "sglang_version": sglang.__version__,
            "torch_version": torch.__version__,
            "cpu_capability": torch.backends.cpu.get_cpu_capability(),
            "cases": json.dumps(cases, sort_keys=True),
        }
        files[f"synthetic__{name}.safetensors"] = save(tensors, metadata=metadata)
        total += len(cases)
        print(f"record.py: synthetic/{name}: {len(cases)} cases", file=sys.stderr)
    server = {
        "format": "sampling-parity-sglang-server/1",
        "sglang_version": sglang.__version__,
        "rejected": rejected_errors(),
        "generation_configs": GEN_CONFIGS,
        # What ModelConfig.get_default_sampling_params returns for each.
        "generation_defaults": {k: generation_defaults(v) for k, v in GEN_CONFIGS.items()},
        "requests": route_requests(),
        "murmur3": murmur_vectors(),
    }
    files["server.json"] = (json.dumps(server, indent=1, sort_keys=True) + "\n").encode()
    print(f"record.py: {total} cases; {run.hash_checks} full-row hashes checked against the hand formula",
          file=sys.stderr)
    return files



def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--check", action="store_true",
                    help="regenerate in memory and fail with a diff if fixtures/sglang differs")
    args = ap.parse_args()
    files = build()
    if args.check:
        existing = {p.name for p in OUT.iterdir()} if OUT.exists() else set()
        return textcheck.check_files(
            OUT, files, existing, "record.py",
            "scripts/reference/sglang/.venv/bin/python scripts/reference/sglang/record.py")
    OUT.mkdir(parents=True, exist_ok=True)
    for name, data in files.items():
        (OUT / name).write_bytes(data)
    print(f"record.py: wrote {len(files)} files to {OUT}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
