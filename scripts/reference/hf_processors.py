#!/usr/bin/env python3
"""Record what transformers' `generate()` does with the logits processors
beyond the sampling kwargs: n-gram bans, bad words, suppressed tokens,
sequence bias, min length, forced tokens, the exponential length penalty,
`remove_invalid_values`, `renormalize_logits` and `top_h`.

Unlike hf_reference.py (one step per call), every setting here runs a real
multi-step generation, because these processors read the generation state
(the grown context, where the prompt ended, `max_length`):

    model.generate(prompt, attention_mask=torch.ones_like(prompt),
                   output_scores=True, output_logits=True,
                   return_dict_in_generate=True, **kwargs)

after `torch.manual_seed(1234)`, and stores, per setting, every step's raw
logits (`g.logits`), processed scores (`g.scores`) and the generated
sequence, so step i can be replayed with context `sequence[:prompt_len + i]`.

Files (`fixtures/processors/`, format `sampling-parity-steps/1`; see
docs/fixtures.md):
  * edge_*.safetensors: hand-built logits through hf_reference.py's
    FixedLogitsLM (the same logits at every step);
  * smollm2_steps.safetensors: SmolLM2-135M-Instruct on the `hello` prompt,
    20+ steps under no_repeat_ngram_size and min_new_tokens.

Run with the reference venv, after scripts/fetch-model.sh:

    scripts/reference/.venv/bin/python scripts/reference/hf_processors.py
    scripts/reference/.venv/bin/python scripts/reference/hf_processors.py --check

and the same settings from the older releases (`setup.sh 4.57.6`, `setup.sh
5.0.0`), into fixtures/processors/transformers-<version>/:

    scripts/reference/.venv-tf4/bin/python scripts/reference/hf_processors.py --transformers 4.57.6
    scripts/reference/.venv-tf500/bin/python scripts/reference/hf_processors.py --transformers 5.0.0

`--check` regenerates into a temporary folder and fails, with the list of
differences, unless every tensor and metadata value is bit-identical.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import warnings
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import hf_reference as ref  # noqa: E402  (sets the offline environment first)
import torch  # noqa: E402
import transformers  # noqa: E402
from safetensors import safe_open  # noqa: E402
from safetensors.torch import save_file  # noqa: E402

FORMAT = "sampling-parity-steps/1"
SEED = 1234
INF = float("-inf")
# The versions recorded: 5.23.0 into fixtures/processors/, the others into
# fixtures/processors/transformers-<version>/ (the same settings).
VERSIONS = ("5.23.0", "4.57.6", "5.0.0")


def run_setting(model, prompt: torch.Tensor, kwargs: dict):
    """One real generation; returns (logits [steps, V], scores [steps, V], sequence)."""
    torch.manual_seed(SEED)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with torch.inference_mode():
            g = model.generate(
                prompt,
                attention_mask=torch.ones_like(prompt),
                output_scores=True,
                output_logits=True,
                return_dict_in_generate=True,
                **kwargs,
            )
    for w in caught:
        ref.NOTICES.add_warning(w)
    logits = torch.stack([x[0] for x in g.logits]).to(torch.float32).contiguous().clone()
    scores = torch.stack([x[0] for x in g.scores]).to(torch.float32).contiguous().clone()
    sequence = g.sequences[0].to(torch.int64).contiguous().clone()
    return logits, scores, sequence


def record(model, prompt_ids: list[int], settings: list[tuple[str, dict]], label: str, const_logits=None):
    prompt = torch.tensor([prompt_ids], dtype=torch.int64)
    tensors: dict[str, torch.Tensor] = {"input_ids": prompt[0].clone()}
    meta, rejected = [], []
    for name, kwargs in settings:
        assert name.replace("_", "").isalnum() and name == name.lower(), name
        ref.NOTICES.context = f"{label}/{name}"
        try:
            logits, scores, sequence = run_setting(model, prompt, kwargs)
        except (ValueError, RuntimeError, IndexError, TypeError) as e:
            # transformers' validation (ValueError), torch refusing an index
            # or a NaN distribution (IndexError/RuntimeError), or a constructor
            # choking on a value's type (TypeError). Anything else is a bug here.
            err = f"{type(e).__name__}: {e}"
            ref.log(f"  {label}: {name} {json.dumps(kwargs)} rejected -> {err.splitlines()[0][:160]}")
            rejected.append({"name": name, "kwargs": kwargs, "error": err})
            continue
        if const_logits is not None and not all(ref.same_bits(row, const_logits) for row in logits):
            raise SystemExit(f"{label}/{name}: generate's raw logits are not the model's logits")
        tensors[f"logits.{name}"] = logits
        tensors[f"scores.{name}"] = scores
        tensors[f"sequence.{name}"] = sequence
        meta.append({"name": name, "kwargs": kwargs, "steps": int(scores.shape[0])})
    return tensors, meta, rejected


def write(path: Path, tensors, meta, rejected, description: str, generation_config: dict, extra=None) -> None:
    metadata = {
        "format": FORMAT,
        "torch_version": torch.__version__,
        "transformers_version": transformers.__version__,
        "settings": json.dumps(meta),
        "rejected": json.dumps(rejected),
        "prompt_len": str(int(tensors["input_ids"].numel())),
        "generation_config": json.dumps(generation_config, sort_keys=True),
        "description": description,
    }
    metadata.update(extra or {})
    path.parent.mkdir(parents=True, exist_ok=True)
    save_file(tensors, str(path), metadata=metadata)
    path.chmod(0o644)
    ref.log(f"  wrote {path} ({len(meta)} settings, {len(rejected)} rejected)")


# --------------------------------------------------------------------------
# Edge fixtures
# --------------------------------------------------------------------------

# V = 8. Token 5 plays the end-of-sequence token (passed as eos_token_id).
LOGITS8 = [2.0, 1.0, 0.5, 0.0, -1.0, 3.0, 1.5, -0.5]
PROMPT = [0, 1, 2, 0, 1]
EOS = 5


def edge_settings() -> list[tuple[str, dict]]:
    g = dict(do_sample=False)
    s = dict(do_sample=True, top_k=0)
    n = dict(max_new_tokens=6)
    return [
        # n-gram bans: greedy repeats the argmax, so bans appear at later steps.
        ("ngram1_greedy", dict(g, no_repeat_ngram_size=1, **n)),
        ("ngram2_greedy", dict(g, no_repeat_ngram_size=2, **n)),
        ("ngram3_sample", dict(s, no_repeat_ngram_size=3, **n)),
        ("ngram2_t07_k3", dict(do_sample=True, temperature=0.7, top_k=3, no_repeat_ngram_size=2, **n)),
        ("ngram_big", dict(g, no_repeat_ngram_size=40, **n)),
        ("ngram0", dict(g, no_repeat_ngram_size=0, max_new_tokens=2)),
        ("ngram_neg", dict(g, no_repeat_ngram_size=-1, max_new_tokens=2)),
        ("ngram_float", dict(g, no_repeat_ngram_size=2.0, max_new_tokens=2)),
        # bad words: single tokens, a two-token word, eos filtered out of the list.
        ("bad_single", dict(s, bad_words_ids=[[5], [0]], **n)),
        ("bad_multi", dict(g, bad_words_ids=[[1, 5], [5, 5]], **n)),
        ("bad_eos_kept", dict(g, bad_words_ids=[[5], [6]], eos_token_id=EOS, **n)),
        ("bad_only_eos", dict(g, bad_words_ids=[[5]], eos_token_id=EOS, max_new_tokens=2)),
        ("bad_empty", dict(g, bad_words_ids=[], max_new_tokens=2)),
        ("bad_negative", dict(g, bad_words_ids=[[-1]], max_new_tokens=2)),
        ("bad_flat", dict(g, bad_words_ids=[5], max_new_tokens=2)),
        ("bad_oob", dict(g, bad_words_ids=[[8]], max_new_tokens=2)),
        # suppression
        ("suppress", dict(s, suppress_tokens=[5, 0], **n)),
        ("suppress_oob", dict(g, suppress_tokens=[5, 100], max_new_tokens=3)),
        ("suppress_empty", dict(g, suppress_tokens=[], max_new_tokens=2)),
        ("begin_suppress", dict(g, begin_suppress_tokens=[5, 6], max_new_tokens=3)),
        ("begin_suppress_t07", dict(do_sample=True, temperature=0.7, begin_suppress_tokens=[5], max_new_tokens=3)),
        # sequence bias: a one-token bias and a two-token one, accumulating.
        ("bias", dict(g, sequence_bias=[[[5], -2.5], [[1, 6], 1.75], [[1, 0], 0.25]], **n)),
        ("bias_sample", dict(do_sample=True, temperature=0.7, top_k=4, sequence_bias=[[[5], -0.75], [[0], 1.5]], **n)),
        ("bias_same_last", dict(g, sequence_bias=[[[2, 5], -1.5], [[1, 5], -2.0], [[5], -0.5]], **n)),
        ("bias_int", dict(g, sequence_bias=[[[5], -2]], max_new_tokens=2)),
        ("bias_oob", dict(g, sequence_bias=[[[8], -2.0]], max_new_tokens=2)),
        ("bias_empty", dict(g, sequence_bias=[], max_new_tokens=2)),
        # min length (EOS masked until the length is reached).
        ("min_length", dict(g, min_length=8, eos_token_id=EOS, **n)),
        ("min_length_no_eos", dict(g, min_length=8, max_new_tokens=2)),
        ("min_new", dict(g, min_new_tokens=3, eos_token_id=EOS, **n)),
        ("min_new_list_eos", dict(s, min_new_tokens=4, eos_token_id=[5, 6], **n)),
        ("min_new_float", dict(g, min_new_tokens=2.0, eos_token_id=EOS, max_new_tokens=2)),
        ("min_length_neg", dict(g, min_length=-1, eos_token_id=EOS, max_new_tokens=2)),
        ("min_length_float", dict(g, min_length=7.0, eos_token_id=EOS, max_new_tokens=2)),
        # forced eos at max_length - 1; exponential decay after its start.
        ("forced_eos", dict(s, forced_eos_token_id=3, max_new_tokens=3)),
        ("forced_eos_list", dict(g, forced_eos_token_id=[3, 4], max_new_tokens=2)),
        ("forced_eos_neg", dict(g, forced_eos_token_id=-1, max_new_tokens=2)),
        ("forced_eos_oob", dict(g, forced_eos_token_id=9, max_new_tokens=2)),
        ("forced_eos_max_length", dict(g, forced_eos_token_id=3, max_length=8)),
        ("decay", dict(g, exponential_decay_length_penalty=[1, 1.5], eos_token_id=[4, 3], **n)),
        ("decay_sample", dict(s, exponential_decay_length_penalty=[0, 2.0], eos_token_id=4, **n)),
        ("decay_no_eos", dict(g, exponential_decay_length_penalty=[1, 1.5], max_new_tokens=2)),
        # the length penalty and a forced eos under warpers: both count from
        # the prompt, so only the forced eos is left at max_length - 1.
        ("decay_forced_top_p", dict(do_sample=True, top_p=0.9, exponential_decay_length_penalty=[1, 1.5],
                                    forced_eos_token_id=4, eos_token_id=4, max_new_tokens=4)),
        ("decay_forced_t07", dict(do_sample=True, temperature=0.7, exponential_decay_length_penalty=[0, 2.0],
                                  forced_eos_token_id=[3, 4], eos_token_id=[4, 3], max_new_tokens=4)),
        # generate's own checks: no pad token and eos [] (pad = eos[0]), and
        # max_length not above the prompt's length.
        ("eos_empty", dict(g, eos_token_id=[], max_new_tokens=2)),
        ("eos_empty_sample", dict(s, eos_token_id=[], max_new_tokens=2)),
        ("eos_empty_pad", dict(g, eos_token_id=[], pad_token_id=0, max_new_tokens=2)),
        ("max_length_at_prompt", dict(g, max_length=5)),
        ("max_length_below_prompt", dict(s, max_length=3)),
        ("max_length_above_prompt", dict(g, max_length=6)),
        ("max_length_float", dict(g, max_length=5.0)),
        # post-processing
        ("renorm", dict(g, renormalize_logits=True, max_new_tokens=2)),
        ("renorm_t07_k3", dict(do_sample=True, temperature=0.7, top_k=3, renormalize_logits=True, max_new_tokens=3)),
        ("renorm_bad", dict(s, renormalize_logits=True, bad_words_ids=[[5]], max_new_tokens=2)),
        ("remove_invalid", dict(s, remove_invalid_values=True, bad_words_ids=[[5]], max_new_tokens=2)),
        ("remove_invalid_greedy", dict(g, remove_invalid_values=True, suppress_tokens=[5], max_new_tokens=2)),
        # top_h
        ("top_h05", dict(do_sample=True, top_k=0, top_h=0.5, max_new_tokens=3)),
        ("top_h09_t07", dict(do_sample=True, temperature=0.7, top_h=0.9, max_new_tokens=3)),
        ("top_h0", dict(do_sample=True, top_h=0.0, max_new_tokens=2)),
        ("top_h15", dict(do_sample=True, top_h=1.5, max_new_tokens=2)),
        ("top_h_greedy", dict(g, top_h=7.0, max_new_tokens=2)),
        # everything at once, with the sampling kwargs.
        ("combined", dict(do_sample=True, temperature=0.8, top_k=5, top_p=0.95, repetition_penalty=1.2,
                          no_repeat_ngram_size=2, bad_words_ids=[[1, 2]], suppress_tokens=[7],
                          min_new_tokens=2, eos_token_id=EOS, sequence_bias=[[[6], 0.5]], **n)),
        ("forced_suppressed", dict(g, forced_eos_token_id=5, suppress_tokens=[5], max_new_tokens=2)),
    ]


def bos_settings() -> list[tuple[str, dict]]:
    g = dict(do_sample=False)
    return [
        ("forced_bos", dict(g, forced_bos_token_id=4, max_new_tokens=3)),
        ("forced_bos_t07", dict(do_sample=True, temperature=0.7, forced_bos_token_id=6, max_new_tokens=2)),
        ("begin_suppress_bos", dict(g, forced_bos_token_id=4, begin_suppress_tokens=[5], max_new_tokens=3)),
        ("begin_suppress", dict(g, begin_suppress_tokens=[5], max_new_tokens=3)),
        ("forced_bos_oob", dict(g, forced_bos_token_id=8, max_new_tokens=2)),
    ]


def make_edge(out_dir: Path) -> None:
    for name, prompt, settings, description in [
        ("edge_v8", PROMPT, edge_settings(),
         "V=8 logits (token 5 the largest, used as eos where eos_token_id is given), prompt of 5 tokens: "
         "every processor alone, combined, and with rejected values, over up to 6 steps"),
        ("edge_bos", [2], bos_settings(),
         "the same V=8 logits after a one-token prompt: forced_bos_token_id and begin_suppress_tokens "
         "at the first step"),
    ]:
        model = ref.edge_model(LOGITS8)
        tensors, meta, rejected = record(model, prompt, settings, f"processors/{name}", model.fixed_logits)
        config = json.loads(model.generation_config.to_json_string(use_diff=True))
        config.pop("transformers_version", None)
        write(out_dir / f"{name}.safetensors", tensors, meta, rejected, description, config)


# --------------------------------------------------------------------------
# SmolLM2: a real multi-step generation
# --------------------------------------------------------------------------

def model_settings() -> list[tuple[str, dict]]:
    # Sampling without warpers, so the scores differ from the logits only
    # where a mask applies (stored sparsely, see `sparse_scores`): n-gram bans
    # on a growing context, and <|im_end|> masked for 20 new tokens.
    return [
        ("sample_ngram2_min20", dict(do_sample=True, top_k=0, no_repeat_ngram_size=2, min_new_tokens=20,
                                     max_new_tokens=22)),
    ]


def sparse_scores(tensors: dict, name: str) -> None:
    """Replace `scores.<name>` by the entries whose bits differ from the
    logits: `scores_at.<name>` (I64 [n, 2]: step, token id) and
    `scores_value.<name>` (F32 [n]). Keeps the model file small."""
    logits, scores = tensors[f"logits.{name}"], tensors.pop(f"scores.{name}")
    differ = logits.view(torch.int32) != scores.view(torch.int32)
    tensors[f"scores_at.{name}"] = differ.nonzero().to(torch.int64).contiguous()
    tensors[f"scores_value.{name}"] = scores[differ].contiguous().clone()


def make_model(out_dir: Path, model_dir: Path) -> None:
    model, tokenizer, _ = ref.load_model(model_dir)
    prompt_ids = ref.templated_prompt_ids(tokenizer, ref.PROMPTS[0][1])
    tensors, meta, rejected = record(model, prompt_ids, model_settings(), "processors/smollm2_steps")
    if rejected:
        raise SystemExit(f"smollm2_steps: settings rejected: {rejected}")
    for m in meta:
        sparse_scores(tensors, m["name"])
        seq = tensors[f"sequence.{m['name']}"].tolist()
        ref.log(f"  {m['name']}: {m['steps']} steps: {tokenizer.decode(seq[len(prompt_ids):])!r}")
    config = json.loads(model.generation_config.to_json_string(use_diff=True))
    config.pop("transformers_version", None)
    write(out_dir / "smollm2_steps.safetensors", tensors, meta, rejected,
          "SmolLM2-135M-Instruct on the chat-templated `hello` prompt: whole generations with n-gram bans and "
          "min_new_tokens, every step's logits and scores",
          config, dict(model=ref.MODEL_NAME, gguf_sha256=ref.MODEL_SHA256, prompt=ref.PROMPTS[0][1]))


# --------------------------------------------------------------------------

def read(path: Path):
    with safe_open(str(path), framework="pt") as f:
        return {k: f.get_tensor(k) for k in f.keys()}, dict(f.metadata() or {})


def check(committed: Path, fresh: Path) -> list[str]:
    diffs = []
    old = {p.name for p in committed.glob("*.safetensors")}
    new = {p.name for p in fresh.glob("*.safetensors")}
    diffs += [f"{n}: committed but not regenerated" for n in sorted(old - new)]
    diffs += [f"{n}: regenerated but not committed" for n in sorted(new - old)]
    for n in sorted(old & new):
        (ta, ma), (tb, mb) = read(committed / n), read(fresh / n)
        for k in sorted(set(ma) | set(mb)):
            if ma.get(k) != mb.get(k):
                diffs.append(f"{n}: metadata {k!r}: {ma.get(k)!r} vs {mb.get(k)!r}")
        for k in sorted(set(ta) | set(tb)):
            if k not in ta or k not in tb:
                diffs.append(f"{n}: tensor {k} only in {'fresh' if k in tb else 'committed'}")
            elif ta[k].shape != tb[k].shape or ta[k].dtype != tb[k].dtype:
                diffs.append(f"{n}: {k}: {ta[k].dtype}{list(ta[k].shape)} vs {tb[k].dtype}{list(tb[k].shape)}")
            elif not torch.equal(ta[k].view(torch.int32 if ta[k].dtype == torch.float32 else ta[k].dtype),
                                 tb[k].view(torch.int32 if tb[k].dtype == torch.float32 else tb[k].dtype)):
                diffs.append(f"{n}: {k}: bitwise differences")
    return diffs


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out-dir", type=Path, default=None,
                    help="default fixtures/processors (5.23.0) or fixtures/processors/transformers-V (other V)")
    ap.add_argument("--model-dir", type=Path, default=ref.REPO / ".cache" / "models")
    ap.add_argument("--only", choices=("all", "edge", "model"), default="all")
    ap.add_argument("--check", action="store_true", help="regenerate into a temporary folder and compare")
    ap.add_argument("--transformers", choices=VERSIONS, default=None,
                    help="the version these fixtures are recorded from (it must be the installed one): "
                         "5.23.0 from .venv, 4.57.6 from .venv-tf4, 5.0.0 from .venv-tf500; the same "
                         "settings, each version's files in its own folder")
    args = ap.parse_args()
    torch.set_num_threads(1)
    ref.install_notice_collector()
    version = ref.require_transformers(args.transformers, allowed=VERSIONS)
    if args.out_dir is None:
        args.out_dir = ref.REPO / "fixtures" / "processors"
        if version != "5.23.0":
            args.out_dir = args.out_dir / f"transformers-{version}"

    def generate_into(d: Path) -> None:
        if args.only in ("all", "edge"):
            make_edge(d)
        if args.only in ("all", "model"):
            make_model(d, args.model_dir)

    if args.check:
        with tempfile.TemporaryDirectory(prefix="processors-check-") as tmp:
            generate_into(Path(tmp))
            committed = args.out_dir
            if args.only != "all":
                # compare only the files this run made
                names = {p.name for p in Path(tmp).glob("*.safetensors")}
                sub = Path(tmp) / "_committed"
                sub.mkdir()
                for n in names:
                    if (committed / n).exists():
                        (sub / n).write_bytes((committed / n).read_bytes())
                committed = sub
            diffs = check(committed, Path(tmp))
        for d in diffs:
            ref.log(f"DIFF  {d}")
        if diffs:
            ref.log(f"CHECK FAILED: {len(diffs)} difference(s); regenerate with "
                    f"scripts/reference/{ref.fixturelib.TRANSFORMERS_VENVS[version]}/bin/python "
                    f"scripts/reference/hf_processors.py --transformers {version}")
            return 1
        ref.log("check ok: bit-identical")
        return 0
    generate_into(args.out_dir)
    if ref.NOTICES.seen:
        ref.log("transformers said (deduplicated; first context in brackets):")
        for msg, ctx in ref.NOTICES.seen.items():
            ref.log(f"  [{ctx}] {msg}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
