#!/usr/bin/env python3
"""Record what llama-cpp-python 0.3.36's own Python layer does when it samples.

This is not llama-server (scripts/reference/llamacpp/ records that): the
`Llama` class (llama_cpp/llama.py) builds its own llama.cpp sampler chain in
`Llama._init_sampler`, derives its own seeds in `_create_completion`, accepts
only the tokens it generates into that chain (not the prompt), and its
OpenAI-compatible server (llama_cpp/server/) has its own request models and
defaults. NOTES.md beside this file lists each rule with file:line at 0.3.36.

Everything recorded here comes from the real objects of the pinned package
(llama-cpp-python 0.3.36, vendored llama.cpp 0c1e57098) on the real SmolLM2
GGUF; nothing is re-implemented. The recorder instruments, without changing
what they do:

  * `Llama._init_sampler` (records the keyword arguments it got and the
    `self._seed` the chain is seeded with; in "capture" mode it raises after
    recording, so a request is resolved without evaluating the model);
  * `LlamaSampler.add_dist` / `add_mirostat` / `add_mirostat_v2`
    (llama_cpp/_internals.py): the seed argument they got and the seed the
    built sampler reports (`llama_sampler_get_seed` of the chain);
  * `Llama.__call__`, `Llama.create_completion`, `Llama.create_chat_completion`
    (server request cases): the keyword arguments the server route passed.

Case kinds in fixtures/llama-cpp-python/cases.jsonl (JSON lines, sorted keys;
the first line is the header):

  * chain cases (no "kind"): a request is resolved by the real code path
    (api "python": `Llama.create_completion(prompt=PROMPT, max_tokens=1,
    **request)`; api "server": the body POSTed in-process to the real FastAPI
    app of llama_cpp.server.app.create_app on "route"), up to the call of
    `_init_sampler`, whose keyword arguments are "resolved" and whose
    `self._seed` is "seed". Then the real, unwrapped `Llama._init_sampler`
    builds the chain with those arguments on the recorder's `Llama` (seed set
    with the real `Llama.set_seed`); "accepted" ids are fed to it with
    `LlamaSampler.accept` (llama_sampler_accept), as `llama_sampler_sample`
    does after every generated token; and the chain is applied
    (`llama_sampler_apply` on the chain) to a llama_token_data_array built
    from the fixture's logits, ids 0..V-1 in id order with p = 0, exactly as
    `llama_sampler_sample` builds it from the model's logits. "ids", "p" are
    the candidates the chain leaves with p > 0 (array order, float32 widened
    exactly; NaN as null), "size" the array size it leaves. "tokens" are the
    selected ids of DRAWS successive applications of that one chain to fresh
    copies of the logits (draws are not accepted: "accepted" is the penalty
    window for every draw, while the dist/mirostat state advances per draw).
    Fixtures with V != 49152 (fixtures/edge) go into an array of their own
    size: no sampler in these chains reads the model's vocabulary except
    mirostat v1 (it reads n_vocab = 49152 from `Llama._n_vocab`), which is
    run on the SmolLM2 fixtures only.
  * kind "seed": how a seed becomes the chain's seed, observed on real
    completions of SmolLM2 (PROMPT_IDS, max_tokens 8) with fresh `Llama`s.
  * kind "penalty_window": one real `create_completion` (repeat_penalty 1.3,
    max_tokens 8, seed 1234); per step the ids accepted so far, the model's
    logits at that step (stored in penalty_window.safetensors, tensor
    "logits" row <step>), and the candidates the real chain left on that
    step (read by an observer appended after dist) and the token it chose.
  * kind "server_request": a body POSTed to the real app: the keyword
    arguments the route passed on, those that reached create_completion and
    _init_sampler, or the HTTP status and JSON error it answered with.

Usage (after scripts/reference/llama-cpp-python/setup.sh):

    scripts/reference/llama-cpp-python/.venv/bin/python scripts/reference/llama-cpp-python/record.py
    scripts/reference/llama-cpp-python/.venv/bin/python scripts/reference/llama-cpp-python/record.py --check
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import ctypes
import difflib
import hashlib
import io
import json
import math
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
from safetensors import safe_open
from safetensors.numpy import save as st_save

import llama_cpp as L
from llama_cpp import _internals
from llama_cpp.llama import Llama
from llama_cpp.llama_grammar import LlamaGrammar

REPO = Path(__file__).resolve().parents[3]
OUT_DIR = REPO / "fixtures" / "llama-cpp-python"
OUT = OUT_DIR / "cases.jsonl"
WINDOW_FILE = "penalty_window.safetensors"
MODEL = REPO / ".cache" / "models" / "SmolLM2-135M-Instruct.Q4_1.gguf"
FORMAT = "sampling-parity-llama-cpp-python/1"
LLAMA_CPP_COMMIT = "0c1e57098bba43ac29e6e3b677cdceebdd22334f"
SEED = 1234
DRAWS = 100
N_CTX = 512
N_THREADS = 2
# Chain cases resolve a request with this prompt (the chain does not depend on it).
PROMPT = "Hello"
# Seed and penalty-window completions: fixtures/smollm2/hello_k0's context
# (SmolLM2's chat template around "How do you say hello in Chinese?").
PROMPT_FIXTURE = "smollm2/hello_k0"
SEED_MAX_TOKENS = 8
WINDOW_STEPS = 8

LLAMA_KW = dict(n_ctx=N_CTX, n_threads=N_THREADS, n_threads_batch=N_THREADS, verbose=False)

# ---------------------------------------------------------------- instruments

ORIG_INIT_SAMPLER = Llama._init_sampler
ORIG_ADD_DIST = _internals.LlamaSampler.add_dist
ORIG_ADD_MIROSTAT = _internals.LlamaSampler.add_mirostat
ORIG_ADD_MIROSTAT_V2 = _internals.LlamaSampler.add_mirostat_v2
ORIG_CALL = Llama.__call__
ORIG_CREATE_COMPLETION = Llama.create_completion
ORIG_CREATE_CHAT_COMPLETION = Llama.create_chat_completion


class Captured(Exception):
    """Raised by the _init_sampler instrument in capture mode."""


class Log:
    capture = False  # raise Captured from _init_sampler after recording
    init: list[dict] = []
    seeds: list[dict] = []
    calls: list[tuple[str, dict]] = []
    on_dist = None  # callable(LlamaSampler) run after add_dist (penalty window observer)

    @classmethod
    def clear(cls):
        cls.init, cls.seeds, cls.calls = [], [], []


def _init_sampler(self, **kwargs):
    Log.init.append({"kwargs": dict(kwargs), "seed": self._seed, "n_vocab": self._n_vocab,
                     "last_n_tokens_size": self.last_n_tokens_size})
    if Log.capture:
        raise Captured()
    return ORIG_INIT_SAMPLER(self, **kwargs)


def _add_dist(self, seed):
    ORIG_ADD_DIST(self, seed)
    Log.seeds.append({"sampler": "dist", "arg": seed, "get_seed": L.llama_sampler_get_seed(self.sampler)})
    if Log.on_dist is not None:
        Log.on_dist(self)


def _add_mirostat(self, n_vocab, seed, tau, eta, m):
    ORIG_ADD_MIROSTAT(self, n_vocab, seed, tau, eta, m)
    Log.seeds.append({"sampler": "mirostat", "arg": seed, "get_seed": L.llama_sampler_get_seed(self.sampler)})


def _add_mirostat_v2(self, seed, tau, eta):
    ORIG_ADD_MIROSTAT_V2(self, seed, tau, eta)
    Log.seeds.append({"sampler": "mirostat_v2", "arg": seed,
                      "get_seed": L.llama_sampler_get_seed(self.sampler)})


def _wrap_call(name, orig):
    def wrapper(self, *args, **kwargs):
        Log.calls.append((name, dict(kwargs, **({"_args": list(args)} if args else {}))))
        return orig(self, *args, **kwargs)
    wrapper.__name__ = orig.__name__
    return wrapper


Llama._init_sampler = _init_sampler
_internals.LlamaSampler.add_dist = _add_dist
_internals.LlamaSampler.add_mirostat = _add_mirostat
_internals.LlamaSampler.add_mirostat_v2 = _add_mirostat_v2
Llama.__call__ = _wrap_call("__call__", ORIG_CALL)
Llama.create_completion = _wrap_call("create_completion", ORIG_CREATE_COMPLETION)
Llama.create_chat_completion = _wrap_call("create_chat_completion", ORIG_CREATE_CHAT_COMPLETION)


def jsonable(v):
    """kwargs values as JSON: objects by their class or function name."""
    if v is None or isinstance(v, (bool, int, str)):
        return v
    if isinstance(v, float):
        return v if math.isfinite(v) else repr(v)
    if isinstance(v, dict):
        return {str(k): jsonable(x) for k, x in v.items()}
    if isinstance(v, L.LogitsProcessorList) or isinstance(v, L.StoppingCriteriaList):
        return [f"{type(v).__name__}"] + [_name(x) for x in v]
    if isinstance(v, (list, tuple)):
        return [jsonable(x) for x in v]
    if isinstance(v, LlamaGrammar):
        # the grammar's text: what llama_sampler_init_grammar gets (_internals.py:755-759)
        return {"LlamaGrammar": v._grammar}
    return _name(v)


def _name(x):
    if hasattr(x, "__qualname__"):
        return x.__qualname__
    return type(x).__qualname__


# ---------------------------------------------------------------- the chain

TOKEN_DATA = np.dtype([("id", "<i4"), ("logit", "<f4"), ("p", "<f4")])
assert TOKEN_DATA.itemsize == ctypes.sizeof(L.llama_token_data)


def chain_names(sampler: _internals.LlamaSampler) -> list[str]:
    custom = {i for i, _ in sampler.custom_samplers}
    out = []
    for i in range(L.llama_sampler_chain_n(sampler.sampler)):
        if i in custom:
            # CustomSampler (llama_cpp/_internals.py) has no name function:
            # llama_sampler_name would call a null pointer.
            out.append("custom:logits_processor")
        else:
            out.append(L.llama_sampler_name(L.llama_sampler_chain_get(sampler.sampler, i)).decode())
    return out


def apply(sampler: _internals.LlamaSampler, logits: np.ndarray):
    """One llama_sampler_apply of the chain to a fresh candidate array built as
    llama_sampler_sample builds it: (ids, p, selected id)."""
    buf = np.zeros(len(logits), dtype=TOKEN_DATA)
    buf["id"] = np.arange(len(logits), dtype=np.int32)
    buf["logit"] = logits
    arr = L.llama_token_data_array(
        data=buf.ctypes.data_as(L.llama_token_data_p), size=len(logits), selected=-1, sorted=False)
    L.llama_sampler_apply(sampler.sampler, ctypes.byref(arr))
    out = read_array(ctypes.pointer(arr))
    return out["id"].tolist(), out["p"].tolist(), int(out["id"][arr.selected])


def read_array(arr_p) -> np.ndarray:
    n = arr_p.contents.size
    base = ctypes.addressof(arr_p.contents.data.contents)
    return np.frombuffer((ctypes.c_char * (n * TOKEN_DATA.itemsize)).from_address(base),
                         dtype=TOKEN_DATA).copy()


def kept(ids, probs):
    k = [(i, q) for i, q in zip(ids, probs) if not (q == 0.0)]
    return [i for i, _ in k], [None if math.isnan(q) else q for _, q in k]


def run_chain(llm: Llama, kwargs: dict, seed: int, accepted: list[int], logits: np.ndarray,
              draws: int) -> dict:
    llm.set_seed(seed)
    sampler = ORIG_INIT_SAMPLER(llm, **kwargs)
    try:
        names = chain_names(sampler)
        for t in accepted:
            sampler.accept(t)
        ids, probs, first = apply(sampler, logits)
        tokens = [first]
        for _ in range(draws - 1):
            tokens.append(apply(sampler, logits)[2])
    finally:
        sampler.close()
    kids, kp = kept(ids, probs)
    return {"chain": names, "size": len(ids), "ids": kids, "p": kp, "tokens": tokens}


def resolved_json(rec: dict) -> dict:
    return {k: jsonable(v) for k, v in rec["kwargs"].items()}


# ---------------------------------------------------------------- requests


def resolve_python(llm: Llama, request: dict) -> dict:
    """The _init_sampler call Llama.create_completion makes for a request."""
    Log.clear()
    Log.capture = True
    try:
        llm.create_completion(prompt=PROMPT, max_tokens=1, **request)
    except Captured:
        pass
    finally:
        Log.capture = False
    assert len(Log.init) == 1, Log.init
    return Log.init[0]


class Server:
    """The real llama_cpp.server app, driven in-process over ASGI."""

    def __init__(self):
        from llama_cpp.server.app import create_app
        from llama_cpp.server.settings import ModelSettings, ServerSettings
        self.app = create_app(
            server_settings=ServerSettings(host="127.0.0.1", port=0),
            model_settings=[ModelSettings(model=str(MODEL), verbose=False)])

    def post(self, route: str, body) -> tuple[int, object]:
        raw = json.dumps(body).encode()
        scope = {"type": "http", "asgi": {"version": "3.0"}, "http_version": "1.1", "method": "POST",
                 "scheme": "http", "path": route, "raw_path": route.encode(), "query_string": b"",
                 "root_path": "", "headers": [(b"host", b"127.0.0.1"), (b"content-type", b"application/json"),
                                              (b"content-length", str(len(raw)).encode())],
                 "client": ("127.0.0.1", 1), "server": ("127.0.0.1", 80)}
        sent = {"body": False}
        out = {"status": None, "body": b""}

        async def receive():
            if not sent["body"]:
                sent["body"] = True
                return {"type": "http.request", "body": raw, "more_body": False}
            await asyncio.sleep(3600)
            return {"type": "http.disconnect"}

        async def send(msg):
            if msg["type"] == "http.response.start":
                out["status"] = msg["status"]
            elif msg["type"] == "http.response.body":
                out["body"] += msg.get("body", b"")

        # The route's error handler prints the traceback of the recorder's own
        # Captured exception to stderr: keep it out of the log.
        with contextlib.redirect_stderr(io.StringIO()), contextlib.redirect_stdout(io.StringIO()):
            try:
                asyncio.run(self.app(scope, receive, send))
            except Exception:
                # a streaming response (EventSourceResponse) runs the completion in
                # its own task group: the recorder's Captured comes out of the app
                if not Log.init:
                    raise
                out["streamed"] = True
        if out.get("streamed"):
            return out["status"], {"stream": "the body streamed (server-sent events)"}
        return out["status"], json.loads(out["body"]) if out["body"] else None

    def resolve(self, route: str, body: dict) -> dict:
        Log.clear()
        Log.capture = True
        try:
            status, answer = self.post(route, body)
        finally:
            Log.capture = False
        calls = [(n, {k: jsonable(v) for k, v in kw.items()}) for n, kw in Log.calls]
        res = {"status": status, "calls": calls}
        if Log.init:
            res["init"] = Log.init[0]
        else:
            res["answer"] = answer
        return res


# ---------------------------------------------------------------- fixtures


def load(path: Path):
    with safe_open(str(path), framework="numpy") as f:
        meta = f.metadata() or {}
        return f.get_tensor("logits").astype(np.float32), f.get_tensor("input_ids").tolist(), meta


def fixture_files() -> list[Path]:
    return sorted((REPO / "fixtures" / "smollm2").glob("*.safetensors")) + sorted(
        (REPO / "fixtures" / "edge").glob("*.safetensors"))


def generated(input_ids: list[int], meta: dict) -> list[int]:
    """The ids a python-layer completion would have accepted before this step:
    its generated tokens. SmolLM2 fixtures: input_ids[prompt_len:] (the k
    tokens generated after the prompt). Edge fixtures have no prompt: all
    input_ids."""
    if "prompt_len" in meta:
        return input_ids[int(meta["prompt_len"]):]
    return list(input_ids)


# (name, api, route, request, where): where is "all", "model" (SmolLM2 only),
# "edge" (edge only), or a tuple of fixture names.
ALL, MODEL_ONLY, EDGE_ONLY = "all", "model", "edge"
CHAIN_REQUESTS = [
    ("python_defaults", "python", None, {}, ALL),
    ("t07", "python", None, {"temperature": 0.7}, ALL),
    ("k40_t07", "python", None, {"top_k": 40, "temperature": 0.7}, ALL),
    ("k0", "python", None, {"top_k": 0}, ALL),
    ("p09", "python", None, {"top_p": 0.9}, ALL),
    ("minp01", "python", None, {"min_p": 0.1}, ALL),
    ("typ09", "python", None, {"typical_p": 0.9}, ALL),
    ("article_p09", "python", None, {"temperature": 0.7, "top_k": 0, "top_p": 0.9, "min_p": 0.0}, ALL),
    ("t15", "python", None, {"temperature": 1.5}, ALL),
    ("greedy", "python", None, {"temperature": 0.0}, ALL),
    ("temp_negative", "python", None, {"temperature": -1.0}, (EDGE_ONLY, "smollm2/hello_k0")),
    ("rep13", "python", None, {"repeat_penalty": 1.3}, ALL),
    ("rep13_greedy", "python", None, {"repeat_penalty": 1.3, "temperature": 0.0}, ALL),
    ("freq05", "python", None, {"frequency_penalty": 0.5}, ALL),
    ("pres05", "python", None, {"presence_penalty": 0.5}, ALL),
    ("rep13_freq05_pres05", "python", None,
     {"repeat_penalty": 1.3, "frequency_penalty": 0.5, "presence_penalty": 0.5}, ALL),
    ("logit_bias", "python", None, {"logit_bias": {0: 10.0, 1: -100.0}}, ALL),
    ("mirostat1", "python", None, {"mirostat_mode": 1}, MODEL_ONLY),
    ("mirostat2", "python", None, {"mirostat_mode": 2}, ALL),
    ("mirostat2_tau3", "python", None, {"mirostat_mode": 2, "mirostat_tau": 3.0, "mirostat_eta": 0.2},
     MODEL_ONLY),
    ("no_filters", "python", None, {"top_k": 0, "top_p": 1.0, "min_p": 0.0}, EDGE_ONLY),
    ("no_filters_t07", "python", None, {"top_k": 0, "top_p": 1.0, "min_p": 0.0, "temperature": 0.7},
     EDGE_ONLY),
    ("server_defaults", "server", "/v1/completions", {}, ALL),
    ("server_t07", "server", "/v1/completions", {"temperature": 0.7}, ALL),
    ("server_k0", "server", "/v1/completions", {"top_k": 0}, ALL),
    ("server_minp0", "server", "/v1/completions", {"min_p": 0}, ALL),
    ("server_rep10", "server", "/v1/completions", {"repeat_penalty": 1.0}, ALL),
    ("server_typical_p_ignored", "server", "/v1/completions", {"typical_p": 0.5}, ALL),
    ("server_chat_defaults", "server", "/v1/chat/completions", {}, ALL),
    ("server_chat_t07", "server", "/v1/chat/completions", {"temperature": 0.7}, ALL),
]
# Added to every server chain body (the prompt/messages are not sampling fields;
# max_tokens 1 and seed SEED make the resolution cheap and the seed fixed).
SERVER_BASE = {
    "/v1/completions": {"prompt": PROMPT, "max_tokens": 1, "seed": SEED},
    "/v1/chat/completions": {"messages": [{"role": "user", "content": PROMPT}], "max_tokens": 1,
                             "seed": SEED},
}

# A grammar and a tool for the constraining bodies below.
GRAMMAR = 'root ::= "Yes" | "No"'
TOOL = {"type": "function", "function": {"name": "get_weather", "parameters": {
    "type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}}}

# Bodies for kind "server_request" (sent as they are).
COMPLETION_BODIES = [
    ("empty", {}),
    ("prompt_only", {"prompt": PROMPT}),
    ("temperature_07", {"prompt": PROMPT, "temperature": 0.7}),
    ("top_k_0", {"prompt": PROMPT, "top_k": 0}),
    ("seed_0", {"prompt": PROMPT, "seed": 0}),
    ("seed_neg1", {"prompt": PROMPT, "seed": -1}),
    ("repeat_penalty_1", {"prompt": PROMPT, "repeat_penalty": 1.0}),
    ("min_p_0", {"prompt": PROMPT, "min_p": 0}),
    ("logit_bias", {"prompt": PROMPT, "logit_bias": {"0": 10.0, "1": -100}}),
    ("logit_bias_tokens", {"prompt": PROMPT, "logit_bias": {"Hello": -100.0}, "logit_bias_type": "tokens"}),
    ("min_tokens_2", {"prompt": PROMPT, "min_tokens": 2}),
    ("min_tokens_2_logit_bias", {"prompt": PROMPT, "min_tokens": 2, "logit_bias": {"0": 10.0}}),
    ("max_tokens_0", {"prompt": PROMPT, "max_tokens": 0}),
    ("max_tokens_null", {"prompt": PROMPT, "max_tokens": None}),
    ("temperature_neg", {"prompt": PROMPT, "temperature": -1.0}),
    ("temperature_5", {"prompt": PROMPT, "temperature": 5}),
    ("mirostat_2", {"prompt": PROMPT, "mirostat_mode": 2}),
    ("typical_p_unknown_field", {"prompt": PROMPT, "typical_p": 0.5}),
    ("tfs_z_unknown_field", {"prompt": PROMPT, "tfs_z": 0.5}),
    ("unknown_field", {"prompt": PROMPT, "bogus": 1}),
    ("prompt_list", {"prompt": [PROMPT]}),
    ("n_2", {"prompt": PROMPT, "n": 2}),
    # out of range
    ("top_p_15", {"prompt": PROMPT, "top_p": 1.5}),
    ("top_p_neg", {"prompt": PROMPT, "top_p": -0.1}),
    ("min_p_15", {"prompt": PROMPT, "min_p": 1.5}),
    ("top_k_neg1", {"prompt": PROMPT, "top_k": -1}),
    ("repeat_penalty_neg", {"prompt": PROMPT, "repeat_penalty": -0.5}),
    ("presence_penalty_3", {"prompt": PROMPT, "presence_penalty": 3.0}),
    ("frequency_penalty_neg3", {"prompt": PROMPT, "frequency_penalty": -3.0}),
    ("mirostat_mode_3", {"prompt": PROMPT, "mirostat_mode": 3}),
    ("mirostat_eta_0", {"prompt": PROMPT, "mirostat_eta": 0.0}),
    ("mirostat_tau_11", {"prompt": PROMPT, "mirostat_tau": 11.0}),
    ("max_tokens_neg", {"prompt": PROMPT, "max_tokens": -1}),
    ("logprobs_neg", {"prompt": PROMPT, "logprobs": -1}),
    # wrong types
    ("temperature_string", {"prompt": PROMPT, "temperature": "hot"}),
    ("temperature_numeric_string", {"prompt": PROMPT, "temperature": "0.7"}),
    ("top_k_float", {"prompt": PROMPT, "top_k": 40.5}),
    ("top_k_integral_float", {"prompt": PROMPT, "top_k": 40.0}),
    ("seed_float", {"prompt": PROMPT, "seed": 1.5}),
    ("seed_string", {"prompt": PROMPT, "seed": "7"}),
    ("logit_bias_list", {"prompt": PROMPT, "logit_bias": [[0, 1.0]]}),
    ("logit_bias_type_bad", {"prompt": PROMPT, "logit_bias_type": "ids"}),
    ("stream_string", {"prompt": PROMPT, "stream": "yes"}),
    ("body_not_object", [1, 2]),
    # grammars: app.py:177-178 makes one of any grammar that is not None
    ("grammar", {"prompt": PROMPT, "grammar": GRAMMAR}),
    ("grammar_empty", {"prompt": PROMPT, "grammar": ""}),
    ("grammar_null", {"prompt": PROMPT, "grammar": None}),
    ("grammar_number", {"prompt": PROMPT, "grammar": 5}),
    ("response_format_unknown_field", {"prompt": PROMPT, "response_format": {"type": "json_object"}}),
]
CHAT_BODIES = [
    ("empty", {}),
    ("user_hello", {"messages": [{"role": "user", "content": PROMPT}]}),
    ("temperature_07", {"messages": [{"role": "user", "content": PROMPT}], "temperature": 0.7}),
    ("seed_0", {"messages": [{"role": "user", "content": PROMPT}], "seed": 0}),
    ("top_k_0", {"messages": [{"role": "user", "content": PROMPT}], "top_k": 0}),
    ("typical_p_unknown_field", {"messages": [{"role": "user", "content": PROMPT}], "typical_p": 0.5}),
    ("max_tokens_neg", {"messages": [{"role": "user", "content": PROMPT}], "max_tokens": -1}),
    ("top_p_15", {"messages": [{"role": "user", "content": PROMPT}], "top_p": 1.5}),
    ("role_bad", {"messages": [{"role": "robot", "content": PROMPT}]}),
    ("logprobs_int", {"messages": [{"role": "user", "content": PROMPT}], "logprobs": 5}),
    # grammars: the body's, response_format's (llama_chat_format.py:672-675) and a
    # named tool's (686-722)
    ("grammar", {"messages": [{"role": "user", "content": PROMPT}], "grammar": GRAMMAR}),
    ("grammar_empty", {"messages": [{"role": "user", "content": PROMPT}], "grammar": ""}),
    ("response_format_json_object", {"messages": [{"role": "user", "content": PROMPT}],
                                     "response_format": {"type": "json_object"}}),
    ("response_format_json_object_schema", {"messages": [{"role": "user", "content": PROMPT}],
                                            "response_format": {"type": "json_object",
                                                                "schema": TOOL["function"]["parameters"]}}),
    ("response_format_text", {"messages": [{"role": "user", "content": PROMPT}],
                              "response_format": {"type": "text"}}),
    ("response_format_text_and_grammar", {"messages": [{"role": "user", "content": PROMPT}],
                                          "response_format": {"type": "text"}, "grammar": GRAMMAR}),
    ("response_format_json_schema", {"messages": [{"role": "user", "content": PROMPT}],
                                     "response_format": {"type": "json_schema"}}),
    ("response_format_string", {"messages": [{"role": "user", "content": PROMPT}],
                                "response_format": "json_object"}),
    ("tool_choice_named", {"messages": [{"role": "user", "content": PROMPT}], "tools": [TOOL],
                           "tool_choice": {"type": "function", "function": {"name": "get_weather"}}}),
    ("tool_choice_named_unknown", {"messages": [{"role": "user", "content": PROMPT}], "tools": [TOOL],
                                   "tool_choice": {"type": "function", "function": {"name": "nope"}}}),
    ("tool_choice_named_no_tools", {"messages": [{"role": "user", "content": PROMPT}],
                                    "tool_choice": {"type": "function", "function": {"name": "get_weather"}}}),
    ("tool_choice_auto", {"messages": [{"role": "user", "content": PROMPT}], "tools": [TOOL],
                          "tool_choice": "auto"}),
    ("tool_choice_required", {"messages": [{"role": "user", "content": PROMPT}], "tools": [TOOL],
                              "tool_choice": "required"}),
    ("tool_choice_bad", {"messages": [{"role": "user", "content": PROMPT}], "tools": [TOOL],
                         "tool_choice": "any"}),
    ("function_call_named", {"messages": [{"role": "user", "content": PROMPT}],
                             "functions": [TOOL["function"]], "function_call": {"name": "get_weather"}}),
    ("function_call_auto_over_tool_choice", {"messages": [{"role": "user", "content": PROMPT}],
                                             "tools": [TOOL], "function_call": "auto",
                                             "tool_choice": {"type": "function",
                                                             "function": {"name": "get_weather"}}}),
]


def wanted(where, fixture: str, kind: str) -> bool:
    if where == ALL:
        return True
    if where == MODEL_ONLY:
        return kind == "model"
    if where == EDGE_ONLY:
        return kind == "edge"
    return any(wanted(w, fixture, kind) if w in (ALL, MODEL_ONLY, EDGE_ONLY) else w == fixture
               for w in where)


# ---------------------------------------------------------------- case kinds


def chain_cases(llm: Llama, server: Server) -> list[dict]:
    resolved = {}
    for name, api, route, request, _ in CHAIN_REQUESTS:
        if api == "python":
            rec = resolve_python(llm, dict(request, seed=SEED))
            resolved[name] = (dict(request, seed=SEED), rec)
        else:
            body = dict(SERVER_BASE[route], **request)
            res = server.resolve(route, body)
            assert "init" in res, (name, res)
            resolved[name] = (body, res["init"])
    cases = []
    for path in fixture_files():
        logits, input_ids, meta = load(path)
        fixture = f"{path.parent.name}/{path.stem}"
        kind = meta.get("kind", "model")
        accepted_gen = generated(input_ids, meta)
        variants = []
        for name, api, route, _, where in CHAIN_REQUESTS:
            if not wanted(where, fixture, kind):
                continue
            if name == "logit_bias" and len(logits) < 2:
                continue  # the processor indexes ids 0 and 1: an IndexError on V=1
            variants.append((name, api, route, accepted_gen))
            if kind == "model" and name == "rep13":
                # the whole context accepted (as llama-server does): only the last 64 count
                variants.append(("rep13_accept_context", api, route, list(input_ids)))
        for name, api, route, accepted in variants:
            base = name if name != "rep13_accept_context" else "rep13"
            request, rec = resolved[base]
            case = {"name": name, "fixture": fixture, "api": api, "request": request,
                    "resolved": resolved_json(rec), "seed": rec["seed"],
                    "accepted": accepted, "prompt_ids": input_ids}
            if route:
                case["route"] = route
            case.update(run_chain(llm, rec["kwargs"], rec["seed"], accepted, logits, DRAWS))
            cases.append(case)
        print(f"record.py: {fixture}: {len(variants)} chain cases", file=sys.stderr)
    return cases


def prompt_ids() -> list[int]:
    return load(REPO / "fixtures" / (PROMPT_FIXTURE + ".safetensors"))[1]


class TokenTap:
    """Collects the tokens the sampler chain selects: wraps LlamaSampler.sample."""
    orig = _internals.LlamaSampler.sample
    tokens: list[int] = []

    @classmethod
    def install(cls):
        def sample(self, ctx, idx=-1):
            t = cls.orig(self, ctx, idx)
            cls.tokens.append(int(t))
            return t
        _internals.LlamaSampler.sample = sample


TokenTap.install()


def completion_tokens(llama_kwargs: dict, request: dict, calls: int = 1, direct_generate: bool = False):
    llm = Llama(model_path=str(MODEL), **LLAMA_KW, **llama_kwargs)
    try:
        out = {"llama_seed": llm._seed, "calls": []}
        for _ in range(calls):
            Log.clear()
            TokenTap.tokens = []
            if direct_generate:
                for t in llm.generate(prompt_ids()):
                    if len(TokenTap.tokens) >= SEED_MAX_TOKENS:
                        break
            else:
                llm.create_completion(prompt=prompt_ids(), max_tokens=SEED_MAX_TOKENS, **request)
            out["calls"].append({"init_seed": Log.init[0]["seed"], "seeds": [dict(s) for s in Log.seeds],
                                 "tokens": list(TokenTap.tokens)})
        return out
    finally:
        llm.close()


SEED_CASES = [
    # (name, Llama kwargs, create_completion kwargs)
    ("llama_default", {}, {}),
    ("llama_seed_none", {"seed": None}, {}),
    ("llama_seed_0", {"seed": 0}, {}),
    ("llama_seed_1", {"seed": 1}, {}),
    ("llama_seed_1234", {"seed": 1234}, {}),
    ("llama_seed_neg1", {"seed": -1}, {}),
    ("llama_seed_u32max", {"seed": 2**32 - 1}, {}),
    ("completion_seed_none", {}, {"seed": None}),
    ("completion_seed_0", {}, {"seed": 0}),
    ("completion_seed_1", {}, {"seed": 1}),
    ("completion_seed_1234", {}, {"seed": 1234}),
    ("completion_seed_neg1", {}, {"seed": -1}),
    ("completion_seed_u32max", {}, {"seed": 2**32 - 1}),
    ("completion_seed_2pow32", {}, {"seed": 2**32}),
]


def seed_cases() -> list[dict]:
    cases = []
    pids = prompt_ids()
    for name, lk, req in SEED_CASES:
        try:
            a = completion_tokens(lk, req)
            b = completion_tokens(lk, req)
        except Exception as e:  # recorded, as the caller would see it
            cases.append({"name": name, "kind": "seed", "llama_kwargs": lk, "request": req,
                          "prompt_ids": pids, "max_tokens": SEED_MAX_TOKENS,
                          "error": f"{type(e).__name__}: {e}",
                          "init_sampler_seed": Log.init[0]["seed"] if Log.init else None})
            continue
        ca, cb = a["calls"][0], b["calls"][0]
        case = {"name": name, "kind": "seed", "llama_kwargs": lk, "request": req, "prompt_ids": pids,
                "max_tokens": SEED_MAX_TOKENS, "llama_seed": a["llama_seed"],
                "init_sampler_seed": ca["init_seed"], "chain_seed": ca["seeds"][0]["arg"],
                "sampler": ca["seeds"][0]["sampler"]}
        same = ca["seeds"][0]["get_seed"] == cb["seeds"][0]["get_seed"]
        case["repeatable"] = same
        if same:
            case["dist_seed_cur"] = ca["seeds"][0]["get_seed"]
            assert ca["tokens"] == cb["tokens"], name
            case["tokens"] = ca["tokens"]
        else:
            case["dist_seed_cur"] = None
            case["tokens"] = None
        cases.append(case)
    # two completions without a seed on one Llama: each derives the next seed from the last
    a = completion_tokens({}, {}, calls=3)
    cases.append({"name": "llama_default_three_calls", "kind": "seed", "llama_kwargs": {}, "request": {},
                  "prompt_ids": pids, "max_tokens": SEED_MAX_TOKENS, "llama_seed": a["llama_seed"],
                  "calls": [{"init_sampler_seed": c["init_seed"], "chain_seed": c["seeds"][0]["arg"],
                             "dist_seed_cur": c["seeds"][0]["get_seed"], "tokens": c["tokens"]}
                            for c in a["calls"]]})
    # Llama.generate called directly: no seed derivation, dist gets self._seed
    a = completion_tokens({}, {}, direct_generate=True)
    b = completion_tokens({}, {}, direct_generate=True)
    same = a["calls"][0]["seeds"][0]["get_seed"] == b["calls"][0]["seeds"][0]["get_seed"]
    cases.append({"name": "generate_direct_default", "kind": "seed", "llama_kwargs": {},
                  "request": {"api": "Llama.generate(prompt_ids)"}, "prompt_ids": pids,
                  "max_tokens": SEED_MAX_TOKENS, "llama_seed": a["llama_seed"],
                  "init_sampler_seed": a["calls"][0]["init_seed"],
                  "chain_seed": a["calls"][0]["seeds"][0]["arg"], "sampler": "dist", "repeatable": same,
                  "dist_seed_cur": a["calls"][0]["seeds"][0]["get_seed"] if same else None,
                  "tokens": a["calls"][0]["tokens"] if same else None})
    # two fresh processes, two completions each without a seed (#1809)
    runs = []
    for _ in range(2):
        p = subprocess.run([sys.executable, __file__, "--fresh-process-probe"], check=True,
                           capture_output=True, text=True)
        runs.append(json.loads(p.stdout))
    cases.append({"name": "fresh_process_no_seed", "kind": "seed", "llama_kwargs": {}, "request": {},
                  "prompt_ids": pids, "max_tokens": SEED_MAX_TOKENS, "processes": runs,
                  "same_across_processes": runs[0] == runs[1]})
    return cases


def fresh_process_probe() -> int:
    a = completion_tokens({}, {}, calls=2)
    print(json.dumps([{"chain_seed": c["seeds"][0]["arg"], "dist_seed_cur": c["seeds"][0]["get_seed"],
                       "tokens": c["tokens"]} for c in a["calls"]], sort_keys=True))
    return 0


WINDOW_REQUEST = {"repeat_penalty": 1.3, "max_tokens": WINDOW_STEPS, "seed": SEED}
# SmolLM2's ChatML around a request that makes it repeat itself, tokenized by
# the real Llama.tokenize(special=True): with repeat_penalty 1.3 the second
# "Hello" is penalized (1.0 answers "1. Hello\n2. Hello\n", 1.3 "1. Hello\n2. hello").
WINDOW_PROMPT = "<|im_start|>user\nRepeat the word hello five times.<|im_end|>\n<|im_start|>assistant\n"


def penalty_window() -> tuple[list[dict], bytes]:
    """A real completion; per step: accepted so far, logits (via a recording
    logits_processor), and the candidate array the real chain left (via an
    observer custom sampler appended after dist)."""
    llm = Llama(model_path=str(MODEL), **LLAMA_KW)
    steps_logits: list[np.ndarray] = []
    observed: list[dict] = []

    def recorder(input_ids, scores):
        steps_logits.append(np.array(scores, dtype=np.float32, copy=True))
        return scores

    def observer(arr_p):
        out = read_array(arr_p)
        observed.append({"ids": out["id"].tolist(), "p": out["p"].tolist(),
                         "selected": int(out["id"][arr_p.contents.selected])})

    def on_dist(sampler):
        sampler.add_custom(observer)

    pids = llm.tokenize(WINDOW_PROMPT.encode(), add_bos=False, special=True)
    try:
        Log.clear()
        TokenTap.tokens = []
        Log.on_dist = on_dist
        try:
            llm.create_completion(prompt=pids, logits_processor=L.LogitsProcessorList([recorder]),
                                  **WINDOW_REQUEST)
        finally:
            Log.on_dist = None
        rec = Log.init[0]
        tokens = list(TokenTap.tokens)
        assert len(steps_logits) == len(observed) == len(tokens), (len(steps_logits), len(observed))
        # the chain as _init_sampler built it, with the observer after dist
        real_kwargs = rec["kwargs"]
        logits = np.stack(steps_logits)
        # replay: the real _init_sampler without the recorder, on the stored logits
        replay_kwargs = dict(real_kwargs, logits_processor=None)
        llm.set_seed(rec["seed"])
        sampler = ORIG_INIT_SAMPLER(llm, **replay_kwargs)
        replay_chain = chain_names(sampler)
        cases = []
        for i, (row, obs, tok) in enumerate(zip(logits, observed, tokens)):
            assert obs["selected"] == tok
            ids, probs, sel = apply(sampler, row)
            kids, kp = kept(ids, probs)
            oids, op = kept(obs["ids"], obs["p"])
            assert (kids, kp, sel) == (oids, op, tok), f"replay differs at step {i}"
            cases.append({
                "name": f"window_step{i}", "kind": "penalty_window",
                "fixture": f"llama-cpp-python/{Path(WINDOW_FILE).stem}#{i}", "step": i,
                "api": "python", "request": {k: v for k, v in WINDOW_REQUEST.items()},
                "resolved": resolved_json(rec), "seed": rec["seed"],
                "chain": ["custom:logits_processor"] + replay_chain + ["custom:observer"],
                "prompt": WINDOW_PROMPT, "prompt_ids": pids, "accepted": tokens[:i],
                "ids": oids, "p": op, "size": len(obs["ids"]), "token": tok})
            sampler.accept(tok)
        sampler.close()
        blob = st_save({"logits": logits, "tokens": np.array(tokens, dtype=np.int32),
                        "prompt_ids": np.array(pids, dtype=np.int32)},
                       # one metadata key: safetensors writes its metadata map in no fixed
                       # order, so several keys would not regenerate bit for bit
                       metadata={"sampling_parity": json.dumps({
                           "format": "sampling-parity-llama-cpp-python-window/1",
                           "description": "SmolLM2-135M-Instruct Q4_1 logits at each step of one "
                           "llama-cpp-python 0.3.36 create_completion (read by a logits_processor "
                           "that returns them unchanged); row i = step i; tokens[i] = the token "
                           "the real chain chose at step i",
                           "request": WINDOW_REQUEST, "prompt": WINDOW_PROMPT,
                           "model": MODEL.name}, sort_keys=True)})
        return cases, blob
    finally:
        llm.close()


SITE_PACKAGES = str(Path(L.__file__).resolve().parents[1])


def scrub(v):
    """The error text names the installed app.py by its absolute path: written
    as <site-packages>/llama_cpp/server/app.py so the fixture does not depend on
    where the venv is."""
    if isinstance(v, str):
        return v.replace(SITE_PACKAGES, "<site-packages>")
    if isinstance(v, dict):
        return {k: scrub(x) for k, x in v.items()}
    if isinstance(v, list):
        return [scrub(x) for x in v]
    return v


def server_request_cases(server: Server) -> list[dict]:
    cases = []
    for route, bodies in (("/v1/completions", COMPLETION_BODIES), ("/v1/chat/completions", CHAT_BODIES)):
        for name, body in bodies:
            res = server.resolve(route, body)
            prefix = "completions" if route == "/v1/completions" else "chat"
            case = {"name": f"{prefix}_{name}", "kind": "server_request", "route": route, "body": body}
            if "init" not in res:
                # a body that reached _init_sampler was answered by the recorder's own
                # interruption: only a real refusal has a status worth recording
                case["status"] = res["status"]
            calls = dict(res["calls"])
            if route == "/v1/completions" and "__call__" in calls:
                case["kwargs"] = calls["__call__"]
            elif "create_chat_completion" in calls:
                case["kwargs"] = calls["create_chat_completion"]
            if "create_completion" in calls:
                cc = dict(calls["create_completion"])
                if route == "/v1/chat/completions" and "prompt" in cc:
                    cc["prompt"] = f"<{len(cc['prompt'])} token ids: the chat template applied>"
                case["create_completion_kwargs"] = cc
            if "init" in res:
                case["init_sampler_kwargs"] = resolved_json(res["init"])
                case["init_sampler_seed"] = res["init"]["seed"]
            else:
                case["error"] = scrub(res["answer"])
            cases.append(case)
    return cases


# ---------------------------------------------------------------- main


def record() -> tuple[str, bytes]:
    if not MODEL.exists():
        raise SystemExit(f"record.py: {MODEL} is missing (scripts/fetch-model.sh)")
    llm = Llama(model_path=str(MODEL), **LLAMA_KW)
    server = Server()
    header = {"format": FORMAT, "llama_cpp_python": L.__version__, "llama_cpp_commit": LLAMA_CPP_COMMIT,
              "model": MODEL.name, "model_sha256": hashlib.sha256(MODEL.read_bytes()).hexdigest(),
              "n_vocab": llm.n_vocab(), "last_n_tokens_size": llm.last_n_tokens_size, "n_ctx": N_CTX,
              "draws": DRAWS, "seed": SEED, "chain_prompt": PROMPT,
              "server_base": SERVER_BASE, "window_file": WINDOW_FILE}
    lines = [json.dumps(header, sort_keys=True)]
    for case in chain_cases(llm, server):
        lines.append(json.dumps(case, sort_keys=True))
    for case in server_request_cases(server):
        lines.append(json.dumps(case, sort_keys=True))
    print(f"record.py: server requests done", file=sys.stderr)
    for case in seed_cases():
        lines.append(json.dumps(case, sort_keys=True))
    print(f"record.py: seed cases done", file=sys.stderr)
    wcases, blob = penalty_window()
    for case in wcases:
        lines.append(json.dumps(case, sort_keys=True))
    llm.close()
    return "\n".join(lines) + "\n", blob


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--check", action="store_true",
                    help="regenerate in memory and fail with a diff if fixtures/llama-cpp-python differs")
    ap.add_argument("--fresh-process-probe", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if L.__version__ != "0.3.36":
        print(f"record.py: llama-cpp-python {L.__version__} is not the pinned 0.3.36 "
              "(which vendors llama.cpp 0c1e57098); run setup.sh", file=sys.stderr)
        return 2
    if args.fresh_process_probe:
        return fresh_process_probe()
    text, blob = record()
    wpath = OUT_DIR / WINDOW_FILE
    if args.check:
        ok = True
        if not wpath.exists() or wpath.read_bytes() != blob:
            print(f"record.py: DIFF: {wpath.relative_to(REPO)} differs", file=sys.stderr)
            ok = False
        old = OUT.read_text() if OUT.exists() else ""
        if old != text:
            ok = False
            old_lines, new_lines = old.splitlines(), text.splitlines()
            if len(old_lines) != len(new_lines):
                print(f"record.py: DIFF: {len(old_lines)} committed lines, {len(new_lines)} regenerated",
                      file=sys.stderr)
            shown = 0
            for i, (a, b) in enumerate(zip(old_lines, new_lines)):
                if a == b:
                    continue
                ja, jb = json.loads(a), json.loads(b)
                keys = sorted(k for k in set(ja) | set(jb) if ja.get(k) != jb.get(k))
                where = f"{jb.get('fixture', jb.get('kind', 'header'))} / {jb.get('name', '')}"
                print(f"record.py: DIFF line {i + 1} ({where}): {', '.join(keys)}", file=sys.stderr)
                for k in keys[:3]:
                    for line in difflib.unified_diff(json.dumps(ja.get(k)).split(", "),
                                                     json.dumps(jb.get(k)).split(", "),
                                                     "committed", "regenerated", lineterm="", n=1):
                        print(f"    {line[:200]}", file=sys.stderr)
                shown += 1
                if shown >= 10:
                    print("record.py: ... (more differences)", file=sys.stderr)
                    break
        if ok:
            print(f"record.py: {OUT.relative_to(REPO)} and {wpath.relative_to(REPO)} are up to date",
                  file=sys.stderr)
            return 0
        print("record.py: DIFF; regenerate with scripts/reference/llama-cpp-python/.venv/bin/python "
              "scripts/reference/llama-cpp-python/record.py", file=sys.stderr)
        return 1
    OUT_DIR.mkdir(parents=True, exist_ok=True)
    OUT.write_text(text)
    wpath.write_bytes(blob)
    print(f"record.py: wrote {OUT.relative_to(REPO)} ({len(text.splitlines())} lines) and "
          f"{wpath.relative_to(REPO)} ({len(blob)} bytes)", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
