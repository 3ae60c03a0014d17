#!/usr/bin/env python3
"""Send issue #36's four requests to a running server and save what it answers, as is.

    python3 scripts/servers/raw-requests.py NAME URL OUTDIR [--model ID]

NAME is vllm, vllm-processed, mlx or serve (scripts/servers/start.sh NAME PORT started it on
URL). For each of the four sampling requests (T 0.7; T 0.8 + top_p 0.9;
T 1.0 + top_k 20; T 0.7 + min_p 0.1) it POSTs /v1/completions with one new
token, seed 1, the prompt "The capital of France is" (as token ids where the
server takes them) and logprobs asked for the way that server allows:

  vllm   `logprobs: -1` (the whole vocabulary; start.sh runs it with
         --max-logprobs -1), prompt as ids
  mlx    `logprobs: true, top_logprobs: 11` (its maximum) and, apart,
         `logprobs: true` alone (then content[0] is the sampled token); prompt
         as text (it takes no ids)
  serve  none (it ignores `logprobs`); prompt as text (it takes no ids);
         then the same four as a `generation_config` JSON string with
         do_sample (its only way to send top_k / min_p)

plus a few probes of each server's limits (a cap one past the maximum, a
field the server refuses). Every exchange is written to OUTDIR/NAME/NN-what.json
as {"method", "path", "body", "status", "seconds", "response"} (the answer
parsed as JSON, or its text). Only URL (loopback) is contacted. Standard
library only: runs with any python3.
"""

import argparse
import json
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

PROMPT = "The capital of France is"
# What the served tokenizer (.cache/models/SmolLM2-135M-Instruct-hf, made by
# make-hf-model.py) gives for PROMPT: AutoTokenizer(...)(PROMPT).input_ids;
# checked against vLLM's own /tokenize when NAME is vllm.
PROMPT_IDS = [504, 3575, 282, 4649, 314]
REQUESTS = [
    ("t07", {"temperature": 0.7}),
    ("t08-top_p09", {"temperature": 0.8, "top_p": 0.9}),
    ("t10-top_k20", {"temperature": 1.0, "top_k": 20}),
    ("t07-min_p01", {"temperature": 0.7, "min_p": 0.1}),
]
SEED = 1


def call(url: str, method: str, path: str, body):
    data = None if body is None else json.dumps(body).encode()
    req = urllib.request.Request(url + path, data=data, method=method,
                                 headers={"Content-Type": "application/json"})
    t0 = time.monotonic()
    try:
        with urllib.request.urlopen(req, timeout=300) as r:
            status, raw = r.status, r.read()
    except urllib.error.HTTPError as e:
        status, raw = e.code, e.read()
    seconds = round(time.monotonic() - t0, 3)
    text = raw.decode("utf-8", errors="replace")
    try:
        response = json.loads(text)
    except json.JSONDecodeError:
        response = text
    return {"method": method, "path": path, "body": body, "status": status,
            "seconds": seconds, "response": response}


def exchanges(name: str, model: str):
    """(file stem, method, path, body) of every exchange for server NAME."""
    out = [("models", "GET", "/v1/models", None)]
    base = {"model": model, "max_tokens": 1, "seed": SEED}
    if name in ("vllm", "vllm-processed"):
        out.append(("tokenize", "POST", "/tokenize", {"model": model, "prompt": PROMPT}))
        for stem, r in REQUESTS:
            out.append((stem, "POST", "/v1/completions",
                        {**base, **r, "prompt": PROMPT_IDS, "logprobs": -1}))
        out.append(("limit-logprobs-49153", "POST", "/v1/completions",
                    {**base, "temperature": 0.7, "prompt": PROMPT_IDS, "logprobs": 49153}))
        out.append(("processed-logprobs-field", "POST", "/v1/completions",
                    {**base, "temperature": 0.7, "top_k": 20, "prompt": PROMPT_IDS, "logprobs": 5,
                     "return_tokens_as_token_ids": True}))
    elif name == "mlx":
        for stem, r in REQUESTS:
            out.append((stem, "POST", "/v1/completions",
                        {**base, **r, "prompt": PROMPT, "logprobs": True, "top_logprobs": 11}))
            out.append((stem + "-draw", "POST", "/v1/completions",
                        {**base, **r, "prompt": PROMPT, "logprobs": True}))
        out.append(("limit-top_logprobs-12", "POST", "/v1/completions",
                    {**base, "temperature": 0.7, "prompt": PROMPT, "logprobs": True, "top_logprobs": 12}))
        out.append(("limit-logprobs-int", "POST", "/v1/completions",
                    {**base, "temperature": 0.7, "prompt": PROMPT, "logprobs": 5}))
        out.append(("limit-prompt-ids", "POST", "/v1/completions",
                    {**base, "temperature": 0.7, "prompt": PROMPT_IDS, "logprobs": True}))
    elif name == "serve":
        for stem, r in REQUESTS:
            out.append((stem, "POST", "/v1/completions", {**base, **r, "prompt": PROMPT}))
        # Its one way to send top_k / min_p / do_sample: a GenerationConfig
        # as a JSON string, which replaces the model's generation config.
        for stem, r in REQUESTS:
            out.append((stem + "-generation_config", "POST", "/v1/completions",
                        {**base, "prompt": PROMPT,
                         "generation_config": json.dumps({"do_sample": True, **r, "max_new_tokens": 1})}))
        out.append(("limit-prompt-ids", "POST", "/v1/completions",
                    {**base, "temperature": 0.7, "prompt": PROMPT_IDS}))
        out.append(("limit-logprobs-5", "POST", "/v1/completions",
                    {**base, "temperature": 0.7, "prompt": PROMPT, "logprobs": 5}))
        out.append(("limit-other-model", "POST", "/v1/completions",
                    {**base, "model": "other", "temperature": 0.7, "prompt": PROMPT}))
    else:
        sys.exit(f"raw-requests.py: unknown server {name!r}: expected vllm, mlx or serve")
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("name")
    ap.add_argument("url")
    ap.add_argument("outdir", type=Path)
    ap.add_argument("--model", help="the `model` field (default: the first id of /v1/models, "
                                    "else the served folder)")
    args = ap.parse_args()
    url = args.url.rstrip("/")
    model = args.model
    if model is None:
        models = call(url, "GET", "/v1/models", None)["response"]
        data = models.get("data") if isinstance(models, dict) else None
        model = data[0]["id"] if data else str(
            Path(__file__).resolve().parents[2] / ".cache/models/SmolLM2-135M-Instruct-hf")
    dest = args.outdir / args.name
    dest.mkdir(parents=True, exist_ok=True)
    for i, (stem, method, path, body) in enumerate(exchanges(args.name, model)):
        ex = call(url, method, path, body)
        (dest / f"{i:02}-{stem}.json").write_text(json.dumps(ex, indent=1) + "\n")
        print(f"{args.name} {i:02}-{stem}: HTTP {ex['status']} in {ex['seconds']} s", file=sys.stderr)
        if stem == "tokenize" and isinstance(ex["response"], dict):
            got = ex["response"].get("tokens")
            if got != PROMPT_IDS:
                sys.exit(f"raw-requests.py: vLLM /tokenize gives {got} for {PROMPT!r}, not {PROMPT_IDS}")


if __name__ == "__main__":
    main()
