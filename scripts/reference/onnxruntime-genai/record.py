#!/usr/bin/env python3
"""Record what ONNX Runtime GenAI 0.18.0 (CPU) does when it samples our fixture logits.

For every SmolLM2 and edge fixture (fixtures/smollm2, fixtures/edge) and every
search-option set in CASES (plus EDGE_CASES on the edge fixtures), this script

  * builds a zero decoder for the fixture's vocabulary size V in a temporary
    directory (never committed): a one-layer ONNX graph made with onnx.helper
    with the inputs and outputs ORT GenAI's decoder-only ("llama") model
    expects (input_ids int32 [B,S], attention_mask int64 [B,T],
    past_key_values.0.key/value and present.0.key/value float32 [B,1,T,1],
    logits float32 [B,S,V], all zeros) and a genai_config.json for it;
  * for each draw makes a fresh og.GeneratorParams, calls
    set_search_options(**search, random_seed=seed), a fresh og.Generator,
    append_tokens(input_ids of the fixture) (so the generator's sequence, which
    the repetition penalty reads, is the fixture's context), then
    set_logits(fixture logits) (which replaces the zero logits the model
    computed) and one generate_next_token(); the token is get_next_tokens()[0];
  * for the multi-step cases (MULTI, edge_multi), keeps the same generator
    and repeats get_logits() (runs the zero model on the new token),
    set_logits(that step's logits: the fixture's, or a one-hot row),
    generate_next_token(), so the repetition penalty also sees the generated
    tokens and the RNG state carries over; a draw stops early if the
    generator is done (it drew the EOS id);
  * records a refused request (set_search_options, Generator(...) or
    generate_next_token raising) with the exception text verbatim.

Output: fixtures/onnxruntime-genai/cases.jsonl (JSON lines, sorted keys),
format described in scripts/reference/onnxruntime-genai/NOTES.md.

With --harness PATH (default: $ORTG_HARNESS or /work/harness/ortg/ortg_dist
when that file exists), every single-step sampling case also gets the kept
distribution as onnxruntime-genai's own CPU sampling code leaves it: the
out-of-tree harness (NOTES.md, "Harness") compiles src/sampling_distribution.h
unmodified and calls ApplyRepetitionPenaltyToLogits, ComputeSampledCategorical
and SampleCategoricalToken. Its "ids"/"p" are only written if its token for
every seed equals the wheel's, and the recorder stops otherwise. Without a
harness those fields are left out (and --check then fails on a fixture that
has them, saying so).

Usage (after scripts/reference/onnxruntime-genai/setup.sh):

    scripts/reference/onnxruntime-genai/.venv/bin/python scripts/reference/onnxruntime-genai/record.py
    scripts/reference/onnxruntime-genai/.venv/bin/python scripts/reference/onnxruntime-genai/record.py --check
"""

from __future__ import annotations

import argparse
import difflib
import json
import math
import os
import sys
import tempfile
from pathlib import Path

import numpy as np
import onnx
import onnxruntime
from onnx import TensorProto, helper
from safetensors import safe_open

import onnxruntime_genai as og

REPO = Path(__file__).resolve().parents[3]
OUT = REPO / "fixtures" / "onnxruntime-genai" / "cases.jsonl"
FORMAT = "sampling-parity-onnxruntime-genai/1"
PACKAGE = "onnxruntime-genai==0.18.0"
ORT_VERSION = "1.32.0"
SOURCE_COMMIT = "00d66ef04ec56c0dae66d93ae2690f72e7bb90eb"  # onnxruntime_genai.__commit__ of the wheel
READ_COMMIT = "a0c04eb1313b886c963e415bbd974748cb89a4eb"  # source actually read (see NOTES.md)
CONTEXT = 4096
EOS = 0  # eos_token_id = pad_token_id = 0 in the zero model's genai_config.json

# Seeds: 40 small ones and 160 spread over 0..2^31-1 (Knuth's multiplicative
# hash of 1..160, mod 2^31), sorted, no duplicates. Greedy cases use GREEDY_SEEDS.
SEEDS = sorted(set(list(range(40)) + [(i * 2654435761) % 2**31 for i in range(1, 161)]))
GREEDY_SEEDS = [0, 1, 2147483647]

# name -> options exactly as passed to set_search_options (random_seed added per draw).
CASES: list[tuple[str, dict]] = [
    ("defaults", {}),
    ("defaults_greedy", {"do_sample": False}),
    ("defaults_sample", {"do_sample": True}),  # top_k 50, top_p 0, T 1: the top-k path
    ("k0_trap", {"do_sample": True, "top_k": 0}),  # top_p 0 -> nucleus of one token (#1237)
    ("t07", {"do_sample": True, "temperature": 0.7}),
    ("k40", {"do_sample": True, "top_k": 40}),
    ("k40_t07", {"do_sample": True, "top_k": 40, "temperature": 0.7}),
    ("p09_k0", {"do_sample": True, "top_k": 0, "top_p": 0.9}),
    ("p09_k0_t07", {"do_sample": True, "top_k": 0, "top_p": 0.9, "temperature": 0.7}),
    ("p09_k1", {"do_sample": True, "top_k": 1, "top_p": 0.9}),
    ("k40_p09", {"do_sample": True, "top_k": 40, "top_p": 0.9}),
    ("k40_p09_t07", {"do_sample": True, "top_k": 40, "top_p": 0.9, "temperature": 0.7}),
    ("k1", {"do_sample": True, "top_k": 1}),
    ("t0", {"do_sample": True, "temperature": 0.0}),
    ("t15", {"do_sample": True, "temperature": 1.5}),
    ("t15_k0_p1", {"do_sample": True, "temperature": 1.5, "top_k": 0, "top_p": 1.0}),
    ("k0_p1", {"do_sample": True, "top_k": 0, "top_p": 1.0}),
    ("p0999_k0", {"do_sample": True, "top_k": 0, "top_p": 0.999}),
    ("rep13_greedy", {"do_sample": False, "repetition_penalty": 1.3}),
    ("rep13_k40", {"do_sample": True, "top_k": 40, "repetition_penalty": 1.3}),
    ("rep13_p09_k0", {"do_sample": True, "top_k": 0, "top_p": 0.9, "repetition_penalty": 1.3}),
    ("rep07_greedy", {"do_sample": False, "repetition_penalty": 0.7}),
    ("t_neg1", {"do_sample": True, "temperature": -1.0}),
    ("t_neg1_k0_p09", {"do_sample": True, "temperature": -1.0, "top_k": 0, "top_p": 0.9}),
    ("top_k_huge", {"do_sample": True, "top_k": 1000000}),
    ("top_k_neg", {"do_sample": True, "top_k": -1}),
    ("top_k_neg_greedy", {"do_sample": False, "top_k": -1}),
    ("top_p_15", {"do_sample": True, "top_k": 0, "top_p": 1.5}),
    ("top_p_neg", {"do_sample": True, "top_k": 0, "top_p": -0.1}),
    ("top_p_15_greedy", {"do_sample": False, "top_p": 1.5}),
    ("top_k_float", {"do_sample": True, "top_k": 2.5}),
    ("top_k_str", {"do_sample": True, "top_k": "40"}),
    ("do_sample_int", {"do_sample": 1}),
    ("unknown_option", {"do_sample": True, "min_p": 0.1}),
    ("seed_too_big", {"do_sample": True, "random_seed": 2**31}),
    ("num_beams2_sample", {"do_sample": True, "num_beams": 2}),
]
# Multi-step cases: (name, options, the logits of each step).
# Each step's logits: "fixture" = the fixture's, "one_hot" = -inf except 0.0 at id V-1
# (a nucleus keeps one token there, so that step draws no random number).
MULTI: list[tuple[str, dict, list[str]]] = [
    ("rep13_greedy_4steps", {"do_sample": False, "repetition_penalty": 1.3}, ["fixture"] * 4),
    ("rep13_k40_4steps", {"do_sample": True, "top_k": 40, "repetition_penalty": 1.3}, ["fixture"] * 4),
    ("k40_4steps", {"do_sample": True, "top_k": 40}, ["fixture"] * 4),
    ("p09_k0_4steps", {"do_sample": True, "top_k": 0, "top_p": 0.9}, ["fixture"] * 4),
    ("p09_k0_one_hot_then_fixture", {"do_sample": True, "top_k": 0, "top_p": 0.9},
     ["one_hot", "fixture", "one_hot", "fixture"]),
    ("k40_one_hot_then_fixture", {"do_sample": True, "top_k": 40}, ["one_hot", "fixture", "one_hot", "fixture"]),
]


def edge_multi(v: int) -> list[tuple[str, dict, list[str]]]:
    """Multi-step cases for the small edge fixtures, where top_k 40 is refused."""
    return [
        ("rep13_kV_4steps", {"do_sample": True, "top_k": v, "repetition_penalty": 1.3}, ["fixture"] * 4),
        ("kV_4steps", {"do_sample": True, "top_k": v}, ["fixture"] * 4),
        ("kV_one_hot_then_fixture", {"do_sample": True, "top_k": v}, ["one_hot", "fixture", "one_hot", "fixture"]),
    ]
MULTI_SEEDS = SEEDS[:40] + SEEDS[-10:]


def rounding_cases(v: int, stem: str) -> list[tuple[str, dict]]:
    """top_k = V-1 and V-2 (and V), where libstdc++'s discrete_distribution can see the
    double partial sums of the kept weights pass 1 before the last one, which it then
    sets to exactly 1 (NOTES.md, "The draw and the RNG"). On the SmolLM2 files at T 0.8
    (and int_ties_v1000 at T 0.05 and 0.1) they do; int_ties_v1000 at T 0.8 is the
    control where they do not. Recorded after every other case of the file, so the
    lines recorded before these cases were added are unchanged."""
    if stem == "int_ties_v1000":
        return [(f"kVm{d}_t{tag}", {"do_sample": True, "top_k": v - d, "temperature": t})
                for tag, t in (("005", 0.05), ("01", 0.1), ("08", 0.8)) for d in (1, 2)]
    if v < 1000:
        return []
    return [("kVm1_t08", {"do_sample": True, "top_k": v - 1, "temperature": 0.8}),
            ("kVm2_t08", {"do_sample": True, "top_k": v - 2, "temperature": 0.8}),
            ("kV_t08", {"do_sample": True, "top_k": v, "temperature": 0.8})]


def edge_cases(v: int, stem: str) -> list[tuple[str, dict]]:
    """Extra cases for an edge fixture of vocabulary v: top_k = V (the largest
    accepted), top_k = V + 1, and the fixture's own top-p boundary."""
    out = [
        ("kV", {"do_sample": True, "top_k": v}),
        ("kV_t07", {"do_sample": True, "top_k": v, "temperature": 0.7}),
        ("kV_p09", {"do_sample": True, "top_k": v, "top_p": 0.9}),
        ("kV_plus1", {"do_sample": True, "top_k": v + 1}),
        ("k2", {"do_sample": True, "top_k": 2}),
        ("k3", {"do_sample": True, "top_k": 3}),
        ("kV_rep13", {"do_sample": True, "top_k": v, "repetition_penalty": 1.3}),
        ("kV_rep2", {"do_sample": True, "top_k": v, "repetition_penalty": 2.0}),
        ("p05_k0", {"do_sample": True, "top_k": 0, "top_p": 0.5}),
    ]
    if stem.startswith("top_p_boundary_"):
        p = int(stem.split("_")[3]) / 100
        out.append((f"boundary_p{p}_k0", {"do_sample": True, "top_k": 0, "top_p": p}))
        out.append((f"boundary_p{p}_kV", {"do_sample": True, "top_k": v, "top_p": p}))
    return out


# --------------------------------------------------------------------------
# The zero decoder
# --------------------------------------------------------------------------

def build_model(directory: str, vocab: int) -> None:
    """A decoder whose logits are all zero and whose KV cache is a [B,1,T,1] zero tensor."""
    X = helper.make_tensor_value_info
    F, I64 = TensorProto.FLOAT, TensorProto.INT64
    inputs = [X("input_ids", TensorProto.INT32, ["batch_size", "sequence_length"]),
              X("attention_mask", I64, ["batch_size", "total_sequence_length"]),
              X("past_key_values.0.key", F, ["batch_size", 1, "past_sequence_length", 1]),
              X("past_key_values.0.value", F, ["batch_size", 1, "past_sequence_length", 1])]
    outputs = [X("logits", F, ["batch_size", "sequence_length", vocab]),
               X("present.0.key", F, ["batch_size", 1, "total_sequence_length", 1]),
               X("present.0.value", F, ["batch_size", 1, "total_sequence_length", 1])]

    def const(name, vals):
        return helper.make_node("Constant", [], [name], value=helper.make_tensor(name, I64, [len(vals)], vals))

    zero = helper.make_tensor("zero", F, [1], [0.0])
    nodes = [
        helper.make_node("Shape", ["input_ids"], ["ids_shape"]),
        const("v", [vocab]), const("one", [1]), const("i0", [0]), const("i1", [1]),
        helper.make_node("Concat", ["ids_shape", "v"], ["logits_shape"], axis=0),
        helper.make_node("ConstantOfShape", ["logits_shape"], ["logits"], value=zero),
        helper.make_node("Gather", ["ids_shape", "i0"], ["b"], axis=0),
        helper.make_node("Gather", ["ids_shape", "i1"], ["s"], axis=0),
        helper.make_node("Concat", ["b", "one", "s", "one"], ["kv_shape"], axis=0),
        helper.make_node("ConstantOfShape", ["kv_shape"], ["kv_new"], value=zero),
        helper.make_node("Concat", ["past_key_values.0.key", "kv_new"], ["present.0.key"], axis=2),
        helper.make_node("Concat", ["past_key_values.0.value", "kv_new"], ["present.0.value"], axis=2),
    ]
    graph = helper.make_graph(nodes, "zero_decoder", inputs, outputs)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 14)])
    model.ir_version = 7
    onnx.checker.check_model(model)
    onnx.save(model, os.path.join(directory, "decoder.onnx"))
    config = {
        "model": {
            "type": "llama", "bos_token_id": 0, "eos_token_id": [EOS], "pad_token_id": 0,
            "vocab_size": vocab, "context_length": CONTEXT,
            "decoder": {
                "session_options": {"log_id": "onnxruntime-genai", "provider_options": []},
                "filename": "decoder.onnx", "num_attention_heads": 1, "num_key_value_heads": 1,
                "head_size": 1, "hidden_size": 1, "num_hidden_layers": 1,
                "inputs": {"input_ids": "input_ids", "attention_mask": "attention_mask",
                           "past_key_names": "past_key_values.%d.key",
                           "past_value_names": "past_key_values.%d.value"},
                "outputs": {"logits": "logits", "present_key_names": "present.%d.key",
                            "present_value_names": "present.%d.value"},
            },
        },
        "search": {"max_length": CONTEXT},
    }
    with open(os.path.join(directory, "genai_config.json"), "w") as f:
        json.dump(config, f, indent=1)


class Models:
    def __init__(self, root: str):
        self.root = root
        self.models: dict[int, og.Model] = {}

    def get(self, vocab: int) -> og.Model:
        if vocab not in self.models:
            d = os.path.join(self.root, f"v{vocab}")
            os.makedirs(d)
            build_model(d, vocab)
            self.models[vocab] = og.Model(d)
        return self.models[vocab]


# --------------------------------------------------------------------------
# Driving the generator
# --------------------------------------------------------------------------

class Refused(Exception):
    def __init__(self, stage: str, err: Exception):
        super().__init__(str(err))
        self.stage = stage
        self.text = str(err)


def new_generator(model, search: dict, seed: int | None, input_ids: list[int]):
    params = og.GeneratorParams(model)
    opts = dict(search)
    if seed is not None and "random_seed" not in opts:
        opts["random_seed"] = seed
    try:
        params.set_search_options(**opts)
    except Exception as e:  # noqa: BLE001 - recorded verbatim
        raise Refused("set_search_options", e)
    try:
        gen = og.Generator(model, params)
    except Exception as e:  # noqa: BLE001
        raise Refused("Generator", e)
    gen.append_tokens(np.array([input_ids], dtype=np.int32))
    return gen


def step(gen, logits2d: np.ndarray, first: bool) -> int:
    if not first:
        gen.get_logits()  # runs the zero model on the last token; set_logits needs computed logits
    gen.set_logits(logits2d)
    try:
        gen.generate_next_token()
    except Exception as e:  # noqa: BLE001
        raise Refused("generate_next_token", e)
    return int(gen.get_next_tokens()[0])


def load(path: Path) -> tuple[np.ndarray, list[int], dict]:
    with safe_open(str(path), framework="numpy") as f:
        return (f.get_tensor("logits").astype(np.float32), f.get_tensor("input_ids").tolist(),
                f.metadata())


def is_greedy(search: dict) -> bool:
    return (search.get("do_sample") is not True or search.get("top_k") == 1
            or search.get("temperature") == 0.0)


HARNESS: str | None = None
MAX_KEPT = 2500  # kept sets larger than this store "kept_size" only


def f32_bits(x: float) -> str:
    return format(int(np.array(x, dtype=np.float32).view(np.uint32)), "x")


def sampling_mode(search: dict, vocab: int) -> int | None:
    """Generator::InitializeSamplingMethod (generators.cpp) restated to pick the harness's entry:
    None = greedy, 0 = SampleTopK, 1 = SampleTopP, 2 = SampleTopKTopP."""
    if is_greedy(search):
        return None
    k = search.get("top_k", 50)
    p = float(np.float32(search.get("top_p", 0.0)))
    if 0.0 < p < 1.0 and k > 1:
        return 2
    return 0 if k > 1 else 1


def harness_dist(search: dict, logits: np.ndarray, seq: list[int], seeds: list[int]):
    import subprocess
    mode = sampling_mode(search, len(logits))
    head = [len(logits), int(search.get("top_k", 50)), f32_bits(search.get("top_p", 0.0)),
            f32_bits(search.get("temperature", 1.0)), f32_bits(search.get("repetition_penalty", 1.0)),
            mode, len(seq), len(seeds)]
    body = " ".join(map(str, head)) + "\n" + " ".join(format(int(u), "x") for u in logits.view(np.uint32))
    body += "\n" + " ".join(map(str, seq)) + "\n" + " ".join(map(str, seeds)) + "\n"
    out = subprocess.run([HARNESS], input=body, capture_output=True, text=True, check=True).stdout
    rows = {line.split(" ", 1)[0]: line.split()[1:] for line in out.splitlines()}
    probs = [float(x) for x in rows["p"]]
    return ([int(x) for x in rows["ids"]], [None if math.isnan(q) else q for q in probs],
            [int(x) for x in rows["tokens"]])


def run_case(models: Models, fixture: str, name: str, search: dict, logits: np.ndarray,
             input_ids: list[int], plan: list[str] | None = None) -> dict:
    model = models.get(len(logits))
    one_hot = np.full((1, len(logits)), -np.inf, dtype=np.float32)
    one_hot[0, -1] = 0.0
    per_step = [logits.reshape(1, -1) if p == "fixture" else one_hot for p in (plan or ["fixture"])]
    steps = len(per_step)
    case = {"fixture": fixture, "name": name, "search": search}
    if plan is not None:
        case["steps"] = steps
        case["step_logits"] = plan
    seeds = GREEDY_SEEDS if is_greedy(search) else (MULTI_SEEDS if steps > 1 else SEEDS)
    draws = []
    seq = None
    try:
        for s in seeds:
            gen = new_generator(model, search, s, input_ids)
            if seq is None:
                seq = [int(t) for t in gen.get_sequence(0)]
            toks = []
            for i in range(steps):
                toks.append(step(gen, per_step[i], first=(i == 0)))
                if steps > 1 and gen.is_done():  # sampled the EOS id: the sequence ends here
                    break
            d = {"seed": s, "token": toks[0]}
            if steps > 1:
                d["tokens"] = toks
            draws.append(d)
    except Refused as r:
        if draws:
            raise RuntimeError(f"{fixture}/{name}: refused after {len(draws)} draws: {r.text}")
        case["error"] = r.text
        case["stage"] = r.stage
        if seq is not None:
            case["input_ids"] = seq
        return case
    case["input_ids"] = seq
    case["draws"] = draws
    if HARNESS and plan is None and sampling_mode(search, len(logits)) is not None:
        ids, p, toks = harness_dist(search, logits, seq, [d["seed"] for d in draws])
        wheel = [d["token"] for d in draws]
        if toks != wheel:
            bad = next(i for i, (a, b) in enumerate(zip(toks, wheel)) if a != b)
            raise RuntimeError(f"{fixture}/{name}: harness token {toks[bad]} != wheel token "
                               f"{wheel[bad]} for seed {draws[bad]['seed']}")
        case["kept_size"] = len(ids)
        if len(ids) <= MAX_KEPT:
            case["ids"], case["p"] = ids, p
    return case


def record() -> list[str]:
    lines = []
    header = {
        "format": FORMAT, "package": PACKAGE, "onnxruntime_genai": og.__version__,
        "onnxruntime": onnxruntime.__version__, "source_commit": SOURCE_COMMIT,
        "source_read_commit": READ_COMMIT, "draws_per_case": len(SEEDS),
        "draws_per_greedy_case": len(GREEDY_SEEDS), "draws_per_multistep_case": len(MULTI_SEEDS),
        "model": "zero decoder built by record.py (logits all 0, overridden by set_logits); "
                 f"eos_token_id [{EOS}], pad_token_id 0, context_length {CONTEXT}, max_length {CONTEXT}",
        "defaults": og_defaults(),
        "set_logits_check": set_logits_check(),
        "harness": "src/sampling_distribution.h@" + READ_COMMIT + " compiled unmodified (NOTES.md)"
                   if HARNESS else None,
    }
    lines.append(json.dumps(header, sort_keys=True))
    files = sorted((REPO / "fixtures" / "smollm2").glob("*.safetensors")) + sorted(
        (REPO / "fixtures" / "edge").glob("*.safetensors"))
    with tempfile.TemporaryDirectory(prefix="ortg-zero-model-") as root:
        models = Models(root)
        for path in files:
            logits, input_ids, meta = load(path)
            fixture = f"{path.parent.name}/{path.stem}"
            cases = list(CASES)
            if meta.get("kind") == "edge":
                cases += edge_cases(len(logits), path.stem)
            for name, search in cases:
                lines.append(json.dumps(run_case(models, fixture, name, search, logits, input_ids),
                                        sort_keys=True, allow_nan=False))
            n = len(cases)
            if path.parent.name == "smollm2" or path.stem in ("rep_penalty_signs", "ties_3221"):
                multi = MULTI + (edge_multi(len(logits)) if meta.get("kind") == "edge" else [])
                for name, search, plan in multi:
                    lines.append(json.dumps(run_case(models, fixture, name, search, logits, input_ids,
                                                     plan), sort_keys=True, allow_nan=False))
                    n += 1
            for name, search in rounding_cases(len(logits), path.stem):
                lines.append(json.dumps(run_case(models, fixture, name, search, logits, input_ids),
                                        sort_keys=True, allow_nan=False))
                n += 1
            print(f"record.py: {fixture}: {n} cases", file=sys.stderr, flush=True)
    return lines


def set_logits_check() -> dict:
    """Shows that set_logits replaces the zero model's logits: on V = 8 with the
    nucleus over everything (top_k 0, top_p 1.0), the zero logits give tokens
    spread over the vocabulary, and logits that are -inf except at id 5 give 5
    for every seed."""
    one_hot = np.full((1, 8), -np.inf, dtype=np.float32)
    one_hot[0, 5] = 0.0
    search = {"do_sample": True, "top_k": 0, "top_p": 1.0}
    out = {"vocab": 8, "search": search, "input_ids": [1, 2, 3], "set_logits": "-inf except 0.0 at id 5",
           "seeds": list(range(20))}
    with tempfile.TemporaryDirectory(prefix="ortg-zero-model-") as d:
        build_model(d, 8)
        m = og.Model(d)
        for key, logits in (("tokens_model_logits", None), ("tokens_set_logits", one_hot)):
            toks = []
            for s in out["seeds"]:
                gen = new_generator(m, search, s, out["input_ids"])
                if logits is not None:
                    gen.set_logits(logits)
                gen.generate_next_token()
                toks.append(int(gen.get_next_tokens()[0]))
            out[key] = toks
        del m
    assert set(out["tokens_set_logits"]) == {5}, out
    assert len(set(out["tokens_model_logits"])) > 1, out
    return out


_DEFAULTS: dict | None = None


def og_defaults() -> dict:
    """get_search_options() of a fresh GeneratorParams (the zero model sets only max_length)."""
    global _DEFAULTS
    if _DEFAULTS is None:
        with tempfile.TemporaryDirectory(prefix="ortg-zero-model-") as d:
            build_model(d, 8)
            m = og.Model(d)
            _DEFAULTS = dict(sorted(og.GeneratorParams(m).get_search_options().items()))
            del m
    return _DEFAULTS


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--check", action="store_true",
                    help="regenerate in memory and fail with a diff if the committed fixture differs")
    ap.add_argument("--harness", default=os.environ.get("ORTG_HARNESS", "/work/harness/ortg/ortg_dist"),
                    help="the out-of-tree sampling harness (NOTES.md); 'none' to record without it")
    args = ap.parse_args()
    global HARNESS
    HARNESS = args.harness if args.harness != "none" and os.path.exists(args.harness) else None
    print(f"record.py: harness: {HARNESS or 'none (no ids/p)'}", file=sys.stderr)
    if og.__version__ != "0.18.0" or getattr(og, "__commit__", None) != SOURCE_COMMIT:
        print(f"record.py: onnxruntime-genai {og.__version__} ({getattr(og, '__commit__', '?')}) is not "
              f"the pinned 0.18.0 ({SOURCE_COMMIT}); run setup.sh", file=sys.stderr)
        return 2
    if onnxruntime.__version__ != ORT_VERSION:
        print(f"record.py: onnxruntime {onnxruntime.__version__} is not the pinned {ORT_VERSION}",
              file=sys.stderr)
        return 2
    text = "\n".join(record()) + "\n"
    if args.check:
        old = OUT.read_text() if OUT.exists() else ""
        if old == text:
            print(f"record.py: {OUT.relative_to(REPO)} is up to date "
                  f"({len(text.splitlines())} lines, bit for bit)", file=sys.stderr)
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
            print(f"record.py: DIFF line {i + 1} ({jb.get('fixture', 'header')} / {jb.get('name', '')}): "
                  f"{', '.join(keys)}", file=sys.stderr)
            for k in keys[:3]:
                for line in difflib.unified_diff(json.dumps(ja.get(k)).split(", "),
                                                 json.dumps(jb.get(k)).split(", "),
                                                 "committed", "regenerated", lineterm="", n=1):
                    print(f"    {line[:200]}", file=sys.stderr)
            shown += 1
            if shown >= 10:
                print("record.py: ... (more differences)", file=sys.stderr)
                break
        return 1
    OUT.parent.mkdir(parents=True, exist_ok=True)
    OUT.write_text(text)
    print(f"record.py: wrote {OUT.relative_to(REPO)}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
