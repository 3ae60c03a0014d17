#!/usr/bin/env python3
"""Record how the real `transformers serve` (5.23.0) answers OpenAI-style request bodies.

This starts transformers' own server (`transformers.cli.serve.Serve`, the class
behind the `transformers serve` command, with `non_blocking=True` as
transformers' own tests run it) on 127.0.0.1 with SmolLM2-135M-Instruct on the
CPU, and POSTs every body in BODIES to /v1/chat/completions and
/v1/completions, once against a model whose generation_config.json says nothing
about sampling ("plain") and once against the same weights with a
generation_config.json that turns sampling on ("sampling"). For every request
it records:

- `status`: the HTTP status (200; 422 for fields outside the endpoint's
  OpenAI params, `BaseHandler._validate_request`; 500 when the server raised);
- `detail`: the 422 text (`{"detail": ...}` of FastAPI's HTTPException);
- `error`: for a 500, the exception the handler raised (type: message);
- `warned`: the fields of the "Ignoring unsupported fields in the request"
  warning (sorted);
- `effective`: the generation config `generate()` really ran with, read from
  the return value of `GenerationMixin._prepare_generation_config` (after
  serve's `_build_generation_config` and generate's merge with the model's
  generation config and transformers' defaults);
- `processors`: the class names of the `LogitsProcessorList` that
  `GenerationMixin._get_logits_processor` built for it;
- `torch_seed`: `torch.initial_seed()` after the request (the recorder calls
  `torch.manual_seed(SENTINEL)` before each one, so a body's `seed` shows).

Only observation is added to the server: wrappers that read those values, and
one instrumentation edit: after the effective config is recorded,
`max_new_tokens` is set to 1 so each request generates one token (it changes
nothing that is recorded). Each recorded `body` is sent with `model` (the local
model directory) and `messages` (chat) or `prompt` (completions) added; those
two fields are not recorded.

The model: scripts/fetch-model.sh's GGUF (the only route to the weights here),
loaded by transformers itself (`from_pretrained(..., gguf_file=...)`, which
dequantises to float32) and saved with `save_pretrained` under
.cache/serve-models/ (git-ignored), once; serve needs a model directory.

Output: fixtures/serve/requests.jsonl (docs/engines/transformers-serve.md).

Usage (from the repository root, after scripts/reference/serve/setup.sh):
    scripts/reference/serve/.venv/bin/python scripts/reference/serve/record.py          # write
    scripts/reference/serve/.venv/bin/python scripts/reference/serve/record.py --check  # regenerate in memory, diff, exit 1 on any difference
"""

import argparse
import ast
import json
import logging
import os
import socket
import subprocess
import sys
import time
from pathlib import Path

# Python's set order (the 422 and warning texts print sets) depends on the
# string hash seed: fix it so a re-run prints the same text.
if os.environ.get("PYTHONHASHSEED") != "0":
    os.environ["PYTHONHASHSEED"] = "0"
    os.execv(sys.executable, [sys.executable, *sys.argv])
os.environ["HF_HUB_OFFLINE"] = "1"
os.environ["TRANSFORMERS_OFFLINE"] = "1"

REPO = Path(__file__).resolve().parents[3]
sys.path.insert(0, str(REPO / "scripts" / "reference"))

import httpx  # noqa: E402
import openai  # noqa: E402
import torch  # noqa: E402
import transformers  # noqa: E402
from textcheck import write_or_check  # noqa: E402
from transformers import AutoModelForCausalLM, AutoTokenizer  # noqa: E402
from transformers.cli.serve import Serve  # noqa: E402
from transformers.cli.serving.chat_completion import (  # noqa: E402
    UNUSED_CHAT_COMPLETION_FIELDS,
    ChatCompletionHandler,
    TransformersCompletionCreateParamsStreaming,
)
from transformers.cli.serving.completion import (  # noqa: E402
    UNUSED_LEGACY_COMPLETION_FIELDS,
    CompletionHandler,
    TransformersTextCompletionCreateParams,
)
from transformers.generation.utils import GenerationMixin  # noqa: E402

OUT = REPO / "fixtures" / "serve" / "requests.jsonl"
FORMAT = "sampling-parity-serve/1"
MODELS_DIR = REPO / ".cache" / "serve-models"
SENTINEL = 20261201

# The generation_config.json of each served model. "plain" is what
# transformers writes for the GGUF model (no sampling fields); "sampling" adds
# the sampling fields many instruct models ship.
SAMPLING_CONFIG = {
    "do_sample": True,
    "temperature": 0.6,
    "top_k": 20,
    "top_p": 0.95,
    "repetition_penalty": 1.1,
    "max_new_tokens": 256,
}

# Sampling-relevant fields of the effective GenerationConfig.
EFFECTIVE = [
    "do_sample", "temperature", "top_k", "top_p", "min_p", "typical_p", "epsilon_cutoff",
    "eta_cutoff", "repetition_penalty", "sequence_bias", "max_new_tokens", "max_length",
    "stop_strings",
]

GC = json.dumps  # the `generation_config` body field is a JSON string

BODIES = [
    {},
    {"temperature": 0.7},
    {"temperature": 0},
    {"temperature": 0.0, "top_p": 0.5},
    {"temperature": 0.7, "top_p": 0.9},
    {"temperature": None, "top_p": None},
    {"temperature": "0.7"},
    {"temperature": "high"},
    {"temperature": True},
    {"top_p": 1.5},
    {"top_k": 40},
    {"min_p": 0.05},
    {"repetition_penalty": 1.3},
    {"do_sample": True},
    {"top_k": 40, "min_p": 0.1, "typical_p": 0.9},
    {"temperature": 0.7, "foo": 1},
    {"presence_penalty": 0.5},
    {"n": 1},
    {"logprobs": True, "top_logprobs": 2},
    {"presence_penalty": 0.3, "n": 2, "logprobs": False, "user": "u"},
    {"best_of": 2, "echo": False},
    {"response_format": {"type": "text"}},
    {"frequency_penalty": 0.5},
    {"frequency_penalty": -0.5},
    {"frequency_penalty": -1.0},
    {"frequency_penalty": 0.3, "temperature": 0.8, "top_p": 0.95},
    {"logit_bias": {"42": 5.0, "7": -100}},
    {"logit_bias": {"x": 1.0}},
    {"logit_bias": {"42": 5.0, "7": -100.0}},
    {"logit_bias": {"42": 5}},
    {"temperature": -1.0},
    {"temperature": [1]},
    {"temperature": 0.7, "top_p": 0.0},
    {"generation_config": GC({"do_sample": True, "num_beams": 1, "top_k": 3})},
    {"seed": 7},
    {"temperature": 0.6, "top_p": 0.9, "frequency_penalty": 0.5, "seed": 7},
    {"max_tokens": 5},
    {"max_completion_tokens": 3},
    {"stop": ["\n\n"]},
    {"stream": True, "temperature": 0.7},
    {"generation_config": GC({"do_sample": True})},
    {"generation_config": GC({"do_sample": True, "top_k": 20})},
    {"generation_config": GC({"do_sample": True, "min_p": 0.1, "top_k": 0}), "temperature": 0.7},
    {"generation_config": GC({"do_sample": True, "temperature": 0.5}), "temperature": 0.9, "top_p": 0.8},
    {"generation_config": GC({"do_sample": True, "temperature": 0.5}), "temperature": 0},
    {"generation_config": GC({"do_sample": True, "repetition_penalty": 1.2}), "frequency_penalty": 0.1},
    {"generation_config": GC({"top_k": 5})},
    {"generation_config": GC({"do_sample": False})},
    {"generation_config": GC({"top_k": None, "temperature": None})},
    {"generation_config": GC({"do_sample": True, "max_new_tokens": 7})},
    {"generation_config": GC({"do_sample": True, "typical_p": 0.9, "epsilon_cutoff": 0.001})},
    {"generation_config": GC({"do_sample": True, "temperature": 0.0})},
    {"generation_config": GC({"max_new_tokens": 0})},
    {"generation_config": GC({"do_sample": True, "my_custom_field": 3})},
    {"generation_config": GC({"do_sample": True}), "seed": 11},
    {"generation_config": {"do_sample": True}},
    {"generation_config": "{not json"},
    {"generation_config": None, "temperature": 0.7},
    {"chat_template_kwargs": {}},
]

ENDPOINTS = {
    "/v1/chat/completions": ("messages", [{"role": "user", "content": "Say hi."}]),
    "/v1/completions": ("prompt", "Hi"),
}


def fetch_gguf() -> Path:
    out = subprocess.run(["bash", str(REPO / "scripts" / "fetch-model.sh")], check=True,
                         capture_output=True, text=True)
    return Path(out.stdout.strip())


def prepare_models() -> dict[str, Path]:
    """The two served model directories (built once from the GGUF)."""
    base = MODELS_DIR / "plain"
    if not (base / "config.json").exists():
        gguf = fetch_gguf()
        tok = AutoTokenizer.from_pretrained(gguf.parent, gguf_file=gguf.name)
        loaded = AutoModelForCausalLM.from_pretrained(gguf.parent, gguf_file=gguf.name, dtype=torch.float32)
        # A model loaded from GGUF refuses save_pretrained: copy its (dequantised)
        # weights into a plain model of the same config.
        model = AutoModelForCausalLM.from_config(loaded.config, dtype=torch.float32)
        model.load_state_dict(loaded.state_dict())
        model.generation_config = loaded.generation_config
        tmp = MODELS_DIR / "plain.part"
        model.save_pretrained(tmp)
        tok.save_pretrained(tmp)
        tmp.rename(base)
    sampling = MODELS_DIR / "sampling"
    sampling.mkdir(parents=True, exist_ok=True)
    for f in base.iterdir():
        link = sampling / f.name
        if f.name != "generation_config.json" and not link.exists():
            link.symlink_to(f)
    plain_gc = json.loads((base / "generation_config.json").read_text())
    (sampling / "generation_config.json").write_text(json.dumps({**plain_gc, **SAMPLING_CONFIG}, indent=2))
    return {"plain": base, "sampling": sampling}


class Observer:
    """Reads what the server did during one request."""

    def __init__(self) -> None:
        self.reset()
        self.warned: list[str] = []
        prepare = GenerationMixin._prepare_generation_config
        get_processors = GenerationMixin._get_logits_processor
        observer = self

        def prepare_hook(model, generation_config, **kwargs):
            config, model_kwargs = prepare(model, generation_config, **kwargs)
            observer.effective = {k: jsonable(getattr(config, k, None)) for k in EFFECTIVE}
            config.max_new_tokens = 1  # instrumentation: one token per request
            return config, model_kwargs

        def processors_hook(model, *args, **kwargs):
            out = get_processors(model, *args, **kwargs)
            observer.processors = [type(p).__name__ for p in out]
            return out

        GenerationMixin._prepare_generation_config = prepare_hook
        GenerationMixin._get_logits_processor = processors_hook
        for cls in (ChatCompletionHandler, CompletionHandler):
            cls.handle_request = self.wrap_handler(cls.handle_request)

        class Capture(logging.Handler):
            def emit(self, record):
                msg = record.getMessage()
                prefix = "Ignoring unsupported fields in the request: "
                if msg.startswith(prefix):
                    observer.warned = sorted(ast.literal_eval(msg[len(prefix):]))

        logging.getLogger("transformers").addHandler(Capture())

    def wrap_handler(self, handle):
        observer = self

        async def wrapped(handler, body, request_id):
            from fastapi import HTTPException

            try:
                return await handle(handler, body, request_id)
            except HTTPException:
                raise
            except Exception as e:
                observer.error = f"{type(e).__name__}: {e}"
                raise

        return wrapped

    def reset(self) -> None:
        self.effective = None
        self.processors = None
        self.error = None
        self.warned = []
        # warning_once caches by message: clear it so every request can warn.
        transformers.utils.logging.warning_once.cache_clear()


def jsonable(v):
    if isinstance(v, dict):
        return [[list(k) if isinstance(k, tuple) else k, val] for k, val in v.items()]
    if isinstance(v, tuple):
        return list(v)
    return v


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def build() -> str:
    models = prepare_models()
    observer = Observer()
    port = free_port()
    serve = Serve(device="cpu", dtype="float32", host="127.0.0.1", port=port, non_blocking=True,
                  log_level="warning", model_timeout=-1)
    url = f"http://127.0.0.1:{port}"
    lines = []
    try:
        for _ in range(200):
            try:
                if httpx.get(f"{url}/health", timeout=2).status_code == 200:
                    break
            except httpx.TransportError:
                time.sleep(0.1)
        meta = {
            "format": FORMAT,
            "transformers_version": transformers.__version__,
            "torch_version": torch.__version__,
            "openai_version": openai.__version__,
            "seed_sentinel": SENTINEL,
            "endpoints": {
                "/v1/chat/completions": {
                    "accepted": sorted(TransformersCompletionCreateParamsStreaming.__mutable_keys__),
                    "unused": sorted(UNUSED_CHAT_COMPLETION_FIELDS),
                },
                "/v1/completions": {
                    "accepted": sorted(TransformersTextCompletionCreateParams.__mutable_keys__),
                    "unused": sorted(UNUSED_LEGACY_COMPLETION_FIELDS),
                },
            },
            "models": {name: json.loads((d / "generation_config.json").read_text()) for name, d in models.items()},
        }
        lines.append(json.dumps(meta, sort_keys=True))
        for endpoint, (field, value) in ENDPOINTS.items():
            for model_name, model_dir in models.items():
                for body in BODIES:
                    # A connection per request: the server drops it after a 500.
                    with httpx.Client(base_url=url, timeout=300) as client:
                        rec = request(client, observer, endpoint, field, value, model_name, model_dir, body)
                    lines.append(json.dumps(rec, sort_keys=True))
                print(f"record.py: {endpoint} {model_name}: {len(BODIES)} bodies", file=sys.stderr)
    finally:
        serve.kill_server()
    return "\n".join(lines) + "\n"


def request(client, observer, endpoint, field, value, model_name, model_dir, body) -> dict:
    observer.reset()
    torch.manual_seed(SENTINEL)
    sent = {"model": str(model_dir), field: value, **body}
    r = client.post(endpoint, json=sent)
    if body.get("stream"):
        r.read()
    rec = {"endpoint": endpoint, "model": model_name, "body": body, "status": r.status_code}
    if r.status_code == 422:
        rec["detail"] = r.json()["detail"]
    if r.status_code >= 500:
        rec["error"] = observer.error
    if body.get("stream") and r.status_code == 200 and "error" in r.text:
        rec["stream_error"] = r.text
    rec["warned"] = observer.warned
    rec["effective"] = observer.effective
    rec["processors"] = observer.processors
    rec["torch_seed"] = torch.initial_seed()
    return rec


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--check", action="store_true",
                    help="regenerate in memory and fail with a diff if fixtures/serve/requests.jsonl differs")
    args = ap.parse_args()
    text = build()
    n = text.count("\n") - 1
    return write_or_check(OUT, text, args.check, "serve/record.py", f" ({n} requests)")


if __name__ == "__main__":
    sys.exit(main())
