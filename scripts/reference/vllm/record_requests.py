#!/usr/bin/env python3
"""Record the SamplingParams vLLM 0.32.0 builds for a chat request, from a model's generation config.

For every server setup below (a model's generation_config.json, the
`--generation-config` mode: "auto", "vllm" or another folder, and an
`--override-generation-config` dict) this builds vLLM's own
`vllm.config.ModelConfig` for a local model folder (a config.json of a small
Llama, no weights: nothing is loaded) and calls, for every request body,
exactly what `OpenAIServingChat` calls (vllm/entrypoints/openai/chat_completion/serving.py):

- `ModelConfig.get_diff_sampling_param()` (vllm/config/model.py): the defaults
  the server merges, recorded as `defaults`;
- `ChatCompletionRequest(**body)` (the protocol's own validation);
- `get_max_tokens(...)` (vllm/entrypoints/serve/utils/api_utils.py) with the
  server's `override_max_tokens`, computed as `OpenAIServingChat.__init__`
  computes it (its four lines are repeated here: building the serving object
  needs a running engine);
- `request.to_sampling_params(max_tokens, defaults)`: the SamplingParams,
  recorded field by field (or the error it raises).

Output: fixtures/vllm/requests.jsonl (docs/engines/vllm.md, "Generation config").

Usage (from the repository root, after scripts/reference/vllm/setup.sh):
    scripts/reference/vllm/.venv/bin/python scripts/reference/vllm/record_requests.py          # write
    scripts/reference/vllm/.venv/bin/python scripts/reference/vllm/record_requests.py --check  # regenerate in memory, diff, exit 1 on any difference
"""

import argparse
import json
import os
import sys
import tempfile
from pathlib import Path

os.environ.setdefault("VLLM_LOGGING_LEVEL", "ERROR")
os.environ["HF_HUB_OFFLINE"] = "1"

REPO = Path(__file__).resolve().parents[3]
sys.path.insert(0, str(REPO / "scripts" / "reference"))

import transformers  # noqa: E402
import vllm  # noqa: E402
from textcheck import write_or_check  # noqa: E402
from transformers import LlamaConfig  # noqa: E402
from vllm.config import ModelConfig  # noqa: E402
from vllm.entrypoints.openai.chat_completion.protocol import ChatCompletionRequest  # noqa: E402
from vllm.entrypoints.serve.utils.api_utils import get_max_tokens  # noqa: E402

OUT = REPO / "fixtures" / "vllm" / "requests.jsonl"
FORMAT = "sampling-parity-vllm-requests/1"
PROMPT_LEN = 8  # the input length handed to get_max_tokens

# generation_config.json files (None: the folder has none).
FILES = {
    # every field get_diff_sampling_param reads, plus do_sample (not read)
    "every_field": {"do_sample": True, "temperature": 0.6, "top_k": 20, "top_p": 0.95, "min_p": 0.05,
                    "repetition_penalty": 1.1, "presence_penalty": 0.4, "frequency_penalty": 0.3,
                    "max_new_tokens": 256},
    "greedy_flag": {"do_sample": False, "temperature": 0.7, "top_p": 0.8},
    "none": None,
    "other": {"top_k": 5, "temperature": 0.3, "max_new_tokens": 64},
}

# (model's file, --generation-config, --override-generation-config)
SETUPS = [
    ("every_field", "auto", {}),
    ("every_field", "vllm", {}),
    ("every_field", "auto", {"temperature": 0.9, "presence_penalty": 0.0, "max_new_tokens": 32}),
    ("every_field", "vllm", {"top_k": 7, "frequency_penalty": 0.5, "max_new_tokens": 16}),
    ("every_field", "auto", {"top_k": None, "foo": 1}),
    ("every_field", "other", {}),
    ("greedy_flag", "auto", {}),
    ("none", "auto", {}),
    ("none", "auto", {"repetition_penalty": 1.2}),
    ("none", "vllm", {"min_p": 0.1}),
]

BODIES = [
    {},
    {"temperature": 0.2},
    {"top_k": 3, "presence_penalty": 0.0},
    {"frequency_penalty": 0.0, "repetition_penalty": 1.0, "min_p": 0.0},
    {"temperature": 0},
    {"max_tokens": 10, "seed": 3},
    {"max_completion_tokens": 500},
    {"temperature": None, "top_p": None, "top_k": None},
    {"presence_penalty": 2.5},
]

MESSAGES = [{"role": "user", "content": "Say hi."}]

FIELDS = ["temperature", "top_p", "top_k", "min_p", "presence_penalty", "frequency_penalty",
          "repetition_penalty", "seed", "max_tokens"]


def make_folder(root: Path, name: str, gc: dict | None) -> Path:
    d = root / name
    d.mkdir()
    LlamaConfig(vocab_size=49152, hidden_size=64, intermediate_size=128, num_hidden_layers=1,
                num_attention_heads=2, num_key_value_heads=1, max_position_embeddings=2048,
                bos_token_id=1, eos_token_id=2).save_pretrained(d)
    if gc is not None:
        (d / "generation_config.json").write_text(json.dumps(gc))
    return d


def build() -> str:
    lines = [json.dumps({
        "format": FORMAT,
        "vllm_version": vllm.__version__,
        "transformers_version": transformers.__version__,
        "files": FILES,
        "prompt_len": PROMPT_LEN,
    }, sort_keys=True)]
    with tempfile.TemporaryDirectory() as tmp:
        folders = {name: make_folder(Path(tmp), name, gc) for name, gc in FILES.items()}
        for file, mode, override in SETUPS:
            source = mode if mode in ("auto", "vllm") else str(folders[mode])
            mc = ModelConfig(model=str(folders[file]), generation_config=source,
                             override_generation_config=dict(override), skip_tokenizer_init=True)
            defaults = mc.get_diff_sampling_param()
            # OpenAIServingChat.__init__ (chat_completion/serving.py, 0.32.0):
            override_max_tokens = (
                defaults.get("max_tokens")
                if mc.generation_config not in ("auto", "vllm")
                else getattr(mc, "override_generation_config", {}).get("max_new_tokens")
            )
            for body in BODIES:
                rec = {"file": file, "generation_config": mode, "override": override,
                       "defaults": defaults, "body": body}
                try:
                    request = ChatCompletionRequest(messages=MESSAGES, **body)
                    max_tokens = get_max_tokens(
                        mc.max_model_len,
                        request.max_completion_tokens if request.max_completion_tokens is not None
                        else request.max_tokens,
                        PROMPT_LEN, defaults, override_max_tokens)
                    sp = request.to_sampling_params(max_tokens, defaults)
                    rec["sampling_params"] = {f: getattr(sp, f) for f in FIELDS}
                except Exception as e:  # vLLM refuses: record its message
                    rec["error"] = f"{type(e).__name__}: {e}"
                lines.append(json.dumps(rec, sort_keys=True))
            print(f"record_requests.py: {file} / {mode} / {override}: {len(BODIES)} bodies", file=sys.stderr)
    return "\n".join(lines) + "\n"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--check", action="store_true",
                    help="regenerate in memory and fail with a diff if fixtures/vllm/requests.jsonl differs")
    args = ap.parse_args()
    text = build()
    n = text.count("\n") - 1
    return write_or_check(OUT, text, args.check, "vllm/record_requests.py", f" ({n} requests)")


if __name__ == "__main__":
    sys.exit(main())
