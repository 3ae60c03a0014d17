#!/usr/bin/env python3
"""Record what transformers' own `generate()` does to next-token logits.

This is the Python half of the sampling-parity fixtures (see docs/fixtures.md).
For every context it calls, once per sampling setting, exactly

    model.generate(ids, attention_mask=torch.ones_like(ids), max_new_tokens=1,
                   output_scores=True, output_logits=True,
                   return_dict_in_generate=True, **kwargs)

and stores the raw logits (`g.logits[0][0]`) and the processed scores
(`g.scores[0][0]`, -inf where a token was filtered) in a safetensors file. We
never re-implement a processor here: the point is to capture transformers'
defaults and processor chain as they are, so the Rust side can be checked
against them.

Two kinds of fixtures:
  * model: SmolLM2-135M-Instruct (GGUF, Q4_1, dequantised to float32) on two
    chat-templated prompts followed by k tokens of the model's own greedy answer.
  * edge:  hand-built logits fed through a tiny PreTrainedModel whose forward
    returns those logits at every position, so the same generate call decides.

Run with the reference venv (scripts/reference/setup.sh), after
scripts/fetch-model.sh:

    scripts/reference/.venv/bin/python scripts/reference/hf_reference.py
    scripts/reference/.venv/bin/python scripts/reference/hf_reference.py --check

Progress and diagnostics go to stderr; data goes only to the fixture files.
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import tempfile
from pathlib import Path

# Sets the offline environment before transformers is imported.
import fixturelib  # noqa: E402
from fixturelib import (  # noqa: E402
    NOTICES,
    STANDARD_SETTINGS,
    CheckReport,
    check_verdict,
    common_metadata,
    compare_fixture,
    generate_once,
    greedy_answer,
    gguf_tokens,
    install_notice_collector,
    log,
    print_notices,
    record_context,
    require_transformers,
    same_bits,
    sha256_file,
    templated_prompt_ids,
    vocab_json,
    write_fixture,
)

import numpy as np  # noqa: E402
import torch  # noqa: E402
import transformers  # noqa: E402
from transformers import (  # noqa: E402
    AutoModelForCausalLM,
    AutoTokenizer,
    GenerationMixin,
    PreTrainedModel,
)

# 4.x spells it PretrainedConfig (renamed in 5.0).
PreTrainedConfig = getattr(transformers, "PreTrainedConfig", None) or transformers.PretrainedConfig
from transformers.modeling_outputs import CausalLMOutputWithPast  # noqa: E402

fixturelib.PROGRAM = "hf_reference"

REPO = Path(__file__).resolve().parents[2]
MODEL_NAME = "SmolLM2-135M-Instruct.Q4_1.gguf"
# Must match scripts/fetch-model.sh; checked again here so a fixture can never
# be recorded from different bytes than the ones its metadata names.
MODEL_SHA256 = "b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53"
VOCAB_FILE = "vocab.json"

PROMPTS: list[tuple[str, str]] = [
    ("hello", "How do you say hello in Chinese?"),
    ("write", "Write a short story about a lighthouse keeper."),
]
K_VALUES = (0, 7, 60)
ANSWER_TOKENS = 80


# --------------------------------------------------------------------------
# Model fixtures
# --------------------------------------------------------------------------

def load_model(model_dir: Path):
    gguf_path = model_dir / MODEL_NAME
    if not gguf_path.is_file():
        raise SystemExit(f"{gguf_path} not found: run scripts/fetch-model.sh first")
    digest = sha256_file(gguf_path)
    if digest != MODEL_SHA256:
        raise SystemExit(f"{gguf_path}: sha256 {digest} != expected {MODEL_SHA256}; rerun scripts/fetch-model.sh")
    log(f"loading {gguf_path} (dequantising to float32)")
    NOTICES.context = "load"
    tokenizer = AutoTokenizer.from_pretrained(str(model_dir), gguf_file=MODEL_NAME)
    model = AutoModelForCausalLM.from_pretrained(str(model_dir), gguf_file=MODEL_NAME, dtype=torch.float32)
    model.eval()
    log(f"model generation_config: {model.generation_config.to_json_string(use_diff=True).strip()}")
    return model, tokenizer, gguf_path


def write_vocab(gguf_path: Path, out_dir: Path, vocab_size: int) -> None:
    """Write the token strings (index = id) read straight from the GGUF."""
    tokens = gguf_tokens(gguf_path)
    if len(tokens) != vocab_size:
        raise SystemExit(f"GGUF has {len(tokens)} tokens but the model's vocab_size is {vocab_size}")
    path = out_dir / "smollm2" / VOCAB_FILE
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(vocab_json(tokens), encoding="utf-8")
    log(f"  wrote {path} ({len(tokens)} tokens)")


def make_model_fixtures(model, tokenizer, out_dir: Path) -> None:
    for prompt_id, prompt in PROMPTS:
        prompt_ids = templated_prompt_ids(tokenizer, prompt)
        answer = greedy_answer(model, tokenizer, prompt_ids, ANSWER_TOKENS)
        full_answer = tokenizer.decode(answer)
        log(f"prompt {prompt_id!r}: {len(prompt_ids)} templated tokens; greedy answer {len(answer)} tokens: {full_answer!r}")
        seen_k: set[int] = set()
        for k in K_VALUES:
            k = min(k, len(answer))  # a short answer: use its full length
            if k in seen_k:
                continue
            seen_k.add(k)
            ids = torch.tensor([prompt_ids + answer[:k]], dtype=torch.int64)
            label = f"{prompt_id}_k{k}"
            tensors, settings_meta, _ = record_context(model, ids, STANDARD_SETTINGS, label, allow_reject=False)
            meta = common_metadata(
                "model",
                settings_meta,
                f"SmolLM2-135M-Instruct next-token logits and transformers scores after the chat-templated "
                f"prompt {prompt_id!r} plus the first {k} tokens of its greedy answer",
            )
            meta.update(
                model=MODEL_NAME,
                gguf_sha256=MODEL_SHA256,
                prompt_id=prompt_id,
                prompt=prompt,
                prompt_len=str(len(prompt_ids)),
                k=str(k),
                answer=tokenizer.decode(answer[:k]),
                full_answer=full_answer,
                vocab=VOCAB_FILE,
            )
            write_fixture(out_dir / "smollm2" / f"{label}.safetensors", tensors, meta)


# --------------------------------------------------------------------------
# Edge fixtures: a model that returns fixed logits
# --------------------------------------------------------------------------

class FixedLogitsConfig(PreTrainedConfig):
    model_type = "sampling_parity_fixed_logits"

    def __init__(self, vocab_size: int = 4, **kwargs) -> None:
        self.vocab_size = vocab_size
        # No KV cache: the model has no layers, and asking generate for one
        # would only exercise cache code that is irrelevant here.
        kwargs.setdefault("use_cache", False)
        super().__init__(**kwargs)


class FixedLogitsLM(PreTrainedModel, GenerationMixin):
    """Returns the same logits at every position, whatever the input.

    It has one dummy parameter so `model.device` / `model.dtype` resolve; there
    are no real weights. Feeding it through `generate` means transformers'
    defaults, validation and processor chain are exercised exactly as for a
    real model.
    """

    config_class = FixedLogitsConfig
    main_input_name = "input_ids"

    def __init__(self, config: FixedLogitsConfig, logits: torch.Tensor) -> None:
        super().__init__(config)
        assert logits.dim() == 1 and logits.numel() == config.vocab_size, "vocab size must equal logits length"
        self.register_buffer("fixed_logits", logits.to(torch.float32).clone(), persistent=False)
        self.anchor = torch.nn.Parameter(torch.zeros(1))
        self.post_init()
        # The config's use_cache alone does not stop generate from building a
        # DynamicCache (which needs layer counts we do not have); the model's
        # generation config is where generate looks first.
        self.generation_config.use_cache = False

    def _init_weights(self, module) -> None:  # nothing to initialise
        pass

    def forward(self, input_ids=None, attention_mask=None, **kwargs):
        b, n = input_ids.shape
        logits = self.fixed_logits.view(1, 1, -1).expand(b, n, -1).clone()
        return CausalLMOutputWithPast(logits=logits)


def edge_model(logits: list[float] | np.ndarray) -> FixedLogitsLM:
    t = torch.tensor(np.asarray(logits, dtype=np.float32))
    model = FixedLogitsLM(FixedLogitsConfig(vocab_size=t.numel()), t)
    model.eval()
    return model


def f32(x: float) -> float:
    return float(np.float32(x))


def top_p_cumsum(logits: np.ndarray) -> np.ndarray:
    """The cumulative mass TopPLogitsWarper compares with 1 - top_p.

    Same torch ops, same order (sort ascending, softmax, cumsum), on this CPU.
    Only used to *search* for boundary logits; the stored scores come from
    generate itself.
    """
    t = torch.tensor(logits, dtype=torch.float32)[None]
    s, _ = torch.sort(t, descending=False)
    return s.softmax(dim=-1).cumsum(dim=-1)[0].numpy()


def find_top_p_boundaries(probs: list[float], p: float, j: int) -> dict[str, np.ndarray]:
    """Logits whose ascending cumulative mass at sorted index j equals
    float32(1 - p) exactly, one float32 ulp below, and one ulp above.

    Starting from log(probs), nudge the logits of the two largest tokens by a
    few float32 ulps each (which moves the softmax normaliser) until each of
    the three targets is hit. Deterministic: the search order is fixed.
    """
    target = np.float32(1 - p)  # what `cumulative_probs <= (1 - top_p)` compares against in float32
    wanted = {
        "eq": target,
        "below": np.nextafter(target, np.float32(0)),
        "above": np.nextafter(target, np.float32(1)),
    }
    base = np.log(np.asarray(probs, dtype=np.float64)).astype(np.float32)
    order = np.argsort(-base)
    a, b = order[0], order[1]
    found: dict[str, np.ndarray] = {}
    steps = sorted(range(-40, 41), key=abs)
    for da in steps:
        for db in steps:
            x = base.copy()
            x[a] = x[a] + np.float32(da) * np.spacing(x[a])
            x[b] = x[b] + np.float32(db) * np.spacing(x[b])
            c = top_p_cumsum(x)[j]
            for name, w in wanted.items():
                if name not in found and c == w:
                    found[name] = x.copy()
            if len(found) == len(wanted):
                return found
    missing = sorted(set(wanted) - set(found))
    raise SystemExit(f"top-p boundary search failed for p={p} (missing {missing})")


def std_plus(*extra: tuple[str, dict]) -> list[tuple[str, dict]]:
    return STANDARD_SETTINGS + list(extra)


def edge_cases() -> list[dict]:
    """Every synthetic fixture: name, logits, input_ids, settings, description.

    Input ids are chosen so repetition penalty has something to act on (they
    name tokens with positive, negative and zero logits where possible).
    """
    cases: list[dict] = []

    def add(name, logits, input_ids, settings, description):
        cases.append(dict(name=name, logits=np.asarray(logits, dtype=np.float32),
                          input_ids=list(input_ids), settings=settings, description=description))

    greedy = ("greedy", dict(do_sample=False))

    add("ties_3221", [3.0, 2.0, 2.0, 1.0], [3, 1, 3],
        std_plus(("top_k2", dict(do_sample=True, top_k=2)),
                 ("top_k3", dict(do_sample=True, top_k=3)),
                 ("top_k1", dict(do_sample=True, top_k=1)),
                 ("t07_top_k2", dict(do_sample=True, temperature=0.7, top_k=2)),
                 greedy),
        "top-k with ties: transformers keeps every token equal to the k-th value")

    inf = float("-inf")
    add("neg_inf_block", [2.0, 1.5, 1.0, 0.5, 0.0, -0.5, inf, inf, inf, inf, inf, inf],
        [0, 3, 6, 7, 7, 5],
        std_plus(("p05", dict(do_sample=True, top_k=0, top_p=0.5)),
                 ("p099", dict(do_sample=True, top_k=0, top_p=0.99)),
                 ("minp01", dict(do_sample=True, top_k=0, min_p=0.1)),
                 ("minp05_t1", dict(do_sample=True, top_k=0, min_p=0.5)),
                 ("top_k8", dict(do_sample=True, top_k=8)),
                 ("top_k10_p09", dict(do_sample=True, top_k=10, top_p=0.9)),
                 ("rep13_sample", dict(do_sample=True, top_k=0, repetition_penalty=1.3)),
                 greedy),
        "a block of -inf logits (as after masking): top-k beyond the finite count, top-p, min-p, penalty on -inf")

    add("single_finite", [inf, inf, 0.5, inf, inf, inf], [2, 0, 0],
        std_plus(("p05", dict(do_sample=True, top_k=0, top_p=0.5)),
                 ("minp05_t1", dict(do_sample=True, top_k=0, min_p=0.5)),
                 greedy),
        "all logits -inf except one: every filter must keep that one token")

    add("all_neg_inf", [inf, inf, inf, inf], [0, 1],
        std_plus(greedy),
        "every logit -inf: sampling has no valid distribution (see `rejected`), greedy picks index 0")

    add("all_equal_v8", [1.0] * 8, [0, 1, 1, 5],
        std_plus(("p05", dict(do_sample=True, top_k=0, top_p=0.5)),
                 ("p03", dict(do_sample=True, top_k=0, top_p=0.3)),
                 ("top_k3", dict(do_sample=True, top_k=3)),
                 ("minp05_t1", dict(do_sample=True, top_k=0, min_p=0.5)),
                 ("typ05", dict(do_sample=True, top_k=0, typical_p=0.5)),
                 greedy),
        "all logits equal (V=8): fully tied top-k, top-p on a uniform cumsum, min-p, typical")

    # Top-p boundary: for each p, three logit vectors whose ascending
    # cumulative mass at the boundary index is exactly float32(1-p), one ulp
    # below and one ulp above. TopPLogitsWarper removes a token when that mass
    # is <= 1-p, so "eq" and "below" remove the boundary token, "above" keeps it.
    boundary_specs = [
        ("080", 0.8, [0.5, 0.3, 0.2], 0),                # the seed article's example
        ("090", 0.9, [0.4, 0.3, 0.2, 0.06, 0.04], 1),   # 0.04 + 0.06 = 0.1
        ("050", 0.5, [0.5, 0.3, 0.15, 0.05], 2),        # 0.05 + 0.15 + 0.3 = 0.5
    ]
    for tag, p, probs, j in boundary_specs:
        for variant, x in find_top_p_boundaries(probs, p, j).items():
            add(f"top_p_boundary_{tag}_{variant}", x, [0, len(probs) - 1],
                std_plus((f"p{tag}", dict(do_sample=True, top_k=0, top_p=p)),
                         (f"p{tag}_default_top_k", dict(do_sample=True, top_p=p)),
                         ("greedy", dict(do_sample=False))),
                f"top-p boundary, p={p}: the ascending cumulative mass at sorted index {j} is "
                f"{variant} float32(1-p) ({'exactly' if variant == 'eq' else 'one ulp ' + variant})")

    add("huge_1e30", [1e30, 5e29, -1e30, 0.0, 1.0, 1e30, -5e29], [0, 2, 3, 2],
        std_plus(("p05", dict(do_sample=True, top_k=0, top_p=0.5)),
                 ("minp05_t1", dict(do_sample=True, top_k=0, min_p=0.5)),
                 greedy),
        "logits of magnitude 1e30 with a tie at the top: softmax saturates to exact 0/0.5")

    add("near_f32_max", [3.0e38, 3.3e38, -3.3e38, 1.0e38, 0.0, -1.0e38], [1, 2, 5],
        std_plus(("rep07", dict(do_sample=False, repetition_penalty=0.7)),
                 ("t05", dict(do_sample=True, temperature=0.5, top_k=0)),
                 greedy),
        "logits near float32 max: temperature < 1 and penalties overflow to inf (sampling then fails, see `rejected`)")

    add("tiny_1e30", [1e-30, -1e-30, 2e-30, 0.0, 1e-45, -2e-30], [0, 1, 1, 3],
        std_plus(("p05", dict(do_sample=True, top_k=0, top_p=0.5)),
                 ("top_k2", dict(do_sample=True, top_k=2)),
                 ("minp05_t1", dict(do_sample=True, top_k=0, min_p=0.5)),
                 greedy),
        "logits of magnitude 1e-30 (and a subnormal): distinct values, but the softmax sees a near-uniform distribution")

    add("v1", [0.25], [0, 0],
        std_plus(("top_k1", dict(do_sample=True, top_k=1)),
                 ("p01", dict(do_sample=True, top_k=0, top_p=0.1)),
                 greedy),
        "vocabulary of one token: every filter must keep it")

    add("v2", [1.0, -1.0], [1, 1, 0],
        std_plus(("top_k1", dict(do_sample=True, top_k=1)),
                 ("p05", dict(do_sample=True, top_k=0, top_p=0.5)),
                 ("p09_t1", dict(do_sample=True, top_k=0, top_p=0.9)),
                 greedy),
        "vocabulary of two tokens")

    rng = np.random.default_rng(20240601)
    int_logits = rng.integers(-4, 5, size=1000).astype(np.float32)  # values -4..4: ~110 ties per value
    add("int_ties_v1000", int_logits, rng.integers(0, 1000, size=24).tolist() + [7, 7, 7],
        std_plus(("top_k5", dict(do_sample=True, top_k=5)),
                 ("top_k100", dict(do_sample=True, top_k=100)),
                 ("top_k200", dict(do_sample=True, top_k=200)),
                 ("p05", dict(do_sample=True, top_k=0, top_p=0.5)),
                 ("p095", dict(do_sample=True, top_k=0, top_p=0.95)),
                 ("minp01", dict(do_sample=True, top_k=0, min_p=0.1)),
                 ("minp05_t1", dict(do_sample=True, top_k=0, min_p=0.5)),
                 ("k100p05", dict(do_sample=True, top_k=100, top_p=0.5)),
                 greedy),
        "integer-valued logits in -4..4 over V=1000: large tie groups at every top-k, top-p and min-p cut")

    rep_logits = [2.0, -2.0, 0.0, 1.0, -0.5, 0.0, 3.0, -1.0]
    rep_settings = std_plus(
        ("rep07", dict(do_sample=False, repetition_penalty=0.7)),
        ("rep10", dict(do_sample=False, repetition_penalty=1.0)),
        ("rep2", dict(do_sample=False, repetition_penalty=2.0)),
        ("rep13_t07", dict(do_sample=True, temperature=0.7, top_k=0, repetition_penalty=1.3)),
        greedy,
    )
    add("rep_penalty_signs", rep_logits, [0, 1, 2, 2, 1, 4, 4, 4],
        rep_settings,
        "repetition penalty on positive, negative and zero logits, with duplicate input ids (penalised once)")
    # transformers clamps input ids to V and pads the scores by one slot that
    # it drops again, so ids >= V are silently ignored by the penalty (it
    # allows for embedding tables larger than the lm head). A negative id does
    # raise (RuntimeError from gather); that case is not recorded, see
    # docs/fixtures.md.
    add("rep_penalty_id_oob", rep_logits, [0, 1, 2, 8, 8, 1000, 6],
        rep_settings,
        "repetition penalty with input ids >= V (8 and 1000): transformers ignores them instead of raising")

    add("invalid_settings", [2.0, 1.0, 0.5, 0.0, -1.0], [0, 1, 1, 3],
        [
            ("temp0", dict(do_sample=True, temperature=0.0)),
            ("temp_neg", dict(do_sample=True, temperature=-1.0)),
            ("temp_int2", dict(do_sample=True, temperature=2)),
            ("top_k_neg1", dict(do_sample=True, top_k=-1)),
            ("top_k_float", dict(do_sample=True, top_k=2.0)),
            ("top_p_neg", dict(do_sample=True, top_p=-0.1)),
            ("min_p_15", dict(do_sample=True, min_p=1.5)),
            ("min_p_neg", dict(do_sample=True, min_p=-0.1)),
            ("typical_p0", dict(do_sample=True, typical_p=0.0)),
            ("rep0", dict(do_sample=True, repetition_penalty=0.0)),
            ("rep_neg", dict(do_sample=True, repetition_penalty=-1.0)),
            ("rep_int2", dict(do_sample=True, repetition_penalty=2)),
            # Accepted (out-of-range values that transformers ignores or treats as no-ops):
            ("top_p_15", dict(do_sample=True, top_p=1.5)),
            ("top_p_0", dict(do_sample=True, top_k=0, top_p=0.0)),
            ("min_p_0", dict(do_sample=True, top_k=0, min_p=0.0)),
            ("min_p_1", dict(do_sample=True, top_k=0, min_p=1.0)),
            ("typical_p_15", dict(do_sample=True, top_k=0, typical_p=1.5)),
            ("eps_1", dict(do_sample=True, top_k=0, epsilon_cutoff=1.0)),
            ("eta_neg", dict(do_sample=True, top_k=0, eta_cutoff=-0.1)),
            ("temp_int1", dict(do_sample=True, temperature=1, top_k=0)),
            ("greedy_temp0", dict(do_sample=False, temperature=0.0)),
            ("greedy_top_k_neg1", dict(do_sample=False, top_k=-1)),
            ("top_k_huge", dict(do_sample=True, top_k=1000)),
        ],
        "invalid and out-of-range settings: which ones transformers rejects (`rejected`) and which it accepts")
    return cases


def make_edge_fixtures(out_dir: Path) -> None:
    for case in edge_cases():
        name = case["name"]
        model = edge_model(case["logits"])
        ids = torch.tensor([case["input_ids"]], dtype=torch.int64)
        tensors, settings_meta, rejected = record_context(model, ids, case["settings"], f"edge/{name}", allow_reject=True)
        # The model returns its logits unchanged: anything else means the
        # generate plumbing altered them and the fixture would be misleading.
        if not same_bits(tensors["logits"], model.fixed_logits):
            raise SystemExit(f"edge/{name}: generate's raw logits are not the model's logits")
        meta = common_metadata("edge", settings_meta, case["description"])
        meta["rejected"] = json.dumps(rejected)
        write_fixture(out_dir / "edge" / f"{name}.safetensors", tensors, meta)


# --------------------------------------------------------------------------
# Generation-config fixtures: a model file and generate's settings, per version
# --------------------------------------------------------------------------
#
# What transformers makes of (the model's generation_config.json, the caller's
# settings) differs between 4.x and 5.x, so these cases are recorded from each
# version's own package (`--transformers`), one file per version:
# fixtures/genconfig/transformers-<version>.json. Each case loads the file the
# way `from_pretrained` does (`GenerationConfig.from_pretrained(folder)`),
# makes it the model's generation config, runs the one generate call with the
# settings passed either as kwargs (`generate(**kwargs)`) or as an object
# (`generate(generation_config=GenerationConfig(**kwargs))`, as trl does), and
# stores what generate built: the config `_get_logits_processor` was given,
# the processors with their values, the scores and their softmax.

GENCONFIG_FORMAT = "sampling-parity-genconfig/1"
# V = 64 (> 50, so transformers' default top-k 50 cuts something), seeded.
GENCONFIG_LOGITS = np.random.default_rng(4576).normal(0.0, 2.0, size=64).astype(np.float32)
GENCONFIG_CONTEXTS = {
    "ids": [3, 17, 17, 42, 5],
    # ids >= V: 5.x clamps them away, 4.x's torch.gather raises.
    "ids_oob": [3, 64, 200, 17],
}
# The attributes of generate's GenerationConfig that decide one sampling step.
SAMPLING_ATTRS = ("do_sample", "temperature", "top_k", "top_p", "min_p", "typical_p", "epsilon_cutoff",
                  "eta_cutoff", "repetition_penalty", "num_beams")
# Numeric attributes of the processors whose values decide the step.
PROCESSOR_ATTRS = ("temperature", "top_h", "top_k", "top_p", "min_p", "mass", "epsilon", "penalty",
                   "min_tokens_to_keep")

GENCONFIG_FILES: dict[str, dict | None] = {
    # no generation_config.json: the model's own (from its config)
    "none": None,
    # values equal to 4.x's class defaults: to_diff_dict() drops them there
    "class_defaults": {"do_sample": True, "temperature": 1.0, "top_k": 50, "top_p": 1.0, "repetition_penalty": 1.0},
    # a Llama-style file: top_k 50 stated, equal to 4.x's class default
    "t06_k50_p09": {"do_sample": True, "temperature": 0.6, "top_k": 50, "top_p": 0.9},
    # a Qwen-style file
    "t07_k20_p08": {"do_sample": True, "temperature": 0.7, "top_k": 20, "top_p": 0.8, "repetition_penalty": 1.05},
    # null in the file: 4.x keeps None, 5.x reads it as unset
    "nulls": {"do_sample": True, "top_k": None, "temperature": None},
    "min_p": {"do_sample": True, "min_p": 0.1},
    "greedy_t07": {"do_sample": False, "temperature": 0.7, "top_k": 20},
    "sample_t0": {"do_sample": True, "temperature": 0.0},
    # saved by an old transformers: 4.x's object route takes no model defaults
    "old_k20": {"do_sample": True, "top_k": 20, "transformers_version": "4.45.0"},
}

GENCONFIG_KWARGS: dict[str, dict] = {
    "none": {},
    "sample": {"do_sample": True},
    "greedy": {"do_sample": False},
    "k_null": {"do_sample": True, "top_k": None},
    "k0": {"do_sample": True, "top_k": 0},
    "k50": {"do_sample": True, "top_k": 50},
    "explicit_defaults": {"do_sample": True, "temperature": 1.0, "top_k": 50, "top_p": 1.0},
    "t0": {"temperature": 0.0},
    "sample_t0": {"do_sample": True, "temperature": 0.0},
    "t07_k40_p09": {"do_sample": True, "temperature": 0.7, "top_k": 40, "top_p": 0.9},
    "minp005": {"do_sample": True, "min_p": 0.05},
    "minp0": {"do_sample": True, "top_k": 0, "min_p": 0.0},
    "minp15": {"do_sample": True, "min_p": 1.5},
    "greedy_minp": {"do_sample": False, "min_p": 0.05},
    "typ09": {"do_sample": True, "top_k": 0, "typical_p": 0.9},
    "eps": {"do_sample": True, "top_k": 0, "epsilon_cutoff": 3e-4},
    "eta": {"do_sample": True, "top_k": 0, "eta_cutoff": 2e-3},
    "rep13": {"do_sample": True, "temperature": 0.8, "repetition_penalty": 1.3},
    "top_h": {"do_sample": True, "top_h": 0.5},
}

# (file, kwargs, how the settings are passed, context)
def genconfig_cases() -> list[tuple[str, str, str, str]]:
    cases = []
    for f in GENCONFIG_FILES:
        for k in GENCONFIG_KWARGS:
            cases.append((f, k, "kwargs", "ids"))
    object_kwargs = ("none", "sample", "k_null", "k0", "k50", "explicit_defaults", "sample_t0", "t07_k40_p09",
                     "minp005")
    for f in GENCONFIG_FILES:
        for k in object_kwargs:
            cases.append((f, k, "generation_config", "ids"))
    for f in ("none", "t07_k20_p08"):
        for k in ("rep13", "greedy", "none"):
            cases.append((f, k, "kwargs", "ids_oob"))
    return cases


def jsonable(v):
    """A processor or config value as JSON: floats exact (repr), non-finite as strings."""
    if isinstance(v, torch.Tensor):
        v = v.tolist()
    if isinstance(v, bool) or v is None or isinstance(v, (int, str)):
        return v
    if isinstance(v, float):
        return v if np.isfinite(v) else str(v)
    if isinstance(v, (list, tuple)):
        return [jsonable(x) for x in v]
    return repr(v)


def f32_list(t: torch.Tensor) -> list:
    return [float(x) if np.isfinite(x) else str(float(x)) for x in t.tolist()]


def genconfig_model(file: dict | None, folder: Path):
    """The fixed-logits model with `file` as its generation_config.json, loaded
    as from_pretrained loads it. Returns (model, the loaded config's to_diff_dict())."""
    model = edge_model(GENCONFIG_LOGITS)
    if file is None:
        loaded = model.generation_config
    else:
        folder.mkdir(parents=True, exist_ok=True)
        (folder / "generation_config.json").write_text(json.dumps(file), encoding="utf-8")
        loaded = transformers.GenerationConfig.from_pretrained(str(folder))
    diff = loaded.to_diff_dict()
    loaded_attrs = {a: jsonable(getattr(loaded, a, None)) for a in SAMPLING_ATTRS}
    # No KV cache (the model has no layers): set after reading what was loaded.
    loaded.use_cache = False
    model.generation_config = loaded
    return model, diff, loaded_attrs


def run_genconfig_case(model, ids: torch.Tensor, kwargs: dict, passed: str) -> dict:
    seen: dict = {}
    inner = model._get_logits_processor

    def spy(*args, **kw):
        config = kw.get("generation_config", args[0] if args else None)
        seen["config"] = {a: jsonable(getattr(config, a, None)) for a in SAMPLING_ATTRS}
        out = inner(*args, **kw)
        seen["processors"] = [
            {"name": type(p).__name__,
             **{a: jsonable(getattr(p, a)) for a in PROCESSOR_ATTRS if hasattr(p, a)}}
            for p in out
        ]
        return out

    model._get_logits_processor = spy
    try:
        if passed == "kwargs":
            logits, scores = generate_once(model, ids, kwargs)
        else:
            # use_cache=False beside it: the model has no layers for a cache
            # (4.x's object route can leave the object's use_cache True)
            config = transformers.GenerationConfig(**kwargs)
            logits, scores = generate_once(model, ids, {"generation_config": config, "use_cache": False})
    except (ValueError, RuntimeError, TypeError, IndexError) as e:
        err = f"{type(e).__name__}: {e}"
        return {"error": err, **({"config": seen["config"]} if "config" in seen else {})}
    finally:
        del model._get_logits_processor
    if not same_bits(logits, model.fixed_logits):
        raise SystemExit("genconfig: generate's raw logits are not the model's logits")
    out = {"config": seen["config"], "processors": seen["processors"], "scores": f32_list(scores)}
    if seen["config"]["do_sample"]:
        # what _sample draws from: softmax of the scores, in f32
        out["probs"] = f32_list(torch.nn.functional.softmax(scores, dim=-1))
    else:
        out["greedy"] = int(torch.argmax(scores))
    return out


def make_genconfig_fixture(out_dir: Path, version: str) -> None:
    files = {}
    cases = []
    with tempfile.TemporaryDirectory(prefix="genconfig-") as tmp:
        for fname, file in GENCONFIG_FILES.items():
            NOTICES.context = f"genconfig/{fname}"
            _, diff, loaded = genconfig_model(file, Path(tmp) / fname)
            files[fname] = {"contents": file, "loaded": loaded, "to_diff_dict": jsonable_dict(diff)}
        for fname, kname, passed, ctx in genconfig_cases():
            name = f"{fname}.{kname}.{passed}.{ctx}"
            NOTICES.context = f"genconfig/{name}"
            model, _, _ = genconfig_model(GENCONFIG_FILES[fname], Path(tmp) / fname)
            ids = torch.tensor([GENCONFIG_CONTEXTS[ctx]], dtype=torch.int64)
            result = run_genconfig_case(model, ids, GENCONFIG_KWARGS[kname], passed)
            if "error" in result:
                log(f"  {name}: rejected -> {result['error'].splitlines()[0][:140]}")
            cases.append({"name": name, "file": fname, "kwargs": GENCONFIG_KWARGS[kname], "passed": passed,
                          "context": ctx, **result})
    doc = {
        "format": GENCONFIG_FORMAT,
        "transformers_version": transformers.__version__,
        "torch_version": torch.__version__,
        "recorded_by": f"scripts/reference/hf_reference.py --only genconfig --transformers {version}",
        "description": "generation_config.json contents x generate settings (as kwargs or as a GenerationConfig "
                       "object) on fixed logits: the config _get_logits_processor got, the processors and their "
                       "values, the processed scores and their softmax (f32), or transformers' error",
        "class_defaults": {a: jsonable(getattr(transformers.GenerationConfig(), a, None)) for a in SAMPLING_ATTRS},
        "logits": f32_list(torch.from_numpy(GENCONFIG_LOGITS)),
        "contexts": GENCONFIG_CONTEXTS,
        "files": files,
        "cases": cases,
    }
    path = out_dir / "genconfig" / f"transformers-{version}.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    # One case per line, so a regenerated file's diff names its cases.
    head = json.dumps({k: v for k, v in doc.items() if k != "cases"}, indent=1)
    lines = ",\n".join(json.dumps(c, separators=(",", ":")) for c in cases)
    path.write_text(f'{head[:-2]},\n "cases": [\n{lines}\n ]\n}}\n', encoding="utf-8")
    n_err = sum(1 for c in cases if "error" in c)
    log(f"  wrote {path} ({len(cases)} cases, {n_err} rejected)")


def jsonable_dict(d: dict) -> dict:
    return {k: jsonable(v) for k, v in sorted(d.items())}


# --------------------------------------------------------------------------
# --check: regenerate and compare
# --------------------------------------------------------------------------

def run_check(args, generate_into) -> int:
    committed = args.out_dir
    with tempfile.TemporaryDirectory(prefix="fixtures-check-") as tmp:
        tmp_dir = Path(tmp)
        generate_into(tmp_dir)
        report = CheckReport()
        rel_old = {p.relative_to(committed).as_posix() for p in committed.rglob("*") if p.is_file()
                   and p.suffix in (".safetensors", ".json")}
        rel_new = {p.relative_to(tmp_dir).as_posix() for p in tmp_dir.rglob("*") if p.is_file()}
        # Only this script's folders: fixtures/own/ is record_fixture.py's.
        mine = {"all": ("smollm2/", "edge/", f"genconfig/transformers-{args.transformers}.json"),
                "model": ("smollm2/",), "edge": ("edge/",),
                "genconfig": (f"genconfig/transformers-{args.transformers}.json",)}[args.only]
        rel_old = {r for r in rel_old if r.startswith(mine)}
        for rel in sorted(rel_old - rel_new):
            report.fail(f"{rel}: committed but not regenerated (stale file?)")
        for rel in sorted(rel_new - rel_old):
            report.fail(f"{rel}: regenerated but not committed")
        for rel in sorted(rel_old & rel_new):
            a, b = committed / rel, tmp_dir / rel
            if rel.endswith(".json"):
                if a.read_bytes() != b.read_bytes():
                    report.fail(f"{rel}: content differs")
                    if rel.startswith("genconfig/"):
                        for line in json_diff(a, b)[:20]:
                            report.fail(f"{rel}: {line}")
                continue
            compare_fixture(rel, a, b, args.tolerance, report)
        return check_verdict(report, len(rel_old & rel_new), args.strict)



def json_diff(a: Path, b: Path) -> list[str]:
    """The genconfig cases whose recorded results differ, by name."""
    old, new = json.loads(a.read_text()), json.loads(b.read_text())
    out = [f"top-level {k!r} differs" for k in sorted(set(old) | set(new)) if k != "cases" and old.get(k) != new.get(k)]
    cases_old = {c["name"]: c for c in old.get("cases", [])}
    cases_new = {c["name"]: c for c in new.get("cases", [])}
    for name in sorted(set(cases_old) | set(cases_new)):
        if cases_old.get(name) != cases_new.get(name):
            out.append(f"case {name} differs")
    return out


def parse_args() -> argparse.Namespace:
    ap = argparse.ArgumentParser(
        description="Record transformers generate() logits/scores fixtures for sampling-parity.",
        formatter_class=argparse.ArgumentDefaultsHelpFormatter,
    )
    ap.add_argument("--out-dir", type=Path, default=REPO / "fixtures",
                    help="fixture root (gets smollm2/ and edge/ subfolders)")
    ap.add_argument("--model-dir", type=Path, default=REPO / ".cache" / "models",
                    help=f"folder holding {MODEL_NAME} (see scripts/fetch-model.sh)")
    ap.add_argument("--only", choices=("all", "model", "edge", "genconfig"), default="all",
                    help="which fixtures to (re)generate or check; 'model' includes vocab.json; 'genconfig' is "
                         "genconfig/transformers-<version>.json, the only one recorded from 4.57.6 and 5.0.0")
    ap.add_argument("--transformers", choices=tuple(fixturelib.TRANSFORMERS_VENVS), default=None,
                    help="the transformers version to record from (default: the one installed); it must be the "
                         "installed one: scripts/reference/.venv has 5.23.0, .venv-tf4 4.57.6, .venv-tf500 5.0.0")
    ap.add_argument("--check", action="store_true",
                    help="regenerate into a temporary folder and compare with --out-dir instead of writing")
    ap.add_argument("--tolerance", type=float, default=1e-3,
                    help="--check: max |diff| of model logits still reported as CPU low-bit noise, not a failure")
    ap.add_argument("--strict", action="store_true", help="--check: fail on any bit difference, even low-bit noise")
    ap.add_argument("--threads", type=int, default=1,
                    help="torch intra-op threads; 1 keeps float reduction order independent of the core count")
    return ap.parse_args()


def main() -> int:
    args = parse_args()
    args.out_dir = args.out_dir.resolve()
    torch.set_num_threads(args.threads)
    install_notice_collector()
    args.transformers = require_transformers(args.transformers)
    if args.transformers != "5.23.0" and args.only != "genconfig":
        raise SystemExit(f"hf_reference: the {args.only} fixtures are transformers 5.23.0's; from "
                         f"{args.transformers} only --only genconfig is recorded")
    log(f"torch {torch.__version__}, transformers {transformers.__version__}, threads {torch.get_num_threads()}")

    def generate_into(out_dir: Path) -> None:
        if args.only in ("all", "model"):
            model, tokenizer, gguf_path = load_model(args.model_dir)
            write_vocab(gguf_path, out_dir, model.config.vocab_size)
            make_model_fixtures(model, tokenizer, out_dir)
            del model
        if args.only in ("all", "edge"):
            log("edge fixtures")
            make_edge_fixtures(out_dir)
        if args.only in ("all", "genconfig"):
            log(f"generation-config cases (transformers {args.transformers})")
            make_genconfig_fixture(out_dir, args.transformers)

    if args.check:
        rc = run_check(args, generate_into)
    else:
        # Write into a scratch folder first and move into place at the end, so
        # a crash never leaves a half-updated fixture set; files of a previous
        # run that are no longer produced are removed.
        args.out_dir.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryDirectory(prefix=".tmp-", dir=args.out_dir) as tmp:
            tmp_dir = Path(tmp)
            generate_into(tmp_dir)
            for sub in sorted(p.name for p in tmp_dir.iterdir()):
                dest = args.out_dir / sub
                if sub == "genconfig":
                    # one file per transformers version: replace only this one's
                    dest.mkdir(exist_ok=True)
                    for f in (tmp_dir / sub).iterdir():
                        shutil.move(str(f), str(dest / f.name))
                    continue
                if dest.exists():
                    shutil.rmtree(dest)
                shutil.move(str(tmp_dir / sub), str(dest))
        log(f"fixtures written under {args.out_dir}")
        rc = 0

    print_notices()
    return rc


if __name__ == "__main__":
    sys.exit(main())
