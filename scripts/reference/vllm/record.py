#!/usr/bin/env python3
"""Record what vLLM's own V1 Sampler does on the bundled fixture logits.

For every fixture in fixtures/smollm2 and fixtures/edge and every case below,
this builds one request the way vLLM's model runner does (SamplingParams ->
CachedRequestState -> InputBatch with vLLM's built-in logits processors ->
SamplingMetadata) and calls vllm.v1.sample.sampler.Sampler on the fixture's
raw logits, on CPU. It intercepts the final op -- torch.ops._C.fused_gumbel_argmax
when sampling, torch.ops._C.greedy_argmax when greedy -- and records the
logits it receives, the exact (float64) softmax of those logits (the
distribution the Gumbel-max draw realises), and real seeded draws: for each
draw seed, the kernel seed vLLM derived from the request's generator and the
token the kernel picked. It also records the error string of parameter sets
vLLM refuses.

Output: fixtures/vllm/<group>__<fixture>.safetensors (see docs/engines/vllm.md).

Usage (from the repository root, after scripts/reference/vllm/setup.sh):
    scripts/reference/vllm/.venv/bin/python scripts/reference/vllm/record.py          # write
    scripts/reference/vllm/.venv/bin/python scripts/reference/vllm/record.py --check  # regenerate in memory, diff, exit 1 on any difference
"""

import argparse
import json
import os
import sys
import types
from pathlib import Path

os.environ.setdefault("VLLM_LOGGING_LEVEL", "ERROR")

import numpy as np  # noqa: E402
import torch  # noqa: E402
from safetensors.numpy import load_file, save  # noqa: E402

import vllm  # noqa: E402
from vllm import SamplingParams  # noqa: E402
from vllm.config import VllmConfig  # noqa: E402
from vllm.v1.sample.logits_processor import build_logitsprocs  # noqa: E402
from vllm.v1.sample.sampler import Sampler  # noqa: E402
from vllm.v1.worker.gpu_input_batch import CachedRequestState, InputBatch  # noqa: E402

REPO = Path(__file__).resolve().parents[3]
OUT = REPO / "fixtures" / "vllm"
# The shared --check (standard library only: it leaves torch's kernel
# choice alone, unlike fixturelib).
sys.path.insert(0, str(REPO / "scripts" / "reference"))
import textcheck  # noqa: E402
FORMAT = "sampling-parity-vllm/1"
DRAWS = 16  # seeded draws per sampled case
STEPS = 3  # consecutive steps on one request generator, per sampled case
SPARSE_MAX = 2048  # store every finite final logit up to this many, else the top TOP
TOP = 256

MODEL_CASES = [
    ("t1", {}),
    ("t07", {"temperature": 0.7}),
    ("greedy", {"temperature": 0.0}),
    ("t0005", {"temperature": 0.005}),
    ("k40", {"temperature": 0.7, "top_k": 40}),
    ("k50", {"top_k": 50}),
    ("p09", {"temperature": 0.7, "top_p": 0.9}),
    ("k40p09", {"temperature": 0.7, "top_k": 40, "top_p": 0.9}),
    ("minp05", {"temperature": 0.7, "min_p": 0.05}),
    ("minp02k40p08", {"min_p": 0.02, "top_k": 40, "top_p": 0.8}),
    ("rep13_greedy", {"temperature": 0.0, "repetition_penalty": 1.3}),
    ("rep13_k40", {"temperature": 0.7, "top_k": 40, "repetition_penalty": 1.3}),
    ("freq05_pres03", {"temperature": 0.7, "frequency_penalty": 0.5, "presence_penalty": 0.3}),
    ("rep07_freqneg_k100", {"repetition_penalty": 0.7, "frequency_penalty": -0.4, "top_k": 100}),
    ("bias_allowed", {"temperature": 0.9, "logit_bias": "top", "allowed_token_ids": "top"}),
    ("combo", {"temperature": 0.8, "top_k": 60, "top_p": 0.85, "min_p": 0.02,
               "repetition_penalty": 1.2, "frequency_penalty": 0.3, "presence_penalty": 0.2,
               "logit_bias": "top"}),
]

EDGE_CASES = [
    ("t1", {}),
    ("greedy", {"temperature": 0.0}),
    ("t07", {"temperature": 0.7}),
    ("k1", {"top_k": 1}),
    ("k2", {"top_k": 2}),
    ("k5", {"top_k": 5}),
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
]

REJECTED = [
    {"temperature": -0.5},
    {"temperature": 2.5},
    {"temperature": float("inf")},
    {"top_p": 0.0},
    {"top_p": 1.5},
    {"temperature": 0.0, "top_p": 0.0},
    {"top_k": -2},
    {"top_k": 2.0},
    {"min_p": 1.5},
    {"presence_penalty": 2.5},
    {"frequency_penalty": -3.0},
    {"repetition_penalty": 0.0},
    {"repetition_penalty": float("nan")},
    {"n": 0},
    {"n": 2, "temperature": 0.0},
    {"max_tokens": 0},
    {"min_tokens": -1},
]


def fnv1a64(data: bytes) -> str:
    h = 0xCBF29CE484222325
    for b in data:
        h ^= b
        h = (h * 0x100000001B3) & 0xFFFFFFFFFFFFFFFF
    return f"{h:016x}"


def top_ids(logits: np.ndarray, n: int) -> list[int]:
    """The n largest finite logits' ids (ties by id), for bias/allowed cases."""
    order = sorted(range(len(logits)), key=lambda i: (-float(logits[i]), i))
    return [i for i in order if np.isfinite(logits[i])][:n]


def resolve(kwargs: dict, logits: np.ndarray) -> dict:
    """Turns the 'top' placeholders into concrete token ids for this fixture."""
    kw = dict(kwargs)
    ids = top_ids(logits, 20)
    if kw.get("logit_bias") == "top":
        # Lift the 11th..13th most likely, push down the first, one very large.
        bias = {}
        if len(ids) > 12:
            bias = {ids[10]: 2.5, ids[11]: 1.25, ids[12]: 0.5, ids[0]: -1.75}
        elif ids:
            bias = {ids[-1]: 1.5, ids[0]: -0.5}
        kw["logit_bias"] = bias
    if kw.get("allowed_token_ids") == "top":
        allowed = ids[:16] + [i for i in range(0, len(logits), max(1, len(logits) // 7))][:7]
        kw["allowed_token_ids"] = sorted(set(allowed))
    return kw


class Run:
    """vLLM's sampler with its final op intercepted."""

    def __init__(self) -> None:
        self.config = VllmConfig()
        self.device = torch.device("cpu")
        self.sampler = Sampler()
        self.captured: dict = {}
        gumbel = torch.ops._C.fused_gumbel_argmax
        greedy = torch.ops._C.greedy_argmax

        def gumbel_hook(logits, seeds):
            self.captured["logits"] = logits.clone()
            self.captured["seeds"] = seeds.clone()
            return gumbel(logits, seeds)

        def greedy_hook(logits):
            self.captured["logits"] = logits.clone()
            self.captured["greedy"] = True
            return greedy(logits)

        torch.ops._C.fused_gumbel_argmax = gumbel_hook
        torch.ops._C.greedy_argmax = greedy_hook

    def request(self, params: SamplingParams, prompt: list[int], output: list[int], vocab: int):
        generator = None
        if params.seed is not None:
            generator = torch.Generator(device=self.device)
            generator.manual_seed(params.seed)
        logitsprocs = build_logitsprocs(self.config, self.device, False, False)
        n = len(prompt) + len(output) + 8
        batch = InputBatch(
            max_num_reqs=1,
            max_model_len=n,
            max_num_batched_tokens=n,
            device=self.device,
            vocab_size=vocab,
            block_sizes=[16],
            max_num_blocks_per_req=[(n + 15) // 16],
            logitsprocs=logitsprocs,
        )
        state = CachedRequestState(
            req_id="r0",
            prompt_token_ids=list(prompt),
            mm_features=[],
            sampling_params=params,
            generator=generator,
            block_ids=([0],),
            num_computed_tokens=len(prompt) + len(output),
            output_token_ids=list(output),
        )
        batch.add_request(state)
        batch.refresh_metadata()
        return batch

    def step(self, batch, logits: np.ndarray):
        self.captured = {}
        x = torch.from_numpy(logits.astype(np.float32).copy()).unsqueeze(0)
        out = self.sampler(x, batch.sampling_metadata)
        token = int(out.sampled_token_ids[0, 0])
        return token, dict(self.captured)


def exact_softmax(x: np.ndarray) -> np.ndarray:
    x = x.astype(np.float64)
    m = x.max()
    if m == -np.inf:
        p = np.zeros_like(x)
        p[0] = 1.0
        return p
    e = np.exp(x - m)
    return e / e.sum()


def record_case(run: Run, logits, prompt, output, name, kwargs, tensors, cases):
    vocab = len(logits)
    entry = {"name": name, "params": kwargs}
    try:
        params = SamplingParams(**kwargs)
        params.verify(types.SimpleNamespace(get_vocab_size=lambda: vocab, max_logprobs=20, is_diffusion=False),
                      None, None, None)
        batch = run.request(params, prompt, output, vocab)
        token, cap = run.step(batch, logits)
    except Exception as e:  # vLLM refused or failed: record its message
        entry["error"] = f"{type(e).__name__}: {e}"
        cases.append(entry)
        return
    final = cap["logits"][0].numpy().astype(np.float32)
    entry["fnv1a64"] = fnv1a64(final.tobytes())
    finite = np.flatnonzero(np.isfinite(final))
    entry["finite"] = int(len(finite))
    if np.isposinf(final).any() or np.isnan(final).any():
        entry["nonfinite"] = True
    if cap.get("greedy"):
        entry["greedy_token"] = token
        stored = np.array([token], dtype=np.int64)
    elif len(finite) <= SPARSE_MAX:
        stored = finite.astype(np.int64)
    else:
        stored = np.array(top_ids(final, TOP), dtype=np.int64)
    entry["stored"] = int(len(stored))
    tensors[f"{name}.ids"] = stored
    tensors[f"{name}.final"] = final[stored]
    if not cap.get("greedy"):
        tensors[f"{name}.probs"] = exact_softmax(final)[stored]
        seeds, kseeds, tokens = [], [], []
        for j in range(DRAWS):
            seed = 1000 + 7919 * j
            p = SamplingParams(**{**kwargs, "seed": seed})
            b = run.request(p, prompt, output, vocab)
            t, c = run.step(b, logits)
            seeds.append(seed)
            kseeds.append(int(c["seeds"][0]))
            tokens.append(t)
        tensors[f"{name}.draw_seeds"] = np.array(seeds, dtype=np.int64)
        tensors[f"{name}.kernel_seeds"] = np.array(kseeds, dtype=np.int64)
        tensors[f"{name}.draw_tokens"] = np.array(tokens, dtype=np.int64)
        # One request, STEPS consecutive steps: its generator advances once a step.
        p = SamplingParams(**{**kwargs, "seed": 42})
        b = run.request(p, prompt, output, vocab)
        steps = []
        for _ in range(STEPS):
            t, c = run.step(b, logits)
            steps.append([int(c["seeds"][0]), t])
        entry["steps_seed"] = 42
        entry["steps"] = steps
    cases.append(entry)


def rejected_errors() -> list[dict]:
    out = []
    for kw in REJECTED:
        try:
            SamplingParams(**kw)
            out.append({"params": kw, "error": None})
        except Exception as e:
            out.append({"params": kw, "error": str(e)})
    return out


def jsonable(kw: dict) -> dict:
    out = {}
    for k, v in kw.items():
        if isinstance(v, float) and not np.isfinite(v):
            v = str(v)
        if isinstance(v, dict):
            v = {str(a): b for a, b in v.items()}
        out[k] = v
    return out


def build() -> dict[str, bytes]:
    run = Run()
    files = {}
    sources = sorted((REPO / "fixtures" / "smollm2").glob("*.safetensors")) + sorted(
        (REPO / "fixtures" / "edge").glob("*.safetensors")
    )
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
        for name, kwargs in case_list:
            record_case(run, logits, prompt, output, name, resolve(kwargs, logits), tensors, cases)
        for c in cases:
            c["params"] = jsonable(c["params"])
        metadata = {
            "format": FORMAT,
            "source": f"{group}/{src.name}",
            "prompt_len": str(prompt_len),
            "vllm_version": vllm.__version__,
            "torch_version": torch.__version__,
            "cpu_capability": torch.backends.cpu.get_cpu_capability(),
            "cases": json.dumps(cases, sort_keys=True),
        }
        if group == "smollm2" and src.stem == "write_k60":
            metadata["rejected"] = json.dumps(
                [{"params": jsonable(r["params"]), "error": r["error"]} for r in rejected_errors()],
                sort_keys=True,
            )
        files[f"{group}__{src.stem}.safetensors"] = save(tensors, metadata=metadata)
        print(f"record.py: {group}/{src.name}: {len(cases)} cases", file=sys.stderr)
    return files



def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--check", action="store_true",
                    help="regenerate in memory and fail with a diff if fixtures/vllm differs")
    args = ap.parse_args()
    files = build()
    if args.check:
        existing = {p.name for p in OUT.glob("*.safetensors")} if OUT.exists() else set()
        return textcheck.check_files(
            OUT, files, existing, "record.py",
            "scripts/reference/vllm/.venv/bin/python scripts/reference/vllm/record.py")
    OUT.mkdir(parents=True, exist_ok=True)
    for name, data in files.items():
        (OUT / name).write_bytes(data)
    print(f"record.py: wrote {len(files)} files to {OUT}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
