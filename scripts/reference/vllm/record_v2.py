#!/usr/bin/env python3
"""Record what vLLM 0.33.0's Model Runner V2 GPU sampler does, with its own
Triton kernels run by Triton's CPU interpreter (TRITON_INTERPRET=1).

Model Runner V2 (vllm/v1/worker/gpu/, the default runner on CUDA in 0.32/0.33)
samples with `vllm/v1/worker/gpu/sample/sampler.py: Sampler`. For one request
whose row goes through the Triton path (a request with its own `seed`, or no
FlashInfer, or no top-k/top-p: `Sampler.sample`, sampler.py:301-326) it runs:

  SamplingStates.add_request          sample/states.py:41-72 (top_k <= 0 or > V
                                       becomes V; a seedless request gets
                                       np.random.randint(int64); whether the row
                                       needs processing)
  apply_sampling_params               sampler.py:226-276 (skip_top_k_top_p=True):
    the logits processors in list order (sampler.py:71-76), proc__* files only:
    _bias_kernel                      sample/logit_bias.py:158-349 (allowed ids,
                                       then logit bias; min-tokens off)
    _bincount_kernel, _penalties_kernel
                                      sample/penalties.py:107-298 (prompt ids as a
                                       bit mask, the later ids counted as output)
    _temperature_kernel               sample/gumbel.py:21-62 (skipped at T 0 or 1)
    _min_p_kernel                     sample/min_p.py:8-60   (threshold max + log(min_p))
  apply_top_k_top_p                   v1/sample/ops/topk_topp_sampler.py:501-521
    -> apply_top_k_top_p_triton       v1/sample/ops/topk_topp_triton.py:1618-1726
       _topk_topp_kernel (CUDA tiles 8192/4096, topk_topp_triton.py:917-983) and,
       for a top-p-only row in a batch of <= 64 on CUDA, the split pipeline
       _apply_topp_split (topk_topp_triton.py:1572-1615)
  gumbel_sample(apply_temperature=False, use_fp64=False)
                                      sample/gumbel.py:344-417: noise
                                      murmur3(seed, pos, token) -> fp32 uniform ->
                                      -log(-log1p(-u)), argmax per 1024 block, then
                                      the first block maximum

This script calls those kernels (the real `@triton.jit` functions of the
installed vllm 0.33.0 wheel) in that order, with the device-dependent choices
made as on CUDA: the 8192/4096 tiles, SPLIT_COVERS_PONLY, the split pipeline
for a top-p-only row, num_sm = 132 (any GPU with >= 32 SMs splits a row in
32). CUDA_VISIBLE_DEVICES="" keeps vLLM's Triton check on
(vllm/triton_utils/importing.py: "distributed environment" branch) on a machine
without a GPU. These are NOT outputs of a GPU: the interpreter computes in
numpy (its exp/log/sum, not CUDA's).

Output: fixtures/vllm-v2/<group>__<fixture>.safetensors (no logits processor,
every id of the fixture prompt) and proc__<group>__<fixture>.safetensors (logit
bias, allowed ids, penalties; the fixture's ids split at its prompt_len), see
docs/engines/vllm.md.

Environment: RECORD_V2_ONLY=<substring> records (or checks) only the fixtures
whose file name contains it; RECORD_V2_KINDS=base or proc only those files. A
partial --check compares only the files it regenerated.

Usage (from the repository root, after scripts/reference/vllm/setup.sh v2):
    scripts/reference/vllm/.venv-v2/bin/python scripts/reference/vllm/record_v2.py          # write
    scripts/reference/vllm/.venv-v2/bin/python scripts/reference/vllm/record_v2.py --check  # regenerate, diff, exit 1 on change
"""

import os

# Before torch / triton / vllm are imported: they read these at import time.
os.environ["TRITON_INTERPRET"] = "1"
os.environ["CUDA_VISIBLE_DEVICES"] = ""
os.environ.setdefault("VLLM_LOGGING_LEVEL", "ERROR")

import argparse  # noqa: E402
import json  # noqa: E402
import logging  # noqa: E402
import sys  # noqa: E402
import warnings  # noqa: E402
from pathlib import Path  # noqa: E402

warnings.filterwarnings("ignore")
logging.disable(logging.WARNING)

import numpy as np  # noqa: E402
import torch  # noqa: E402
import triton  # noqa: E402
import triton.language as tl  # noqa: E402
import triton.runtime.interpreter as TI  # noqa: E402
from safetensors.numpy import load_file, save  # noqa: E402

import vllm  # noqa: E402
from vllm import SamplingParams  # noqa: E402
from vllm.triton_utils import HAS_TRITON  # noqa: E402
import vllm.v1.sample.ops.topk_topp_triton as tt  # noqa: E402
from vllm.v1.worker.gpu.sample import gumbel as G  # noqa: E402
from vllm.v1.worker.gpu.sample.min_p import apply_min_p  # noqa: E402
from vllm.v1.worker.gpu.sample import logit_bias as LB  # noqa: E402
from vllm.v1.worker.gpu.sample import penalties as PEN  # noqa: E402

# The interpreter's tl.range yields Python ints; compiled Triton yields int32
# scalars, and _topk_topp_kernel calls `row_id.to(tl.int64)` on one
# (topk_topp_triton.py:128). Yield int32 scalars as compiled code does.
_orig_patch_lang_core = TI._patch_lang_core


def _patch_lang_core(lang, scope):
    _orig_patch_lang_core(lang, scope)
    plain = lang.range

    def int32_range(*args, **kwargs):
        for i in plain(*args, **kwargs):
            yield tl.tensor(TI.TensorHandle(np.array([i], dtype=np.int32), tl.int32), tl.int32)

    scope.set_attr(lang, "range", int32_range)


TI._patch_lang_core = _patch_lang_core

REPO = Path(__file__).resolve().parents[3]
OUT = REPO / "fixtures" / "vllm-v2"
sys.path.insert(0, str(REPO / "scripts" / "reference"))
import textcheck  # noqa: E402

FORMAT = "sampling-parity-vllm-v2/1"
NUM_SM = 132
SPARSE_MAX = 2048
TOP = 256
SEEDS = [0, 1, 42, 1234, 2**31 - 1, 2**32 + 5, 2**62 + 3, 987654321]
POS_OFFSETS = [0, 1, 17]  # the request's position (len(input_ids) - 1) plus these
MODEL_POS_OFFSETS = [0]  # SmolLM2 rows (V = 49152) are slow in the interpreter
JOBS = 2  # fixtures recorded in parallel (forked workers)

MODEL_CASES = [
    ("t1", {}),
    ("t07", {"temperature": 0.7}),
    ("greedy", {"temperature": 0.0}),
    ("k40", {"temperature": 0.7, "top_k": 40}),
    ("k50", {"top_k": 50}),
    ("p09", {"temperature": 0.7, "top_p": 0.9}),
    ("k40p09", {"temperature": 0.7, "top_k": 40, "top_p": 0.9}),
    ("minp05", {"temperature": 0.7, "min_p": 0.05}),
    ("minp02k40p08", {"min_p": 0.02, "top_k": 40, "top_p": 0.8}),
    # Top-p over many tokens: the split pipeline's ladder (top-p only), the
    # bisection after a wide top-k, top-p among min-p survivors.
    ("p095", {"top_p": 0.95}),
    ("k200p095t12", {"temperature": 1.2, "top_k": 200, "top_p": 0.95}),
    ("minp01p095", {"min_p": 0.01, "top_p": 0.95}),
]

EDGE_CASES = [
    ("t1", {}),
    ("greedy", {"temperature": 0.0}),
    ("t07", {"temperature": 0.7}),
    ("k1", {"top_k": 1}),
    ("k2", {"top_k": 2}),
    ("k5", {"top_k": 5}),
    ("k5t07", {"top_k": 5, "temperature": 0.7}),
    ("p05", {"top_p": 0.5}),
    ("p08", {"top_p": 0.8}),
    ("p09", {"top_p": 0.9}),
    ("k2p09", {"top_k": 2, "top_p": 0.9}),
    ("k100p05", {"top_k": 100, "top_p": 0.5}),
    ("minp01", {"min_p": 0.1}),
    ("minp05", {"min_p": 0.5}),
    ("minp05p05", {"min_p": 0.5, "top_p": 0.5}),
    ("p01", {"top_p": 0.1}),
    ("p099", {"top_p": 0.99}),
    ("k3p08t07", {"top_k": 3, "top_p": 0.8, "temperature": 0.7}),
    ("minp01k5p09", {"min_p": 0.1, "top_k": 5, "top_p": 0.9}),
]

# The logits processors (fixtures/vllm-v2/proc__*.safetensors): logit bias,
# allowed token ids, penalties, alone and with temperature/top-k/top-p/min-p.
# Placeholders ("top", ...) become token ids of each fixture in resolve().
PROC_MODEL_CASES = [
    ("bias_allowed", {"temperature": 0.9, "logit_bias": "top", "allowed_token_ids": "top"}),
    ("bias_greedy", {"temperature": 0.0, "logit_bias": "top"}),
    ("rep13_greedy", {"temperature": 0.0, "repetition_penalty": 1.3}),
    ("rep13_k40", {"temperature": 0.7, "top_k": 40, "repetition_penalty": 1.3}),
    ("freq05_pres03", {"temperature": 0.7, "frequency_penalty": 0.5, "presence_penalty": 0.3}),
    ("rep07_freqneg_k100", {"repetition_penalty": 0.7, "frequency_penalty": -0.4, "top_k": 100}),
    ("bias_p095", {"logit_bias": "top", "top_p": 0.95}),
    ("rep12_minp005", {"repetition_penalty": 1.2, "min_p": 0.05}),
    ("combo", {"temperature": 0.8, "top_k": 60, "top_p": 0.85, "min_p": 0.02,
               "repetition_penalty": 1.2, "frequency_penalty": 0.3, "presence_penalty": 0.2,
               "logit_bias": "top"}),
]

PROC_EDGE_CASES = [
    ("bias", {"logit_bias": "top"}),
    ("bias_greedy", {"temperature": 0.0, "logit_bias": "top"}),
    ("bias_sink_greedy", {"temperature": 0.0, "logit_bias": "sink_top"}),
    ("bias_masked", {"logit_bias": "masked"}),
    ("bias_huge", {"logit_bias": "huge"}),
    ("allowed", {"allowed_token_ids": "top"}),
    ("allowed_last", {"allowed_token_ids": "last"}),
    ("allowed_dup_k1", {"allowed_token_ids": "dup", "top_k": 1}),
    ("allowed_bias_k2", {"allowed_token_ids": "top", "logit_bias": "outside", "top_k": 2}),
    ("rep13", {"repetition_penalty": 1.3}),
    ("rep07_greedy", {"temperature": 0.0, "repetition_penalty": 0.7}),
    ("rep13_k2", {"repetition_penalty": 1.3, "top_k": 2}),
    ("freq1_pres1", {"frequency_penalty": 1.0, "presence_penalty": 1.0}),
    ("freqneg_presneg", {"frequency_penalty": -0.7, "presence_penalty": -1.1}),
    ("freq03_t07", {"frequency_penalty": 0.3, "temperature": 0.7}),
    ("rep12_p09", {"repetition_penalty": 1.2, "top_p": 0.9}),
    ("rep13_minp01", {"repetition_penalty": 1.3, "min_p": 0.1}),
    ("combo", {"temperature": 0.8, "top_k": 3, "top_p": 0.85, "min_p": 0.05,
               "repetition_penalty": 1.2, "frequency_penalty": 0.3, "presence_penalty": 0.2,
               "logit_bias": "top", "allowed_token_ids": "top"}),
]

# Ids outside the vocabulary never reach the kernels: SamplingParams.verify
# refuses them first (sampling_params.py:904-915, _validate_logit_bias
# 1075-1095, _validate_allowed_token_ids 1154-1183). Recorded with vLLM's own
# validators on edge/int_ties_v1000 (V = 1000), the ids in ascending order.
PROC_REJECTED = [
    {"logit_bias": {1000: 1.0}},
    {"logit_bias": {-1: 2.0, 5: 1.0, 1000: -1.0}},
    {"allowed_token_ids": [0, 999, 1000]},
    {"allowed_token_ids": [-3, 0]},
    {"allowed_token_ids": [1, 2], "logit_bias": {7: 1.0, 4096: 1.0}},
]


def fnv1a64(data: bytes) -> str:
    h = 0xCBF29CE484222325
    for b in data:
        h ^= b
        h = (h * 0x100000001B3) & 0xFFFFFFFFFFFFFFFF
    return f"{h:016x}"


def top_ids(logits: np.ndarray, n: int) -> list[int]:
    order = sorted(range(len(logits)), key=lambda i: (-float(logits[i]), i))
    return [i for i in order if np.isfinite(logits[i])][:n]


def resolve(kwargs: dict, logits: np.ndarray, group: str) -> dict:
    """Turns the placeholders of PROC_*_CASES into token ids of this fixture."""
    kw = dict(kwargs)
    vocab = len(logits)
    ids = top_ids(logits, 20)
    first = ids[0] if ids else 0
    if kw.get("allowed_token_ids") == "top":
        if group == "smollm2":  # record.py's choice
            allowed = ids[:16] + [i for i in range(0, vocab, max(1, vocab // 7))][:7]
        else:  # the more likely half of the finite logits (so that some are masked)
            allowed = ids[: max(1, len(ids) // 2)]
        kw["allowed_token_ids"] = sorted(set(allowed)) or [0]
    elif kw.get("allowed_token_ids") == "last":
        kw["allowed_token_ids"] = [vocab - 1]
    elif kw.get("allowed_token_ids") == "dup":  # a repeated id
        kw["allowed_token_ids"] = [vocab - 1, vocab - 1, 0]
    bias = kw.get("logit_bias")
    if bias == "top":  # record.py's: lift the 11th..13th most likely, push down the first
        if len(ids) > 12:
            kw["logit_bias"] = {ids[10]: 2.5, ids[11]: 1.25, ids[12]: 0.5, ids[0]: -1.75}
        elif ids:
            kw["logit_bias"] = {ids[-1]: 1.5, ids[0]: -0.5}
        else:
            kw["logit_bias"] = {0: 1.5}
    elif bias == "sink_top":  # the most likely token down by -100
        kw["logit_bias"] = {first: -100.0}
    elif bias == "masked":  # a bias on a -inf logit (or the last id), another on the top
        masked = np.flatnonzero(np.isneginf(logits))
        kw["logit_bias"] = {int(masked[0]) if len(masked) else vocab - 1: 50.0, first: -0.25}
        if first == list(kw["logit_bias"])[0]:
            kw["logit_bias"] = {first: 50.0}
    elif bias == "huge":  # overflows f32 on near_f32_max
        kw["logit_bias"] = {vocab - 1: 1e38}
    elif bias == "outside":  # on a token outside allowed_token_ids (masked first) and inside
        allowed = kw["allowed_token_ids"]
        outside = [i for i in range(vocab) if i not in allowed]
        kw["logit_bias"] = {allowed[0]: 0.75}
        if outside:
            kw["logit_bias"][outside[0]] = 3.0
    return kw


def jsonable(kwargs: dict) -> dict:
    out = dict(kwargs)
    if "logit_bias" in out:
        out["logit_bias"] = {str(k): float(v) for k, v in out["logit_bias"].items()}
    return out


def apply_bias_kernel(x: torch.Tensor, params: SamplingParams, prompt_len: int, pos: int) -> None:
    """LogitBiasState.add_request (logit_bias.py:57-116) for a request in slot 0
    (its tensors sized as __init__ does, 31-52), then apply_logit_bias (303-349)."""
    allowed = params.allowed_token_ids
    bias = params.logit_bias
    i32, f32 = torch.int32, torch.float32
    num_allowed = torch.tensor([len(allowed) if allowed else 0], dtype=i32)
    allowed_t = torch.zeros((1, LB.MAX_NUM_ALLOWED_TOKEN_IDS), dtype=i32)
    if allowed:
        allowed_t[0, : len(allowed)] = torch.tensor(list(allowed), dtype=i32)
    num_bias = torch.tensor([len(bias) if bias else 0], dtype=i32)
    bias_ids = torch.zeros((1, LB.MAX_NUM_LOGIT_BIAS_TOKENS), dtype=i32)
    bias_vals = torch.zeros((1, LB.MAX_NUM_LOGIT_BIAS_TOKENS), dtype=f32)
    if bias:
        bias_ids[0, : len(bias)] = torch.tensor(list(bias.keys()), dtype=i32)
        bias_vals[0, : len(bias)] = torch.tensor(list(bias.values()), dtype=f32)
    assert params.min_tokens == 0
    min_lens = torch.tensor([prompt_len + params.min_tokens], dtype=i32)
    num_stop = torch.zeros(1, dtype=i32)
    restore = torch.zeros(1, dtype=i32)
    stop_ids = torch.zeros((1, LB.MAX_NUM_STOP_TOKEN_IDS), dtype=i32)
    LB.apply_logit_bias(x, torch.zeros(1, dtype=torch.int32), torch.tensor([pos], dtype=torch.int64),
                        num_allowed, allowed_t, num_bias, bias_ids, bias_vals, min_lens,
                        num_stop, restore, stop_ids, False)


def apply_penalty_kernel(x: torch.Tensor, params: SamplingParams, prompt: list[int], output: list[int]) -> None:
    """PenaltiesState (penalties.py:26-104) for a request in slot 0: bincount of
    all_token_ids with prefill_len = len(prompt + output) (the request as it is
    (re)filled: prompt tokens into the prompt bit mask, the rest counted as
    output, 219-298; post_update, input_batch.py:566-633, counts each sampled
    token into the same output counts), then _penalties_kernel (107-216) with no
    draft tokens (expanded_local_pos 0)."""
    vocab = x.shape[-1]
    i32, f32 = torch.int32, torch.float32
    all_ids = torch.tensor([prompt + output], dtype=i32)
    prompt_mask = torch.zeros((1, triton.cdiv(vocab, 32)), dtype=i32)
    counts = torch.zeros((1, vocab), dtype=i32)
    idx = torch.zeros(1, dtype=torch.int32)
    PEN.bincount(idx, all_ids, torch.tensor([len(prompt)], dtype=i32),
                 torch.tensor([len(prompt) + len(output)], dtype=i32), prompt_mask, counts,
                 len(prompt) + len(output))
    last = torch.tensor([(prompt + output)[-1]], dtype=torch.int64)
    PEN.apply_penalties(x, idx, last, torch.zeros(1, dtype=torch.int32),
                        torch.tensor([params.repetition_penalty], dtype=f32),
                        torch.tensor([params.frequency_penalty], dtype=f32),
                        torch.tensor([params.presence_penalty], dtype=f32), prompt_mask, counts)


def cuda_top_k_top_p(logits: torch.Tensor, k, p, has_topp_only_rows: bool) -> torch.Tensor:
    """apply_top_k_top_p_triton (topk_topp_triton.py:1618-1726) with the choices
    it makes on a CUDA device: use_split, the CUDA tiles of _topk_topp
    (:950-952), SPLIT_COVERS_PONLY (:958-962)."""
    batch_size, vocab_size = logits.shape
    topk_enabled, topp_enabled = k is not None, p is not None
    k_ptr = k.to(torch.int32) if topk_enabled else logits
    p_ptr = p.to(torch.float32) if topp_enabled else logits
    use_split = topp_enabled and batch_size <= tt._SPLIT_MAX_BATCH  # device is cuda
    if use_split and not topk_enabled:
        tt._apply_topp_split(logits, None, p_ptr, float("-inf"), NUM_SM)
        return logits
    num_programs = min(NUM_SM, batch_size)
    buffer = logits.new_empty((num_programs, vocab_size))
    pct = logits.new_tensor(tt._PERCENTILE_TO_STD_TABLE)
    cdf = logits.new_tensor(tt._NORMAL_CDF_TO_SIGMA_TABLE)
    tt._topk_topp_kernel[(num_programs,)](
        logits, logits.stride(0), buffer, pct, cdf, k_ptr, p_ptr, batch_size,
        VOCAB_SIZE=vocab_size, MASK_VALUE=float("-inf"), BLOCK_SIZE=8192,
        BLOCK_SIZE_TRUNC=4096, TOPK_ENABLED=topk_enabled, TOPP_ENABLED=topp_enabled,
        SPLIT_COVERS_PONLY=use_split, num_warps=8,
    )
    if use_split and has_topp_only_rows:
        tt._apply_topp_split(logits, k_ptr, p_ptr, float("-inf"), NUM_SM)
    return logits


def processed(logits: np.ndarray, params: SamplingParams, prompt: list[int] | None = None,
              output: list[int] | None = None) -> tuple[np.ndarray, dict]:
    """Sampler.sample up to the draw, for one request (sampler.py:278-359).
    `prompt`/`output` (the request's token history) are given for the
    logits processors' cases only."""
    vocab = len(logits)
    t, top_k, top_p, min_p = params.temperature, params.top_k, params.top_p, params.min_p
    if top_k <= 0 or top_k > vocab:  # states.py:49-50
        top_k = vocab
    needs = t != 0.0 and (t != 1.0 or min_p != 0.0 or top_k != vocab or top_p != 1.0)  # :67-72
    # Sampler.add_request (sampler.py:96-103): a logits processor that is on
    # makes the row need processing too (logit_bias.py:115-116, penalties.py:59-63).
    use_bias = bool(params.allowed_token_ids) or bool(params.logit_bias)
    use_pen = PEN.use_penalty(params)
    needs = needs or use_bias or use_pen
    x = torch.from_numpy(logits.astype(np.float32).copy()).unsqueeze(0)
    idx = torch.zeros(1, dtype=torch.int64)
    info = {"top_k": int(top_k), "needs_processing": bool(needs)}
    if use_bias or use_pen:
        info["processors"] = (["logit_bias"] if use_bias else []) + (["penalties"] if use_pen else [])
    if needs:
        # The processors in list order (sampler.py:71-76, 254-256): bias, then penalties.
        if use_bias:
            apply_bias_kernel(x, params, len(prompt), len(prompt) + len(output) - 1)
        if use_pen:
            apply_penalty_kernel(x, params, prompt, output)
        temp = torch.tensor([t], dtype=torch.float32)
        if t not in (0.0, 1.0):  # states.py:87-90
            G.apply_temperature(x, idx, temp)
        if min_p != 0.0:  # states.py:100-103
            apply_min_p(x, idx, torch.tensor([min_p], dtype=torch.float32))
        do_k, do_p = top_k != vocab, top_p != 1.0  # states.py:112-121
        k = torch.tensor([top_k], dtype=torch.int32) if do_k else None
        p = torch.tensor([top_p], dtype=torch.float32) if do_p else None
        only_p = bool(do_p and top_k >= vocab and top_p < 1.0)
        if k is not None or p is not None:
            x = cuda_top_k_top_p(x, k, p, only_p)
            info["path"] = "split" if (p is not None and k is None) else "monolithic"
    return x[0].numpy().copy(), info


def draw(final: np.ndarray, temperature: float, seeds: list[int], positions: list[int]) -> list[int]:
    """gumbel_sample (gumbel.py:344-417) on the processed row, one row per (seed, pos)."""
    n = len(seeds)
    x = torch.from_numpy(np.tile(final.astype(np.float32), (n, 1)))
    idx = torch.arange(n, dtype=torch.int64)
    temp = torch.full((n,), temperature, dtype=torch.float32)
    seed_t = torch.tensor([s - 2**64 if s >= 2**63 else s for s in seeds], dtype=torch.int64)
    pos_t = torch.tensor(positions, dtype=torch.int64)
    out = G.gumbel_sample(x, idx, temp, seed_t, pos_t, apply_temperature=False,
                          is_drafting=False, use_fp64=False)
    return [int(v) for v in out]


@triton.jit
def _noise_probe(seed_ptr, pos_ptr, out_hash, out_u, out_g, N: tl.constexpr):
    """The real murmur3_hash32 / murmur3_uniform32 / noise expression of
    gumbel_noised_argmax (gumbel.py:103-131, 150-167, 203-208) for tokens 0..N."""
    row = tl.program_id(0)
    seed = tl.load(seed_ptr + row)
    pos = tl.load(pos_ptr + row)
    offs = tl.arange(0, N)
    h = G.murmur3_hash32(seed, pos, offs)
    u = G.murmur3_uniform32(seed, pos, offs)
    g = -tl.log(-G._log1p_neg_stable(u))
    tl.store(out_hash + row * N + offs, h.to(tl.int64))
    tl.store(out_u + row * N + offs, u)
    tl.store(out_g + row * N + offs, g)


def noise_vectors() -> dict[str, np.ndarray]:
    seeds = [0, 1, -1, 42, 2**31 - 1, 2**32 + 5, -(2**63), 2**63 - 1]
    positions = [0, 1, 7, 100, 2**31 + 3, 5, 2**32 - 1, 123456]
    n = 1024
    seed_t = torch.tensor(seeds, dtype=torch.int64)
    pos_t = torch.tensor(positions, dtype=torch.int64)
    h = torch.empty((len(seeds), n), dtype=torch.int64)
    u = torch.empty((len(seeds), n), dtype=torch.float32)
    g = torch.empty((len(seeds), n), dtype=torch.float32)
    _noise_probe[(len(seeds),)](seed_t, pos_t, h, u, g, N=n)
    return {"noise.seeds": seed_t.numpy(), "noise.positions": pos_t.numpy(),
            "noise.hash": h.numpy(), "noise.u": u.numpy(), "noise.gumbel": g.numpy()}


def exact_softmax(x: np.ndarray) -> np.ndarray:
    x = x.astype(np.float64)
    m = x.max()
    if m == -np.inf:
        p = np.zeros_like(x)
        p[0] = 1.0
        return p
    e = np.exp(x - m)
    return e / e.sum()


def record_case(logits, ids, name, kwargs, tensors, cases, offsets, prompt_len=None):
    vocab = len(logits)
    entry = {"name": name, "params": jsonable(kwargs)}
    params = SamplingParams(**kwargs)
    if prompt_len is None:
        final, info = processed(logits, params)
    else:
        final, info = processed(logits, params, ids[:prompt_len], ids[prompt_len:])
    entry.update(info)
    entry["fnv1a64"] = fnv1a64(final.tobytes())
    finite = np.flatnonzero(np.isfinite(final))
    entry["finite"] = int(len(finite))
    if len(finite) <= SPARSE_MAX:
        stored = finite.astype(np.int64)
    else:
        stored = np.array(top_ids(final, TOP), dtype=np.int64)
    tensors[f"{name}.ids"] = stored
    tensors[f"{name}.final"] = final[stored]
    tensors[f"{name}.probs"] = exact_softmax(final)[stored]
    pos0 = len(ids) - 1  # input_batch.py:357-390: the last input token's position
    seeds = [s for s in SEEDS for _ in offsets]
    positions = [pos0 + o for _ in SEEDS for o in offsets]
    tokens = draw(final, params.temperature, seeds, positions)
    tensors[f"{name}.draw_seeds"] = np.array([s - 2**64 if s >= 2**63 else s for s in seeds], dtype=np.int64)
    tensors[f"{name}.draw_positions"] = np.array(positions, dtype=np.int64)
    tensors[f"{name}.draw_tokens"] = np.array(tokens, dtype=np.int64)
    del vocab
    cases.append(entry)


def record_source(src: Path) -> tuple[str, bytes]:
    t = load_file(str(src))
    logits = t["logits"]
    ids = [int(i) for i in t["input_ids"]]
    group = src.parent.name
    if group == "smollm2":
        case_list, offsets = MODEL_CASES, MODEL_POS_OFFSETS
    else:
        case_list, offsets = EDGE_CASES, POS_OFFSETS
    tensors: dict[str, np.ndarray] = {}
    cases: list[dict] = []
    for name, kwargs in case_list:
        record_case(logits, ids, name, kwargs, tensors, cases, offsets)
    metadata = {
        "format": FORMAT,
        "source": f"{group}/{src.name}",
        "vllm_version": vllm.__version__,
        "torch_version": torch.__version__,
        "triton_version": triton.__version__,
        "numpy_version": np.__version__,
        "num_sm": str(NUM_SM),
        "cases": json.dumps(cases, sort_keys=True),
    }
    print(f"record_v2.py: {group}/{src.name}: {len(cases)} cases", file=sys.stderr, flush=True)
    return f"{group}__{src.stem}.safetensors", save(tensors, metadata=metadata)


def record_proc_source(src: Path) -> tuple[str, bytes] | None:
    """The logits processors' cases on one fixture, with its token history split
    into prompt and output as record.py does (SmolLM2: the fixture's
    prompt_len; edge: the first half). A fixture whose ids are outside the
    vocabulary is skipped (vLLM's renderer refuses such a prompt)."""
    t = load_file(str(src))
    logits = t["logits"]
    ids = [int(i) for i in t["input_ids"]]
    if any(i < 0 or i >= len(logits) for i in ids):
        return None
    group = src.parent.name
    if group == "smollm2":
        with open(src, "rb") as f:
            n = int.from_bytes(f.read(8), "little")
            prompt_len = int(json.loads(f.read(n))["__metadata__"]["prompt_len"])
        case_list, offsets = PROC_MODEL_CASES, MODEL_POS_OFFSETS
    else:
        prompt_len = len(ids) // 2
        case_list, offsets = PROC_EDGE_CASES, POS_OFFSETS
    tensors: dict[str, np.ndarray] = {}
    cases: list[dict] = []
    for name, kwargs in case_list:
        record_case(logits, ids, name, resolve(kwargs, logits, group), tensors, cases, offsets, prompt_len)
    extra = {}
    if src.stem == "int_ties_v1000":
        from types import SimpleNamespace

        # The one ModelConfig method the two validators call.
        model_config = SimpleNamespace(get_vocab_size=lambda: len(logits))
        rejected = []
        for kw in PROC_REJECTED:
            sp = SamplingParams(**kw)
            try:
                sp._validate_logit_bias(model_config)
                sp._validate_allowed_token_ids(model_config)
            except Exception as e:  # noqa: BLE001 - the message is what is recorded
                rejected.append({"params": jsonable(kw), "error": str(e)})
                continue
            raise AssertionError(f"accepted: {kw}")
        extra["rejected"] = json.dumps(rejected, sort_keys=True)
    metadata = {
        **extra,
        "format": FORMAT,
        "source": f"{group}/{src.name}",
        "prompt_len": str(prompt_len),
        "vllm_version": vllm.__version__,
        "torch_version": torch.__version__,
        "triton_version": triton.__version__,
        "numpy_version": np.__version__,
        "num_sm": str(NUM_SM),
        "cases": json.dumps(cases, sort_keys=True),
    }
    print(f"record_v2.py: proc {group}/{src.name}: {len(cases)} cases", file=sys.stderr, flush=True)
    return f"proc__{group}__{src.stem}.safetensors", save(tensors, metadata=metadata)


def record_any(job: tuple[str, Path]) -> tuple[str, bytes] | None:
    kind, src = job
    return record_proc_source(src) if kind == "proc" else record_source(src)


def build() -> dict[str, bytes]:
    import multiprocessing

    sources = sorted((REPO / "fixtures" / "smollm2").glob("*.safetensors")) + sorted(
        (REPO / "fixtures" / "edge").glob("*.safetensors")
    )
    only = os.environ.get("RECORD_V2_ONLY")
    sources = [s for s in sources if not only or only in s.name]
    kinds = os.environ.get("RECORD_V2_KINDS", "base,proc").split(",")
    jobs = [(k, s) for k in ("proc", "base") if k in kinds for s in sources]
    with multiprocessing.get_context("fork").Pool(JOBS) as pool:
        files = dict(f for f in pool.map(record_any, jobs, chunksize=1) if f is not None)
    files["noise.safetensors"] = save(noise_vectors(), metadata={
        "format": FORMAT, "vllm_version": vllm.__version__, "triton_version": triton.__version__,
        "numpy_version": np.__version__})
    return files


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--check", action="store_true",
                    help="regenerate in memory and fail with a diff if fixtures/vllm-v2 differs")
    args = ap.parse_args()
    if not HAS_TRITON:
        print("record_v2.py: vLLM disabled Triton (see vllm/triton_utils/importing.py)", file=sys.stderr)
        return 2
    if vllm.__version__ != "0.33.0":
        print(f"record_v2.py: needs vllm 0.33.0, found {vllm.__version__} (run setup.sh v2)", file=sys.stderr)
        return 2
    files = build()
    if args.check:
        existing = {p.name for p in OUT.glob("*.safetensors")} if OUT.exists() else set()
        if os.environ.get("RECORD_V2_ONLY") or os.environ.get("RECORD_V2_KINDS"):
            # A partial run checks only the files it regenerated.
            existing &= files.keys()
        return textcheck.check_files(
            OUT, files, existing, "record_v2.py",
            "scripts/reference/vllm/.venv-v2/bin/python scripts/reference/vllm/record_v2.py")
    OUT.mkdir(parents=True, exist_ok=True)
    for name, data in files.items():
        (OUT / name).write_bytes(data)
    print(f"record_v2.py: wrote {len(files)} files to {OUT}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
