#!/usr/bin/env python3
"""Record transformers' beam search on SmolLM2-135M-Instruct, with the
log-probabilities it used.

For a few beam settings on the bundled SmolLM2 prompts (the templated
`input_ids` of fixtures/smollm2/{hello,write}_k0.safetensors) this script runs
the real `generate(num_beams=...)` of the pinned transformers on the GGUF
model (dequantised to float32, as scripts/reference/hf_reference.py loads it)
and records `sequences`, `sequences_scores`, and, for every prefix the model
was run on, the 16 largest values of `log_softmax` of its last logits — the
exact float32 numbers beam search added to its scores. Beam search only ever
keeps candidates among the top 2·num_beams of each beam, so this table is
enough for the Rust replay (`hf-sampling`, module `beam`) to redo the
search and must land on the same beams.

Output: fixtures/beam/smollm2_beams.jsonl (a header line, then one line per
setting). Needs the model: scripts/fetch-model.sh.

Usage (from the repository root, with the environment of setup.sh):
    scripts/reference/.venv/bin/python scripts/reference/beam_smollm2_reference.py
    scripts/reference/.venv/bin/python scripts/reference/beam_smollm2_reference.py --check
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import sys
from pathlib import Path

os.environ["HF_HUB_OFFLINE"] = "1"
os.environ["TRANSFORMERS_OFFLINE"] = "1"

import torch  # noqa: E402
import transformers  # noqa: E402
from safetensors import safe_open  # noqa: E402
from transformers import AutoModelForCausalLM  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
from textcheck import write_or_check  # noqa: E402

OUT = ROOT / "fixtures" / "beam" / "smollm2_beams.jsonl"
FORMAT = "sampling-parity-beam-table/1"
MODEL_NAME = "SmolLM2-135M-Instruct.Q4_1.gguf"
MODEL_SHA256 = "b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53"
TOP = 16

SETTINGS = [
    {"num_beams": 2, "length_penalty": 1.0, "early_stopping": False, "num_return_sequences": 2},
    {"num_beams": 4, "length_penalty": 1.0, "early_stopping": False, "num_return_sequences": 4},
    {"num_beams": 4, "length_penalty": 2.0, "early_stopping": True, "num_return_sequences": 2},
    {"num_beams": 3, "length_penalty": 0.0, "early_stopping": "never", "num_return_sequences": 1},
]
PROMPTS = ["hello_k0", "write_k0"]
MAX_NEW = 10


def prompt_ids(name: str) -> list[int]:
    with safe_open(str(ROOT / "fixtures" / "smollm2" / f"{name}.safetensors"), framework="pt") as f:
        return f.get_tensor("input_ids").tolist()


def load_model(model_dir: Path):
    path = model_dir / MODEL_NAME
    if not path.is_file():
        raise SystemExit(f"{path} not found: run scripts/fetch-model.sh first")
    digest = hashlib.sha256(path.read_bytes()).hexdigest()
    if digest != MODEL_SHA256:
        raise SystemExit(f"{path}: sha256 {digest} != expected {MODEL_SHA256}")
    model = AutoModelForCausalLM.from_pretrained(str(model_dir), gguf_file=MODEL_NAME, dtype=torch.float32)
    model.eval()
    return model


def run(model, prompt_name: str, setting: dict) -> dict:
    ids = torch.tensor([prompt_ids(prompt_name)], dtype=torch.int64)
    n = ids.shape[1]
    table: dict[tuple, list] = {}

    def hook(module, args, kwargs, output):
        input_ids = kwargs.get("input_ids", args[0] if args else None)
        lp = torch.nn.functional.log_softmax(output.logits[:, -1, :].to(torch.float32), dim=-1)
        values, indices = torch.topk(lp, TOP, dim=-1)
        for row in range(input_ids.shape[0]):
            key = tuple(input_ids[row, n:].tolist())
            entry = [[int(i), float(v)] for i, v in zip(indices[row].tolist(), values[row].tolist())]
            if key in table and table[key] != entry:
                raise SystemExit(f"prefix {key} gave two different log-probabilities")
            table[key] = entry

    handle = model.register_forward_hook(hook, with_kwargs=True)
    try:
        with torch.inference_mode():
            g = model.generate(
                ids,
                attention_mask=torch.ones_like(ids),
                do_sample=False,
                max_new_tokens=MAX_NEW,
                use_cache=False,
                output_scores=True,
                return_dict_in_generate=True,
                **setting,
            )
    finally:
        handle.remove()
    gc = model.generation_config
    eos = gc.eos_token_id if isinstance(gc.eos_token_id, list) else [gc.eos_token_id]
    return {
        "prompt": prompt_name,
        "prompt_ids": ids[0].tolist(),
        "kwargs": {**setting, "max_new_tokens": MAX_NEW},
        "eos_token_ids": eos,
        "pad_token_id": gc.pad_token_id,
        "vocab_size": model.config.vocab_size,
        "table": [{"generated": list(k), "top": v} for k, v in sorted(table.items())],
        "sequences": g.sequences.tolist(),
        "sequences_scores": g.sequences_scores.tolist(),
    }


def render(model_dir: Path) -> str:
    model = load_model(model_dir)
    header = {
        "format": FORMAT,
        "torch_version": torch.__version__,
        "transformers_version": transformers.__version__,
        "model": MODEL_NAME,
        "gguf_sha256": MODEL_SHA256,
        "top": TOP,
        "generator": "scripts/reference/beam_smollm2_reference.py",
    }
    lines = [json.dumps(header)]
    for p in PROMPTS:
        for s in SETTINGS:
            lines.append(json.dumps(run(model, p, s)))
    return "\n".join(lines) + "\n"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--check", action="store_true", help="regenerate and compare with the committed file")
    parser.add_argument("--model-dir", type=Path, default=ROOT / ".cache" / "models")
    args = parser.parse_args()
    torch.set_num_threads(1)
    transformers.logging.set_verbosity_error()
    text = render(args.model_dir)
    return write_or_check(
        OUT, text, args.check, "beam_smollm2_reference.py",
        on_diff=" (float32 logits can differ in the last bits on another CPU)",
    )


if __name__ == "__main__":
    sys.exit(main())
