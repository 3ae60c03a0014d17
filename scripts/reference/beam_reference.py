#!/usr/bin/env python3
"""Record transformers' beam search on a deterministic toy language model.

The toy model's next-token logits are a fixed function of the whole prefix
(64-bit SplitMix hashing of the token ids, turned into float32 values), so the
Rust crate `hf-sampling` (module `beam`) computes bit-identical logits
and can replay `generate(num_beams=...)` step by step. For every configuration
in `configs()` this script runs the real `model.generate` of the pinned
transformers and writes its `sequences` and `sequences_scores`, together with
the toy model's logits for the prompt (so the Rust side can check that its toy
model is the same function).

Output: fixtures/beam/transformers_beams.jsonl. The first line is a header
(format, torch and transformers versions); every other line is one
configuration.

Usage (from the repository root, with the environment of setup.sh):
    scripts/reference/.venv/bin/python scripts/reference/beam_reference.py
    scripts/reference/.venv/bin/python scripts/reference/beam_reference.py --check

--check regenerates everything in memory and compares it with the committed
file line by line; any difference prints a unified diff and exits 1.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

os.environ["HF_HUB_OFFLINE"] = "1"
os.environ["TRANSFORMERS_OFFLINE"] = "1"

import torch  # noqa: E402
import transformers  # noqa: E402
from transformers import GenerationMixin, PreTrainedConfig, PreTrainedModel  # noqa: E402
from transformers.modeling_outputs import CausalLMOutputWithPast  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
from textcheck import write_or_check  # noqa: E402

OUT = ROOT / "fixtures" / "beam" / "transformers_beams.jsonl"
FORMAT = "sampling-parity-beam/1"
MASK = (1 << 64) - 1


def splitmix(x: int) -> int:
    """One SplitMix64 step (Steele, Lea & Flood 2014), on Python ints masked
    to 64 bits: the same integers the Rust side computes with wrapping ops."""
    x = (x + 0x9E3779B97F4A7C15) & MASK
    z = ((x ^ (x >> 30)) * 0xBF58476D1CE4E5B9) & MASK
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & MASK
    return z ^ (z >> 31)


def toy_logits(model: dict, ids: list[int]) -> list[float]:
    """Next-token logits of the toy model after `ids` (prompt included).

    Each value is computed exactly in float64 and then rounded once to
    float32: a 24-bit hash fraction scaled to [-4, 4), plus `eos_slope` times
    the sequence length on the eos token (so ending grows likelier with
    length)."""
    h = splitmix(model["seed"])
    for t in ids:
        h = splitmix(h ^ t)
    out = []
    for v in range(model["vocab"]):
        z = splitmix((h + v) & MASK)
        x = (z >> 40) / float(1 << 24) * 8.0 - 4.0
        if v == model["eos"]:
            x += model["eos_slope"] * len(ids)
        out.append(x)
    return torch.tensor(out, dtype=torch.float64).to(torch.float32).tolist()


class ToyConfig(PreTrainedConfig):
    model_type = "sampling_parity_toy_lm"

    def __init__(self, vocab_size: int = 10, **kwargs) -> None:
        self.vocab_size = vocab_size
        kwargs.setdefault("use_cache", False)
        super().__init__(**kwargs)


class ToyLM(PreTrainedModel, GenerationMixin):
    """`toy_logits` at the last position of every row; no weights (one dummy
    parameter so `.device` and `.dtype` resolve)."""

    config_class = ToyConfig
    main_input_name = "input_ids"

    def __init__(self, config: ToyConfig, model: dict) -> None:
        super().__init__(config)
        self.toy = model
        self.anchor = torch.nn.Parameter(torch.zeros(1))
        self.post_init()
        self.generation_config.use_cache = False
        self.generation_config.eos_token_id = model.get("eos_ids", model["eos"])
        self.generation_config.pad_token_id = model["pad"]

    def _init_weights(self, module) -> None:
        pass

    def forward(self, input_ids=None, attention_mask=None, **kwargs):
        b, n = input_ids.shape
        logits = torch.zeros((b, n, self.config.vocab_size), dtype=torch.float32)
        for row in range(b):
            logits[row, -1] = torch.tensor(toy_logits(self.toy, input_ids[row].tolist()))
        return CausalLMOutputWithPast(logits=logits)


MODELS = [
    {"name": "m1", "seed": 1, "vocab": 10, "eos": 2, "pad": 1, "eos_slope": 0.5},
    # pad 0: transformers fills finished rows with eos (`pad or eos` is falsy for 0).
    {"name": "m2", "seed": 2, "vocab": 12, "eos": 3, "pad": 0, "eos_slope": 0.375},
    {"name": "m3", "seed": 3, "vocab": 16, "eos": 5, "pad": 1, "eos_slope": 0.25},
    # eos never boosted: beams run to max_new_tokens unless eos wins by chance.
    {"name": "m4", "seed": 4, "vocab": 10, "eos": 2, "pad": 1, "eos_slope": 0.0},
    {"name": "m5", "seed": 5, "vocab": 11, "eos": 0, "pad": 1, "eos_slope": 1.0},
    # Two eos ids (the slope favours the first): 3 * num_beams candidates per step.
    {"name": "m6", "seed": 6, "vocab": 12, "eos": 2, "eos_ids": [2, 7], "pad": 1, "eos_slope": 0.375},
]
PROMPTS = {"m1": [7, 4], "m2": [5, 6, 7], "m3": [9], "m4": [3, 8], "m5": [2, 4, 6], "m6": [4, 9]}
MAX_NEW = {"m3": 9, "m6": 7}


def configs() -> list[dict]:
    out = []
    for m in MODELS:
        for num_beams in (2, 4):
            for length_penalty in (1.0, 0.0, 2.0, -0.5):
                for early_stopping in (False, True, "never"):
                    for nrs in sorted({1, num_beams}):
                        max_new = MAX_NEW.get(m["name"], 6)
                        es = {False: "F", True: "T", "never": "N"}[early_stopping]
                        out.append(
                            {
                                "name": f"{m['name']}_b{num_beams}_lp{length_penalty}_{es}_r{nrs}",
                                "model": {k: m[k] for k in ("seed", "vocab", "eos", "eos_ids", "pad", "eos_slope") if k in m},
                                "prompt": PROMPTS[m["name"]],
                                "kwargs": {
                                    "num_beams": num_beams,
                                    "do_sample": False,
                                    "length_penalty": length_penalty,
                                    "early_stopping": early_stopping,
                                    "num_return_sequences": nrs,
                                    "max_new_tokens": max_new,
                                },
                            }
                        )
    return out


def run(config: dict) -> dict:
    model = ToyLM(ToyConfig(vocab_size=config["model"]["vocab"]), config["model"]).eval()
    ids = torch.tensor([config["prompt"]], dtype=torch.int64)
    with torch.inference_mode():
        g = model.generate(
            ids,
            attention_mask=torch.ones_like(ids),
            output_scores=True,
            return_dict_in_generate=True,
            **config["kwargs"],
        )
    return {
        **config,
        "first_logits": toy_logits(config["model"], config["prompt"]),
        "sequences": g.sequences.tolist(),
        "sequences_scores": g.sequences_scores.tolist(),
    }


def render() -> str:
    header = {
        "format": FORMAT,
        "torch_version": torch.__version__,
        "transformers_version": transformers.__version__,
        "generator": "scripts/reference/beam_reference.py",
    }
    lines = [json.dumps(header)]
    lines += [json.dumps(run(c)) for c in configs()]
    return "\n".join(lines) + "\n"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--check", action="store_true", help="regenerate and compare with the committed file")
    args = parser.parse_args()
    torch.set_num_threads(1)
    transformers.logging.set_verbosity_error()
    text = render()
    summary = f" ({text.count(chr(10)) - 1} configurations)"
    return write_or_check(OUT, text, args.check, "beam_reference.py", summary)


if __name__ == "__main__":
    sys.exit(main())
