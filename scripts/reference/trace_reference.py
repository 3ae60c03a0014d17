"""Record per-token traces of transformers' own sampled generation.

For `compare trace` (docs/trace.md): a port's logits are compared with
transformers' along a real generation. For each trace this script calls,
with `torch.manual_seed(seed)` right before it,

    model.generate(ids, attention_mask=torch.ones_like(ids), max_new_tokens=STEPS,
                   output_scores=True, output_logits=True,
                   return_dict_in_generate=True, **kwargs)

on SmolLM2-135M-Instruct (GGUF Q4_1, which transformers dequantises to
float32) and stores, per generated token (step t): the raw logits
(`g.logits[t][0]`), the processed scores the sampler drew from
(`g.scores[t][0]`, stored sparsely: only the finite entries) and the sampled
token. Step t's context is `input_ids[:prompt_len + t]`.

A trace that hits an end-of-sequence token before STEPS tokens is refused
(`min_new_tokens` would add a processor and change the scores): pick another
seed.

llama.cpp's logits for the same steps come from trace_llamacpp.py (another
venv); see docs/fixtures.md, "Traces".

    scripts/reference/.venv/bin/python scripts/reference/trace_reference.py
    scripts/reference/.venv/bin/python scripts/reference/trace_reference.py --check
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import warnings
from pathlib import Path

import fixturelib  # noqa: E402  (sets the offline environment before transformers)
from fixturelib import NOTICES, install_notice_collector, log, print_notices, read_fixture, same_bits, templated_prompt_ids  # noqa: E402
from hf_reference import MODEL_NAME, MODEL_SHA256, REPO, load_model  # noqa: E402

import torch  # noqa: E402
import transformers  # noqa: E402
from safetensors.torch import save_file  # noqa: E402

fixturelib.PROGRAM = "trace_reference"

FORMAT = "sampling-parity-trace/1"
STEPS = 24

# (name, user prompt, generate kwargs, torch seed). Settings follow the seed
# article's names (docs/semantics.md): t07_default is transformers' hidden
# top-k 50, p09 a pure top-p, k40p09rep adds a repetition penalty.
TRACES: list[tuple[str, str, dict, int]] = [
    ("poem_t07_default", "Write a short poem about the sea at night.",
     dict(do_sample=True, temperature=0.7), 11),
    ("bicycle_p09", "Explain how a bicycle stays upright.",
     dict(do_sample=True, temperature=0.7, top_k=0, top_p=0.9), 22),
    ("cook_k40p09rep", "Give me three tips for learning to cook.",
     dict(do_sample=True, temperature=0.7, top_k=40, top_p=0.9, repetition_penalty=1.3), 33),
]


def record_trace(model, tokenizer, name: str, prompt: str, kwargs: dict, seed: int):
    prompt_ids = templated_prompt_ids(tokenizer, prompt)
    ids = torch.tensor([prompt_ids], dtype=torch.int64)
    NOTICES.context = name
    torch.manual_seed(seed)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with torch.inference_mode():
            g = model.generate(
                ids,
                attention_mask=torch.ones_like(ids),
                max_new_tokens=STEPS,
                output_scores=True,
                output_logits=True,
                return_dict_in_generate=True,
                **kwargs,
            )
    for w in caught:
        NOTICES.add_warning(w)
    seq = g.sequences[0]
    tokens = seq[len(prompt_ids):]
    if len(tokens) != STEPS or len(g.logits) != STEPS:
        raise SystemExit(f"{name}: generation stopped after {len(tokens)} of {STEPS} tokens "
                         f"({tokenizer.decode(tokens)!r}); choose another seed")
    logits = torch.stack([l[0] for l in g.logits]).to(torch.float32).contiguous()
    ids_l, vals_l, offsets = [], [], [0]
    for t in range(STEPS):
        s = g.scores[t][0].to(torch.float32)
        keep = torch.isfinite(s)
        # The sampled token must be one transformers could draw.
        if not bool(keep[tokens[t]]):
            raise SystemExit(f"{name}: step {t}: sampled token {int(tokens[t])} has a non-finite score")
        # Filtered tokens are -inf (transformers' filter_value); anything else
        # non-finite would be lost by the sparse format.
        if bool((s[~keep] != float("-inf")).any()):
            raise SystemExit(f"{name}: step {t}: a processed score is +inf or NaN; the sparse format cannot hold it")
        idx = keep.nonzero()[:, 0]
        ids_l.append(idx.to(torch.int64))
        vals_l.append(s[idx].contiguous())
        offsets.append(offsets[-1] + idx.numel())
    tensors = {
        "input_ids": seq.to(torch.int64).contiguous().clone(),
        "tokens": tokens.to(torch.int64).contiguous().clone(),
        "logits": logits.clone(),
        "scores.ids": torch.cat(ids_l).contiguous(),
        "scores.values": torch.cat(vals_l).contiguous(),
        "scores.offsets": torch.tensor(offsets, dtype=torch.int64),
    }
    text = tokenizer.decode(tokens)
    meta = {
        "format": FORMAT,
        "torch_version": torch.__version__,
        "transformers_version": transformers.__version__,
        "model": MODEL_NAME,
        "gguf_sha256": MODEL_SHA256,
        "vocab_size": str(logits.shape[1]),
        "name": name,
        "prompt": prompt,
        "prompt_len": str(len(prompt_ids)),
        "steps": str(STEPS),
        "kwargs": json.dumps(kwargs),
        "seed": str(seed),
        "text": text,
        "description": f"transformers generate(**{json.dumps(kwargs)}) with torch.manual_seed({seed}) on the "
                       f"chat-templated prompt {prompt!r}: {STEPS} sampled tokens, raw logits and processed scores per step",
    }
    log(f"{name}: {len(prompt_ids)} prompt tokens, kept per step "
        f"{[offsets[i + 1] - offsets[i] for i in range(STEPS)]}; text {text!r}")
    return tensors, meta


def generate_into(args, out_dir: Path) -> None:
    model, tokenizer, _ = load_model(args.model_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    for name, prompt, kwargs, seed in TRACES:
        tensors, meta = record_trace(model, tokenizer, name, prompt, kwargs, seed)
        path = out_dir / f"{name}.safetensors"
        save_file(tensors, str(path), metadata=meta)
        path.chmod(0o644)


def check(args) -> int:
    with tempfile.TemporaryDirectory(prefix="traces-check-") as tmp:
        generate_into(args, Path(tmp))
        failures = 0
        for name, *_ in TRACES:
            rel = f"{name}.safetensors"
            old_path, new_path = args.out_dir / rel, Path(tmp) / rel
            if not old_path.is_file():
                log(f"DIFF  {rel}: regenerated but not committed")
                failures += 1
                continue
            old, meta_o = read_fixture(old_path)
            new, meta_n = read_fixture(new_path)
            for key in sorted(set(meta_o) | set(meta_n)):
                if meta_o.get(key) != meta_n.get(key):
                    log(f"DIFF  {rel}: metadata {key!r}: {meta_o.get(key)!r} vs {meta_n.get(key)!r}")
                    failures += 1
            for key in sorted(set(old) | set(new)):
                a, b = old.get(key), new.get(key)
                if a is None or b is None or a.shape != b.shape or a.dtype != b.dtype:
                    log(f"DIFF  {rel}: tensor {key!r} missing or of another shape")
                    failures += 1
                elif a.dtype == torch.float32 and not same_bits(a, b):
                    d = float((a.double() - b.double()).abs().max())
                    log(f"DIFF  {rel}: {key} differs by up to {d:.3e}")
                    failures += 1
                elif a.dtype != torch.float32 and not torch.equal(a, b):
                    log(f"DIFF  {rel}: {key} differs")
                    failures += 1
        if failures:
            log(f"CHECK FAILED: {failures} difference(s); regenerate with "
                f"scripts/reference/.venv/bin/python scripts/reference/trace_reference.py")
            return 1
        log(f"check ok: {len(TRACES)} trace(s) match bitwise")
        return 0


def main() -> int:
    ap = argparse.ArgumentParser(description="Record transformers generation traces for `compare trace`.")
    ap.add_argument("--out-dir", type=Path, default=REPO / "fixtures" / "traces")
    ap.add_argument("--model-dir", type=Path, default=REPO / ".cache" / "models",
                    help=f"folder holding {MODEL_NAME} (see scripts/fetch-model.sh)")
    ap.add_argument("--check", action="store_true",
                    help="regenerate into a temporary folder and compare bit for bit with --out-dir")
    ap.add_argument("--threads", type=int, default=1,
                    help="torch intra-op threads; 1 keeps float reduction order independent of the core count")
    args = ap.parse_args()
    args.out_dir = args.out_dir.resolve()
    torch.set_num_threads(args.threads)
    install_notice_collector()
    log(f"torch {torch.__version__}, transformers {transformers.__version__}, threads {torch.get_num_threads()}")
    if args.check:
        rc = check(args)
    else:
        generate_into(args, args.out_dir)
        log(f"traces written under {args.out_dir}")
        rc = 0
    print_notices()
    return rc


if __name__ == "__main__":
    sys.exit(main())
