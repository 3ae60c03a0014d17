#!/usr/bin/env python3
"""Record the tokens transformers' `generate(do_sample=True)` draws for a torch seed.

The Rust replica of torch's CPU generator and `torch.multinomial`
(crates/replicas/src/torch/generator.rs) is checked against these files; see
docs/engines/torch-seeded.md. Everything here is real torch 2.15.0 and
transformers 5.23.0 on CPU; nothing re-implements a sampler.

Three files under fixtures/torch/, JSON lines, the first line of each a
header with the versions:

  generator.jsonl    after torch.manual_seed(s): the bits of two successive
                     torch.empty(n, dtype=...).exponential_() calls (float64
                     and float32), and streams of torch.multinomial(probs, 1)
                     exactly as `_sample` calls it (probs = softmax of the
                     committed scores, shape [1, V]), 64 calls in a row, and
                     16 calls on a batch of three rows ([3, V]).
  draws.jsonl        single-step draws: for every committed fixture (smollm2/
                     and edge/) and every sampling setting it stores, the
                     token of `model.generate(ids, max_new_tokens=1, **kwargs)`
                     after `torch.manual_seed(seed)`, for several seeds. The
                     model returns the fixture's logits (and the script checks
                     that the processed scores are the committed ones), and
                     an FNV-1a digest of the float32 bits of torch's probs.
  generations.jsonl  multi-step generations on a fixed-logits model whose
                     logits at step t (t = 0 for the first new token) are a
                     deterministic function of t: `cycle` takes fixture
                     t mod n of a list, `roll` takes `logits[(i + shift*t) % V]`
                     of one fixture. The generator state carries on between
                     steps, as in any real generation.

Run with the reference venv (scripts/reference/setup.sh), after
scripts/fetch-model.sh (or pass --no-model to skip the real-model file):

    scripts/reference/.venv/bin/python scripts/reference/torch_draws.py
    scripts/reference/.venv/bin/python scripts/reference/torch_draws.py --check

`--check` regenerates everything in memory and fails with a diff if any line
differs from the committed files.
"""

from __future__ import annotations

import argparse
import difflib
import json
import os
import sys
import warnings
from pathlib import Path

os.environ["HF_HUB_OFFLINE"] = "1"
os.environ["TRANSFORMERS_OFFLINE"] = "1"

import torch  # noqa: E402
import transformers  # noqa: E402
from safetensors import safe_open  # noqa: E402
from transformers import GenerationMixin, PreTrainedModel  # noqa: E402
from transformers.modeling_outputs import CausalLMOutputWithPast  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent))
from hf_reference import (  # noqa: E402
    MODEL_NAME,
    MODEL_SHA256,
    PROMPTS,
    STANDARD_SETTINGS,
    FixedLogitsConfig,
    load_model,
    templated_prompt_ids,
)

REPO = Path(__file__).resolve().parents[2]
FORMAT = "sampling-parity-torch-draws/1"

# Seeds for every (fixture, setting). 2**63 + 5 shows that only the low 32
# bits of a seed reach the engine; 2**31 - 1 and 31337 are just more streams.
SEEDS = [0, 1, 7, 42, 1234, 31337, 2**31 - 1, 2**63 + 5]
# Broad distributions get more seeds, so that many draws are not the mode.
EXTRA_SEEDS = list(range(1000, 1024))
BROAD = {"smollm2/write_k60", "smollm2/write_k0", "smollm2/write_k7", "edge/int_ties_v1000", "edge/all_equal_v8"}

GENERATOR_SEEDS = [0, 1, 5489, 2**32 + 5, 2**64 - 1]
STREAMS = [
    ("smollm2/write_k60", "t15", 0),
    ("smollm2/write_k60", "p09", 1234),
    ("smollm2/write_k0", "default", 42),
    ("edge/int_ties_v1000", "minp05", 7),
    ("edge/all_equal_v8", "default", 1),
    ("edge/huge_1e30", "p05", 3),
    ("edge/v2", "p09_t1", 11),
]

BATCH = ("smollm2/write_k60", ["t15", "default", "p09"], 99)

CYCLE_A = ["smollm2/write_k60", "smollm2/write_k0", "smollm2/hello_k0", "smollm2/write_k7"]
GEN_SETTINGS_A = ["t07_default", "t07", "k40", "p09", "k40p09", "minp05", "typ09", "eps", "eta",
                  "k40p09rep", "default", "t15", "rep13"]


def log(msg: str) -> None:
    print(f"torch_draws: {msg}", file=sys.stderr, flush=True)


def read_fixture(name: str) -> dict:
    path = REPO / "fixtures" / f"{name}.safetensors"
    with safe_open(str(path), framework="pt") as f:
        meta = f.metadata()
        tensors = {k: f.get_tensor(k) for k in f.keys()}
    return {"name": name, "meta": meta, "settings": json.loads(meta["settings"]), **tensors}


def fixture_names() -> list[str]:
    root = REPO / "fixtures"
    return sorted(p.relative_to(root).with_suffix("").as_posix()
                  for sub in ("smollm2", "edge") for p in (root / sub).glob("*.safetensors"))


class StepLogitsLM(PreTrainedModel, GenerationMixin):
    """A model whose next-token logits are `step_logits(t)`, t = new tokens so far.

    It has no weights (one dummy parameter so `.device`/`.dtype` resolve) and
    no cache; generate feeds it the whole sequence each step, so the step is
    `input_ids.shape[1] - prompt_len`.
    """

    config_class = FixedLogitsConfig
    main_input_name = "input_ids"

    def __init__(self, config: FixedLogitsConfig, prompt_len: int, step_logits) -> None:
        super().__init__(config)
        self.prompt_len = prompt_len
        self.step_logits = step_logits
        self.anchor = torch.nn.Parameter(torch.zeros(1))
        self.post_init()
        self.generation_config.use_cache = False

    def _init_weights(self, module) -> None:
        pass

    def forward(self, input_ids=None, attention_mask=None, **kwargs):
        b, n = input_ids.shape
        row = self.step_logits(n - self.prompt_len)
        assert row.dtype == torch.float32 and row.numel() == self.config.vocab_size
        return CausalLMOutputWithPast(logits=row.view(1, 1, -1).expand(b, 1, -1))


def make_model(vocab: int, prompt_len: int, step_logits, eos: int | None) -> StepLogitsLM:
    model = StepLogitsLM(FixedLogitsConfig(vocab_size=vocab), prompt_len, step_logits)
    model.generation_config.eos_token_id = eos
    model.generation_config.pad_token_id = eos
    model.eval()
    return model


def generate(model, ids: torch.Tensor, seed: int, max_new_tokens: int, kwargs: dict):
    torch.manual_seed(seed)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with torch.inference_mode():
            g = model.generate(ids, attention_mask=torch.ones_like(ids), max_new_tokens=max_new_tokens,
                               output_scores=True, return_dict_in_generate=True, **kwargs)
    return g.sequences[0, ids.shape[1]:].tolist(), g.scores


def line(obj) -> str:
    return json.dumps(obj, ensure_ascii=False)


def header(kind: str, description: str) -> str:
    return line({"format": FORMAT, "kind": kind, "torch_version": torch.__version__,
                 "transformers_version": transformers.__version__, "description": description})


def bits64(t: torch.Tensor) -> list[str]:
    return [f"{x & 0xFFFFFFFFFFFFFFFF:016x}" for x in t.view(torch.int64).tolist()]


def bits32(t: torch.Tensor) -> list[str]:
    return [f"{x & 0xFFFFFFFF:08x}" for x in t.view(torch.int32).tolist()]


def fnv1a64(t: torch.Tensor) -> str:
    """FNV-1a (64-bit) over the float32 bit patterns, each as 4 little-endian bytes."""
    h = 0xCBF29CE484222325
    for b in t.contiguous().reshape(-1).view(torch.uint8).tolist():
        h = ((h ^ b) * 0x100000001B3) & 0xFFFFFFFFFFFFFFFF
    return f"{h:016x}"


def record_generator(fixtures: dict) -> list[str]:
    out = [header("generator", "bits of exponential_() after torch.manual_seed, and multinomial streams")]
    for seed in GENERATOR_SEEDS:
        torch.manual_seed(seed)
        f64a = torch.empty(5, dtype=torch.float64).exponential_()
        f64b = torch.empty(3, dtype=torch.float64).exponential_()
        torch.manual_seed(seed)
        f32a = torch.empty(5, dtype=torch.float32).exponential_()
        f32b = torch.empty(3, dtype=torch.float32).exponential_()
        out.append(line({"seed": seed, "exponential_f64": [bits64(f64a), bits64(f64b)],
                         "exponential_f32": [bits32(f32a), bits32(f32b)]}))
    for name, setting, seed in STREAMS:
        scores = fixtures[name][f"scores.{setting}"]
        # Exactly `_sample`: softmax over the last dim of a [1, V] float32 tensor.
        probs = torch.nn.functional.softmax(scores.view(1, -1), dim=-1)
        torch.manual_seed(seed)
        tokens = [int(torch.multinomial(probs, num_samples=1).squeeze(1)) for _ in range(64)]
        out.append(line({"fixture": name, "setting": setting, "seed": seed, "multinomial": tokens}))
    # A batch: one exponential_ over the [B, V] tensor in memory order, so row
    # r races with the draws after those of rows 0..r-1.
    name = BATCH[0]
    fx = fixtures[name]
    probs = torch.nn.functional.softmax(torch.stack([fx[f"scores.{s}"] for s in BATCH[1]]), dim=-1)
    torch.manual_seed(BATCH[2])
    rows = [torch.multinomial(probs, num_samples=1).squeeze(1).tolist() for _ in range(16)]
    out.append(line({"fixture": name, "settings": BATCH[1], "seed": BATCH[2], "multinomial_batch": rows}))
    return out


def record_draws(fixtures: dict) -> list[str]:
    out = [header("draws", "single-step generate(do_sample=True, max_new_tokens=1) tokens per seed")]
    n = 0
    for name, fx in fixtures.items():
        ids = fx["input_ids"].view(1, -1)
        logits = fx["logits"]
        model = make_model(logits.numel(), ids.shape[1], lambda t, x=logits: x, eos=None)
        seeds = SEEDS + (EXTRA_SEEDS if name in BROAD else [])
        for s in fx["settings"]:
            if not s["kwargs"].get("do_sample", False):
                continue
            draws = []
            for seed in seeds:
                tokens, scores = generate(model, ids, seed, 1, s["kwargs"])
                got = scores[0][0]
                want = fx[f"scores.{s['name']}"]
                if not torch.equal(got.view(torch.int32), want.view(torch.int32)):
                    raise SystemExit(f"{name}/{s['name']}: scores differ from the committed fixture")
                draws.append([seed, tokens[0]])
            n += len(draws)
            # Digest of torch's probabilities, so the Rust side can show its
            # softmax is torch's bit for bit (not just close enough to draw alike).
            probs = torch.nn.functional.softmax(fx[f"scores.{s['name']}"].view(1, -1), dim=-1)
            out.append(line({"fixture": name, "setting": s["name"], "kwargs": s["kwargs"],
                             "probs_fnv1a64": fnv1a64(probs), "draws": draws}))
        log(f"  {name}: {n} draws so far")
    return out


def generation_specs(fixtures: dict) -> list[dict]:
    specs = []
    a0 = fixtures[CYCLE_A[0]]
    settings_a = {s["name"]: s["kwargs"] for s in a0["settings"]}
    for setting in GEN_SETTINGS_A:
        for seed in (0, 1234):
            specs.append({"name": f"cycle_smollm2_{setting}_s{seed}",
                          "table": {"kind": "cycle", "fixtures": CYCLE_A},
                          "prompt": a0["input_ids"].tolist(), "kwargs": settings_a[setting],
                          "seed": seed, "max_new_tokens": 40, "eos_token_id": 2})
    ties = fixtures["edge/int_ties_v1000"]
    for i, kwargs in enumerate([
        dict(do_sample=True, temperature=0.7, top_k=0),
        dict(do_sample=True, top_k=0, top_p=0.5),
        dict(do_sample=True, top_k=100, top_p=0.5),
        dict(do_sample=True, top_k=0, min_p=0.1),
        dict(do_sample=True, temperature=0.7, top_k=40, top_p=0.9, repetition_penalty=1.3),
    ]):
        specs.append({"name": f"roll_int_ties_{i}", "table": {"kind": "roll", "fixture": "edge/int_ties_v1000",
                                                              "shift": 37},
                      "prompt": ties["input_ids"].tolist(), "kwargs": kwargs, "seed": 7 + i,
                      "max_new_tokens": 64, "eos_token_id": None})
    signs = fixtures["edge/rep_penalty_signs"]
    for i, kwargs in enumerate([
        dict(do_sample=True, temperature=0.7, repetition_penalty=1.3),
        dict(do_sample=True, repetition_penalty=0.7),
        dict(do_sample=True, top_k=3, repetition_penalty=2.0),
    ]):
        specs.append({"name": f"roll_rep_signs_{i}", "table": {"kind": "roll", "fixture": "edge/rep_penalty_signs",
                                                               "shift": 3},
                      "prompt": signs["input_ids"].tolist(), "kwargs": kwargs, "seed": 3 + i,
                      "max_new_tokens": 64, "eos_token_id": None})
    return specs


def step_fn(table: dict, fixtures: dict):
    if table["kind"] == "cycle":
        rows = [fixtures[n]["logits"] for n in table["fixtures"]]
        return lambda t: rows[t % len(rows)]
    base = fixtures[table["fixture"]]["logits"]
    v, shift = base.numel(), table["shift"]
    # logits_t[i] = base[(i + shift*t) % V], i.e. torch.roll by -shift*t.
    return lambda t: torch.roll(base, -((shift * t) % v)).contiguous()


def record_generations(fixtures: dict) -> list[str]:
    out = [header("generations", "multi-step generate(do_sample=...) on a model whose logits are a function of the step")]
    for spec in generation_specs(fixtures):
        fn = step_fn(spec["table"], fixtures)
        ids = torch.tensor([spec["prompt"]], dtype=torch.int64)
        model = make_model(fn(0).numel(), ids.shape[1], fn, spec["eos_token_id"])
        tokens, _ = generate(model, ids, spec["seed"], spec["max_new_tokens"], spec["kwargs"])
        out.append(line({**spec, "tokens": tokens}))
        log(f"  {spec['name']}: {len(tokens)} tokens")
    return out


# Real SmolLM2 generations: settings whose scores are -inf outside a small
# kept set, so each step's processed scores can be stored sparsely.
REAL_SETTINGS = ["k40", "k40p09", "minp05", "k40p09rep"]
REAL_SEEDS = [0, 1234]
REAL_NEW_TOKENS = 24


def record_real(model_dir: Path) -> list[str]:
    """Real model generate(do_sample=True) runs: tokens and each step's scores.

    The scores (finite entries only) let the Rust side replay every draw of a
    real generation. Before storing, the draws are replayed here with torch
    itself from the stored scores, which shows that nothing but the one
    multinomial per step touches the generator during a real generate.
    """
    model, tokenizer, _ = load_model(model_dir)
    kwargs_of = dict(STANDARD_SETTINGS)
    out = [line({"format": FORMAT, "kind": "smollm2_generate", "torch_version": torch.__version__,
                 "transformers_version": transformers.__version__, "model": MODEL_NAME,
                 "gguf_sha256": MODEL_SHA256, "eos_token_id": model.generation_config.eos_token_id,
                 "description": "real SmolLM2 generate(do_sample=True) after torch.manual_seed: "
                                "tokens and the finite processed scores of every step"})]
    for prompt_id, prompt in PROMPTS:
        ids = torch.tensor([templated_prompt_ids(tokenizer, prompt)], dtype=torch.int64)
        for setting in REAL_SETTINGS:
            for seed in REAL_SEEDS:
                tokens, scores = generate(model, ids, seed, REAL_NEW_TOKENS, kwargs_of[setting])
                assert len(scores) == len(tokens)
                torch.manual_seed(seed)
                for t, (sc, tok) in enumerate(zip(scores, tokens)):
                    again = int(torch.multinomial(torch.nn.functional.softmax(sc, dim=-1), 1))
                    if again != tok:
                        raise SystemExit(f"{prompt_id}/{setting}/{seed}: step {t} replays as {again}, not {tok}")
                steps = []
                for sc in scores:
                    row = sc[0]
                    kept = torch.nonzero(row > float("-inf")).flatten()
                    steps.append({"kept": kept.tolist(), "scores": [float(x) for x in row[kept].tolist()]})
                out.append(line({"prompt_id": prompt_id, "prompt_ids": ids[0].tolist(), "setting": setting,
                                 "kwargs": kwargs_of[setting], "seed": seed, "vocab_size": scores[0].shape[-1],
                                 "tokens": tokens, "steps": steps}))
                log(f"  {prompt_id}/{setting}/seed {seed}: {tokenizer.decode(tokens)!r}")
    return out


def record_all(model_dir: Path | None) -> dict[str, list[str]]:
    fixtures = {name: read_fixture(name) for name in fixture_names()}
    log(f"{len(fixtures)} fixtures")
    files = {
        "generator.jsonl": record_generator(fixtures),
        "draws.jsonl": record_draws(fixtures),
        "generations.jsonl": record_generations(fixtures),
    }
    if model_dir is not None:
        files["smollm2_generate.jsonl"] = record_real(model_dir)
    return files


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out-dir", type=Path, default=REPO / "fixtures" / "torch")
    ap.add_argument("--check", action="store_true",
                    help="regenerate in memory and compare with --out-dir instead of writing")
    ap.add_argument("--model-dir", type=Path, default=REPO / ".cache" / "models",
                    help=f"folder holding {MODEL_NAME} (scripts/fetch-model.sh) for the real-model generations")
    ap.add_argument("--no-model", action="store_true",
                    help="skip the real-model generations (smollm2_generate.jsonl is then neither written nor checked)")
    ap.add_argument("--threads", type=int, default=1, help="torch intra-op threads (the draws do not depend on it)")
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    transformers.logging.set_verbosity_error()
    log(f"torch {torch.__version__}, transformers {transformers.__version__}")
    files = record_all(None if args.no_model else args.model_dir)
    if args.check:
        failed = False
        for name, lines in files.items():
            path = args.out_dir / name
            old = path.read_text().splitlines() if path.exists() else []
            if old != lines:
                failed = True
                sys.stderr.writelines(difflib.unified_diff([x + "\n" for x in old], [x + "\n" for x in lines],
                                                           f"committed/{name}", f"regenerated/{name}", n=0))
        if failed:
            log("CHECK FAILED; regenerate with: scripts/reference/.venv/bin/python scripts/reference/torch_draws.py")
            return 1
        log(f"check ok: {', '.join(files)} match bit for bit")
        return 0
    args.out_dir.mkdir(parents=True, exist_ok=True)
    for name, lines in files.items():
        (args.out_dir / name).write_text("".join(x + "\n" for x in lines))
        log(f"wrote {args.out_dir / name} ({len(lines) - 1} records)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
