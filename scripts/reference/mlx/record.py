#!/usr/bin/env python3
"""Record what mlx-lm's own sampler does to our fixture logits.

Every case is an OpenAI-style request body sent to mlx_lm.server's
`/v1/chat/completions` route. The body goes through the real server code, with
no model and no socket:

  * `APIHandler.do_POST` (mlx_lm/server.py) reads the fields with the server's
    defaults and runs `validate_model_parameters`; a refusal is recorded with
    the server's HTTP status and its error text;
  * the `GenerationArguments` it builds are captured where it hands them to
    the generation thread (`ResponseGenerator.generate` is replaced by a
    function that keeps them), and become a sampler and logits processors
    through the server's own `_make_sampler` / `_make_logits_processors`. The
    tokenizer those receive is a stand-in that only answers `encode("\\n")`
    and `eos_token_ids` (ids `NEWLINE` and `EOS` below: SmolLM2's "\\n" and
    <|im_end|>), which is all they ask of it;
  * one step of `generate_step` (mlx_lm/generate.py) is replayed on the
    fixture logits: the processors over the whole context (prompt included),
    `logprobs = logits - logsumexp(logits)`, then the sampler.

Recorded per case (fixtures/mlx/cases.jsonl):

  * `args`: the sampling and logits-processor arguments the server resolved;
  * `ids`/`p`: the distribution the final `categorical` draws from: the
    tokens with p > 0 and p = w / sum(w) in float32 with
    w = exp(x - max(x)), x = final logprobs * (1 / temp), the same arrays
    `mx.random.categorical`'s inverse-CDF path builds. With XTC at
    0 < xtc_probability < 1 both branches are recorded (`xtc_applied`: the
    real `apply_xtc` at probability 1; `xtc_skipped`: the chain without it)
    and `p` is their mixture (1 - q) * skipped + q * applied in float64;
  * `tokens`: `DRAWS` successive calls of the real sampler after
    `mx.random.seed(SEED)` (what generate_step does over DRAWS steps with
    the same logits);
  * greedy requests (temperature 0): the argmax token;
  * `error`: what the sampler raised (e.g. top_k >= vocabulary).

Usage (after scripts/reference/mlx/setup.sh):

    scripts/reference/mlx/.venv/bin/python scripts/reference/mlx/record.py
    scripts/reference/mlx/.venv/bin/python scripts/reference/mlx/record.py --check
"""

from __future__ import annotations

import argparse
import io
import json
import math
import sys
from pathlib import Path
from types import SimpleNamespace

import numpy as np
from safetensors import safe_open

import mlx.core as mx
import mlx_lm
import mlx_lm.server as server
from mlx_lm import sample_utils as su

REPO = Path(__file__).resolve().parents[3]
sys.path.insert(0, str(REPO / "scripts" / "reference"))
from textcheck import write_or_check  # noqa: E402

OUT = REPO / "fixtures" / "mlx" / "cases.jsonl"
FORMAT = "sampling-parity-mlx/1"
MLX_VERSION = "0.32.4"
MLX_LM_VERSION = "0.32.2"
SEED = 1234
DRAWS = 40
NEWLINE = 198
EOS = 2

# Requests every fixture runs (none keeps the whole 49k vocabulary).
REQUESTS: list[tuple[str, dict]] = [
    ("server_defaults", {}),
    ("greedy_rep13", {"repetition_penalty": 1.3}),
    ("t07_k40", {"temperature": 0.7, "top_k": 40}),
    ("t07_p09", {"temperature": 0.7, "top_p": 0.9}),
    ("t07_k40_p09", {"temperature": 0.7, "top_k": 40, "top_p": 0.9}),
    ("t07_minp05", {"temperature": 0.7, "min_p": 0.05}),
    ("t13_p05_minp02_k10", {"temperature": 1.3, "top_p": 0.5, "min_p": 0.2, "top_k": 10}),
    ("t07_k40_rep13", {"temperature": 0.7, "top_k": 40, "repetition_penalty": 1.3}),
    ("t1_k20_rep08_w5", {"temperature": 1.0, "top_k": 20, "repetition_penalty": 0.8,
                         "repetition_context_size": 5}),
    ("t1_k30_pres07_w8", {"temperature": 1.0, "top_k": 30, "presence_penalty": 0.7,
                          "presence_context_size": 8}),
    ("t1_k30_freq04_w12", {"temperature": 1.0, "top_k": 30, "frequency_penalty": 0.4,
                           "frequency_context_size": 12}),
    ("t09_p095_penalties_ctx0", {"temperature": 0.9, "top_p": 0.95, "repetition_penalty": 1.2,
                                 "repetition_context_size": 0, "presence_penalty": -0.5,
                                 "frequency_penalty": 0.3, "frequency_context_size": 0}),
    ("t08_k25_bias", {"temperature": 0.8, "top_k": 25,
                      "logit_bias": {"0": 9.5, "2": -3.5, "7": 2.25}}),
    ("t1_p095_xtc1", {"temperature": 1.0, "top_p": 0.95, "xtc_probability": 1.0,
                      "xtc_threshold": 0.05}),
    ("t08_k50_xtc05", {"temperature": 0.8, "top_k": 50, "xtc_probability": 0.5,
                       "xtc_threshold": 0.1}),
    ("t07_k1", {"temperature": 0.7, "top_k": 1}),
    ("t07_p0_k10", {"temperature": 0.7, "top_p": 0.0, "top_k": 10}),
    ("t2_minp1", {"temperature": 2, "min_p": 1}),
    ("top_k_vocab", {"temperature": 0.7, "top_k": 49152}),
    ("xtc_threshold_07", {"temperature": 0.7, "xtc_probability": 0.5, "xtc_threshold": 0.7}),
]
# Requests whose kept set can be the whole vocabulary: small fixtures only.
SMALL_ONLY: list[tuple[str, dict]] = [
    ("t1", {"temperature": 1.0}),
    ("t07", {"temperature": 0.7}),
    ("t1_xtc05", {"temperature": 1.0, "xtc_probability": 0.5, "xtc_threshold": 0.1}),
    ("t1_xtc1_thr0", {"temperature": 1.0, "xtc_probability": 1.0, "xtc_threshold": 0.0}),
    ("t1_k2", {"temperature": 1.0, "top_k": 2}),
    ("t1_k3", {"temperature": 1.0, "top_k": 3}),
    ("t1_k4", {"temperature": 1.0, "top_k": 4}),
    ("t1_k5", {"temperature": 1.0, "top_k": 5}),
    ("t1_p05", {"temperature": 1.0, "top_p": 0.5}),
    ("t1_p075", {"temperature": 1.0, "top_p": 0.75}),
    ("t1_p08", {"temperature": 1.0, "top_p": 0.8}),
    ("t1_p09", {"temperature": 1.0, "top_p": 0.9}),
    ("t1_minp05", {"temperature": 1.0, "min_p": 0.5}),
    ("t1_minp025", {"temperature": 1.0, "min_p": 0.25}),
    ("t05_rep2_w3", {"temperature": 0.5, "repetition_penalty": 2.0, "repetition_context_size": 3}),
    ("t05_pres1_w4_freq05_w9", {"temperature": 0.5, "presence_penalty": 1.0,
                                "presence_context_size": 4, "frequency_penalty": 0.5,
                                "frequency_context_size": 9}),
    ("t05_freq_neg_all", {"temperature": 0.5, "frequency_penalty": -0.25,
                          "frequency_context_size": 0}),
    ("t1_k8_bias", {"temperature": 1.0, "top_k": 8, "logit_bias": {"1": -2.0, "3": 1.5}}),
]

# Requests the server refuses or reads in a way worth pinning (no logits needed).
ROUTES: list[tuple[str, dict]] = [
    ("empty", {}),
    ("openai_typical", {"temperature": 0.7, "top_p": 0.9, "max_tokens": 64, "seed": 3,
                        "frequency_penalty": 0.5, "presence_penalty": 0.2, "n": 2,
                        "stop": ["\n"], "user": "u"}),
    ("mlx_fields", {"temperature": 1, "top_k": 40, "min_p": 0.05, "repetition_penalty": 1.1,
                    "repetition_context_size": 64, "xtc_probability": 0.5,
                    "xtc_threshold": 0.2, "logit_bias": {"5": 1, " 7": "-2.5"}}),
    ("dropped_fields", {"typical_p": 0.9, "top_a": 0.1, "seed": 0, "repeat_penalty": 1.3,
                        "xtc_special_tokens": [1]}),
    ("temperature_string", {"temperature": "0.7"}),
    ("temperature_negative", {"temperature": -0.1}),
    ("top_p_above_1", {"top_p": 1.5}),
    ("top_p_negative", {"top_p": -0.5}),
    ("top_k_float", {"top_k": 40.0}),
    ("top_k_negative", {"top_k": -1}),
    ("min_p_above_1", {"min_p": 2}),
    ("repetition_penalty_negative", {"repetition_penalty": -1.0}),
    ("repetition_context_size_float", {"repetition_context_size": 20.5}),
    ("presence_context_size_negative", {"presence_context_size": -3}),
    ("frequency_penalty_string", {"frequency_penalty": "1"}),
    ("xtc_probability_int", {"xtc_probability": 1}),
    ("xtc_threshold_int", {"xtc_threshold": 0}),
    ("xtc_probability_above_1", {"xtc_probability": 1.5}),
    ("seed_float", {"seed": 1.5}),
    ("logit_bias_list", {"logit_bias": [[1, 2.0]]}),
    ("logit_bias_bad_key", {"logit_bias": {"x": 1.0}}),
    ("logit_bias_bad_value", {"logit_bias": {"1": "big"}}),
    ("temperature_bool", {"temperature": True}),
    ("top_k_bool", {"top_k": False}),
]


def synthetic() -> list[tuple[str, np.ndarray, list[int], int]]:
    """Small hand-made logits: ties at the top-k cut, -inf entries, a history
    longer than every penalty window, an exact top-p boundary."""
    ties = np.array([1, 3, 3, 2, 3, 0, 3, 2, 2, -1, 3, 1], dtype=np.float32)
    neg_inf = np.array([2.0, -np.inf, 1.5, -np.inf, -np.inf, 0.5, 1.5, -np.inf, -3.0, -np.inf],
                       dtype=np.float32)
    rng = np.random.default_rng(7)
    pen = (rng.normal(size=16) * 2).astype(np.float32)
    pen[[3, 5, 9]] = [-1.5, 0.0, 2.5]
    history = [3, 1, 4, 1, 5, 9, 2, 6, 5, 3, 5, 8, 9, 7, 9, 3, 2, 3, 8, 4, 6, 2, 6, 4, 3, 3, 8, 3,
               2, 7, 9, 5, 0, 2, 8, 8, 4, 1, 9, 7]
    half = np.log(np.array([0.5, 0.25, 0.125, 0.125], dtype=np.float64)).astype(np.float32)
    return [
        ("ties_v12", ties, [1, 2, 4], 3),
        ("neg_inf_v10", neg_inf, [0, 2, 6, 0], 2),
        ("penalties_v16", pen, history, 25),
        ("halves_v4", half, [0, 1], 2),
    ]


def load(path: Path) -> tuple[np.ndarray, list[int], int]:
    with safe_open(str(path), framework="numpy") as f:
        meta = f.metadata()
        ids = f.get_tensor("input_ids").tolist()
        return f.get_tensor("logits").astype(np.float32), ids, int(meta.get("prompt_len", len(ids)))


class Captured(Exception):
    pass


def server_defaults() -> argparse.Namespace:
    """The CLI defaults of `mlx_lm.server` (its own parser, no arguments)."""
    real = argparse.ArgumentParser.parse_args

    def grab(self, args=None, namespace=None):
        raise Captured(real(self, [], namespace))

    argparse.ArgumentParser.parse_args = grab
    try:
        server.main()
    except Captured as c:
        return c.args[0]
    finally:
        argparse.ArgumentParser.parse_args = real
    raise RuntimeError("mlx_lm.server.main did not parse its arguments")


CLI = None


def route(body: dict):
    """POST `body` to /v1/chat/completions through the real APIHandler.do_POST:
    (status, error text) when refused, else the GenerationArguments."""
    raw = json.dumps({"messages": [{"role": "user", "content": "hi"}], **body}).encode()
    h = object.__new__(server.APIHandler)
    h.path = "/v1/chat/completions"
    h.headers = {"Content-Length": str(len(raw))}
    h.rfile = io.BytesIO(raw)
    h.wfile = io.BytesIO()
    status = []
    h._set_completion_headers = lambda code=200: status.append(code)
    h._set_stream_headers = lambda code=200: status.append(code)
    h.end_headers = lambda: None
    h.handle_chat_completions = lambda: SimpleNamespace(request_type="chat")
    got = []

    def generate(request, args, progress_callback=None):
        got.append(args)
        raise Captured("captured")

    h.response_generator = SimpleNamespace(cli_args=CLI, generate=generate)
    h.do_POST()
    if got:
        return got[0]
    return status[0], json.loads(h.wfile.getvalue().decode())["error"]


def resolved(args) -> dict:
    s, l = args.sampling, args.logits
    out = {k: getattr(s, k) for k in ("temperature", "top_p", "top_k", "min_p",
                                      "xtc_probability", "xtc_threshold")}
    out.update({k: getattr(l, k) for k in ("repetition_penalty", "repetition_context_size",
                                           "presence_penalty", "presence_context_size",
                                           "frequency_penalty", "frequency_context_size")})
    out["logit_bias"] = None if l.logit_bias is None else {str(k): v for k, v in l.logit_bias.items()}
    out["seed"] = args.seed
    return out


def tokenizer(vocab: int) -> SimpleNamespace:
    """The stand-in tokenizer: SmolLM2's ids, or for a vocabulary too small
    to hold them, newline = the last id and EOS = id 0."""
    newline, eos = (NEWLINE, EOS) if vocab > NEWLINE else (vocab - 1, 0)
    return SimpleNamespace(encode=lambda text: [newline] if text == "\n" else [],
                           eos_token_ids=[eos])


def final_probs(x: mx.array, temp: float) -> tuple[list[int], list[float]]:
    """What categorical's inverse-CDF path weighs: w = exp(x - max), p = w / sum(w)."""
    x = x * (1.0 / temp)
    m = mx.max(x)
    w = mx.exp(x - m)
    p = np.array((w / mx.sum(w)).reshape(-1), dtype=np.float32)
    ids = [int(i) for i in np.nonzero(p > 0)[0]]
    return ids, [float(p[i]) for i in ids]


def chain(args, logprobs: mx.array, xtc: str, special: list[int]) -> mx.array:
    """make_sampler's chain (top_p, min_p, xtc, top_k) with the real apply_*
    functions; xtc = "as-is" | "applied" | "skipped"."""
    s = args.sampling
    x = logprobs
    if 0 < s.top_p < 1.0:
        x = su.apply_top_p(x, s.top_p)
    if s.min_p != 0.0:
        x = su.apply_min_p(x, s.min_p, 1)
    if s.xtc_probability > 0.0 and xtc != "skipped":
        x = su.apply_xtc(x, 1.0 if xtc == "applied" else s.xtc_probability, s.xtc_threshold, special)
    if s.top_k > 0:
        x = su.apply_top_k(x, s.top_k)
    return x


def run(args, logits: np.ndarray, input_ids: list[int]) -> dict:
    tok = tokenizer(len(logits))
    special = tok.encode("\n") + list(tok.eos_token_ids)
    sampler = server._make_sampler(args, tok)
    processors = server._make_logits_processors(args)
    x = mx.array(logits)[None]
    tokens = mx.array(input_ids)
    if processors and len(input_ids) > 0:
        for proc in processors:
            x = proc(tokens, x)
    logprobs = x - mx.logsumexp(x, keepdims=True)
    out: dict = {}
    try:
        if args.sampling.temperature == 0:
            token = int(sampler(logprobs).item())
            out.update(greedy=token, ids=[token], p=[1.0])
            return out
        temp = args.sampling.temperature
        q = args.sampling.xtc_probability
        if 0.0 < q < 1.0:
            for branch in ("applied", "skipped"):
                ids, p = final_probs(chain(args, logprobs, branch, special), temp)
                out[f"xtc_{branch}"] = {"ids": ids, "p": p}
            a = dict(zip(out["xtc_applied"]["ids"], out["xtc_applied"]["p"]))
            k = dict(zip(out["xtc_skipped"]["ids"], out["xtc_skipped"]["p"]))
            ids = sorted(set(a) | set(k))
            out["ids"] = ids
            out["p"] = [(1.0 - q) * k.get(i, 0.0) + q * a.get(i, 0.0) for i in ids]
        else:
            out["ids"], out["p"] = final_probs(chain(args, logprobs, "as-is", special), temp)
        mx.random.seed(SEED)
        out["tokens"] = [int(sampler(logprobs).item()) for _ in range(DRAWS)]
    except ValueError as e:
        # The raise happened while mx.compile traced the function, whose
        # inputs include mx.random.state. With g++ on the PATH (MLX's CPU
        # JIT) the state is left holding a traced placeholder and every later
        # random call on this thread fails until it is reseeded; without g++
        # it is not. Reseed either way (not recorded: it depends on the host).
        mx.random.seed(0)
        return {"error": str(e)}
    return out


def record() -> list[str]:
    lines = [json.dumps({"format": FORMAT, "mlx": mx.__version__, "mlx_lm": mlx_lm.__version__,
                         "seed": SEED, "draws": DRAWS, "newline_id": NEWLINE, "eos_ids": [EOS]},
                        sort_keys=True)]
    for name, body in ROUTES:
        got = route(body)
        case = {"route": name, "request": body}
        if isinstance(got, tuple):
            case["status"], case["error"] = got
        else:
            case["args"] = resolved(got)
        lines.append(json.dumps(case, sort_keys=True))
    inputs = []
    for path in sorted((REPO / "fixtures" / "smollm2").glob("*.safetensors")):
        logits, ids, plen = load(path)
        inputs.append((f"smollm2/{path.stem}", None, logits, ids, plen, REQUESTS))
    for path in sorted((REPO / "fixtures" / "edge").glob("*.safetensors")):
        logits, ids, plen = load(path)
        inputs.append((f"edge/{path.stem}", None, logits, ids, plen, REQUESTS + SMALL_ONLY))
    for name, logits, ids, plen in synthetic():
        inputs.append((f"synthetic/{name}", logits, logits, ids, plen, REQUESTS + SMALL_ONLY))
    for fixture, inline, logits, input_ids, plen, requests in inputs:
        for name, body in requests:
            case = {"fixture": fixture, "name": name, "request": body}
            if inline is not None:
                case.update(logits=[x if math.isfinite(x) else "-inf" for x in inline.tolist()],
                            input_ids=input_ids, prompt_len=plen)
            args = route(body)
            if isinstance(args, tuple):
                raise RuntimeError(f"{fixture} {name}: the server refused {body}: {args}")
            case["args"] = resolved(args)
            tok = tokenizer(len(logits))
            case["xtc_special_tokens"] = tok.encode("\n") + list(tok.eos_token_ids)
            penalised = any(getattr(args.logits, k) not in (None, 0, 0.0, {})
                            for k in ("logit_bias", "repetition_penalty", "presence_penalty",
                                      "frequency_penalty"))
            bad = [i for i, t in enumerate(input_ids) if not 0 <= t < len(logits)]
            bias = [k for k in (args.logits.logit_bias or {}) if not 0 <= k < len(logits)]
            if bias:
                # Nor for a bias on an id past the end: MLX's scatter writes out of bounds.
                case["skipped"] = f"logit_bias id {bias[0]} is outside the vocabulary"
            elif penalised and bad:
                # MLX's gather/scatter do not check bounds on CPU: nothing to record.
                case["skipped"] = f"input_ids[{bad[0]}] = {input_ids[bad[0]]} is outside the vocabulary"
            elif not np.isfinite(logits).any():
                # logsumexp is -inf and every logprob NaN.
                case["skipped"] = "every logit is -inf"
            else:
                try:
                    case.update(run(args, logits, input_ids))
                except RuntimeError:
                    print(f"record.py: {fixture} {name} failed", file=sys.stderr)
                    raise
            lines.append(json.dumps(case, sort_keys=True))
        print(f"record.py: {fixture}: {len(requests)} requests", file=sys.stderr)
    return lines


def main() -> int:
    global CLI
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--check", action="store_true",
                    help="regenerate in memory and fail with a diff if fixtures/mlx differs")
    opts = ap.parse_args()
    if (mx.__version__, mlx_lm.__version__) != (MLX_VERSION, MLX_LM_VERSION):
        print(f"record.py: mlx {mx.__version__} / mlx-lm {mlx_lm.__version__} are not the pinned "
              f"{MLX_VERSION} / {MLX_LM_VERSION}; run scripts/reference/mlx/setup.sh", file=sys.stderr)
        return 2
    mx.set_default_device(mx.cpu)
    CLI = server_defaults()
    text = "\n".join(record()) + "\n"
    return write_or_check(OUT, text, opts.check, "mlx/record.py",
                          on_diff="; regenerate with scripts/reference/mlx/.venv/bin/python "
                                  "scripts/reference/mlx/record.py")


if __name__ == "__main__":
    sys.exit(main())
