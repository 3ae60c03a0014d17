#!/usr/bin/env python3
"""Record a sampling-parity fixture from your own model.

hf_reference.py records the bundled SmolLM2 fixtures; this script records the
same kind of file (`sampling-parity-fixture/1`, kind `model`, see
docs/fixtures.md) from any local model transformers can load: a GGUF file or a
transformers model folder (config.json + weights + tokenizer). It makes the
same generate call as hf_reference.py, once per named setting,

    model.generate(ids, attention_mask=torch.ones_like(ids), max_new_tokens=1,
                   output_scores=True, output_logits=True,
                   return_dict_in_generate=True, **kwargs)

on the prompt (chat-templated unless --no-chat-template) followed by the first
k tokens of the model's own greedy answer, and stores the raw logits, the
context, the processed scores of every setting, the settings transformers
rejected (with its message) and how the file was made: the model path, the
sha256 of its weights, the versions, and every option needed to make it again.

    record_fixture.py MODEL --prompt TEXT --out FILE.safetensors \\
        [--setting NAME='{"do_sample": true, ...}' ...] [--k N]
    record_fixture.py --check FILE.safetensors [--model MODEL]

`--check` reads the recipe from the file's metadata, records it again into a
temporary folder and compares the two files bit for bit (and the vocabulary
file byte for byte).

Run with the reference venv (scripts/reference/setup.sh). Nothing is fetched:
the model must be on disk. Progress and diagnostics go to stderr.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import re
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
    gguf_tokens,
    greedy_answer,
    install_notice_collector,
    log,
    print_notices,
    read_fixture,
    record_context,
    sha256_file,
    templated_prompt_ids,
    vocab_json,
    write_fixture,
)

import torch  # noqa: E402
import transformers  # noqa: E402
from transformers import AutoModelForCausalLM, AutoTokenizer, GenerationConfig  # noqa: E402
from transformers.generation.configuration_utils import GenerationMode  # noqa: E402

fixturelib.PROGRAM = "record_fixture"

RECORDED_BY = "scripts/reference/record_fixture.py"
DTYPES = {"float32": torch.float32, "bfloat16": torch.bfloat16, "float16": torch.float16}
# Files of a transformers model folder whose bytes are the weights.
WEIGHT_SUFFIXES = (".safetensors", ".bin", ".pt", ".pth", ".gguf")
# Arguments the recording call sets itself, or that would replace what it
# records: a setting may not pass them.
RESERVED_KWARGS = {
    "input_ids", "inputs", "attention_mask", "max_new_tokens", "max_length", "output_scores",
    "output_logits", "return_dict_in_generate", "generation_config", "logits_processor",
    "stopping_criteria", "streamer",
}
NAME_RE = re.compile(r"[a-z0-9_]+")


class UsageError(Exception):
    """A mistake in the command line or in a file's recipe (exit status 2)."""


# --------------------------------------------------------------------------
# The recipe: everything that decides a fixture's contents
# --------------------------------------------------------------------------

def parse_setting(text: str) -> tuple[str, dict]:
    """`NAME={"do_sample": true, ...}` -> (name, kwargs)."""
    name, sep, kwargs_json = text.partition("=")
    if not sep:
        raise UsageError(f"--setting {text!r}: expected NAME=JSON, e.g. t07='{{\"do_sample\": true, \"temperature\": 0.7}}'")
    if not NAME_RE.fullmatch(name):
        raise UsageError(f"--setting {text!r}: the name {name!r} must match [a-z0-9_]+")
    try:
        kwargs = json.loads(kwargs_json)
    except json.JSONDecodeError as e:
        raise UsageError(f"--setting {name}: kwargs {kwargs_json!r} are not JSON: {e}") from None
    if not isinstance(kwargs, dict):
        raise UsageError(f"--setting {name}: kwargs {kwargs_json!r} must be a JSON object")
    reserved = sorted(RESERVED_KWARGS & set(kwargs))
    if reserved:
        raise UsageError(f"--setting {name}: {reserved} are set by the recording call itself and cannot be passed")
    return name, kwargs


def check_settings(settings: list[tuple[str, dict]]) -> None:
    seen: set[str] = set()
    for name, _ in settings:
        if name in seen:
            raise UsageError(f"setting {name!r} is given twice")
        seen.add(name)


def recipe_from_args(args: argparse.Namespace) -> dict:
    settings = [parse_setting(s) for s in args.setting] if args.setting else list(STANDARD_SETTINGS)
    check_settings(settings)
    if args.k < 0 or args.answer_tokens < 0:
        raise UsageError("--k and --answer-tokens must not be negative")
    if args.k > args.answer_tokens:
        raise UsageError(f"--k {args.k} is more than --answer-tokens {args.answer_tokens}")
    if not NAME_RE.fullmatch(args.prompt_id):
        raise UsageError(f"--prompt-id {args.prompt_id!r} must match [a-z0-9_]+")
    if Path(args.vocab).name != args.vocab:
        raise UsageError(f"--vocab {args.vocab!r}: a file name, written beside the fixture")
    return dict(
        model=args.model_path,
        prompt=args.prompt,
        prompt_id=args.prompt_id,
        chat_template=not args.no_chat_template,
        system=args.system,
        k=args.k,
        answer_tokens=args.answer_tokens,
        settings=settings,
        dtype=args.dtype,
        threads=args.threads,
        generation_config=args.generation_config,
        vocab=args.vocab,
        description=args.description,
    )


def recipe_from_metadata(path: Path, meta: dict[str, str]) -> dict:
    """The recipe a file was recorded with (for --check)."""
    if meta.get("recorded_by") != RECORDED_BY:
        raise UsageError(f"{path}: not recorded by {RECORDED_BY} (metadata `recorded_by` is "
                         f"{meta.get('recorded_by')!r}); the bundled fixtures are checked by hf_reference.py --check")
    try:
        stored = json.loads(meta["settings"])
        rejected = json.loads(meta["rejected"])
        # The stored and the rejected settings together are the settings that
        # were run. Their interleaving is lost, and it does not matter: each
        # call is independent and both lists keep their own order.
        settings = [(s["name"], s["kwargs"]) for s in stored + rejected]
        return dict(
            model=meta["model"],
            prompt=meta["prompt"],
            prompt_id=meta["prompt_id"],
            chat_template={"true": True, "false": False}[meta["chat_template"]],
            system=meta.get("system"),
            k=int(meta["k"]),
            answer_tokens=int(meta["answer_tokens"]),
            settings=settings,
            dtype=meta["dtype"],
            threads=int(meta["threads"]),
            generation_config=meta["generation_config"],
            vocab=meta["vocab"],
            description=meta["description"],
        )
    except (KeyError, ValueError, TypeError) as e:
        raise UsageError(f"{path}: metadata does not hold a complete recipe ({type(e).__name__}: {e})") from None


# --------------------------------------------------------------------------
# The model
# --------------------------------------------------------------------------

def weights_sha256(model_path: Path) -> dict[str, str]:
    """sha256 of every weight file: the GGUF itself, or each weight file at
    the top of a transformers model folder."""
    if model_path.is_file():
        return {model_path.name: sha256_file(model_path)}
    files = sorted(p for p in model_path.iterdir() if p.is_file() and p.name.endswith(WEIGHT_SUFFIXES))
    if not files:
        raise UsageError(f"{model_path}: no weight files ({', '.join(WEIGHT_SUFFIXES)}) in this folder")
    return {p.name: sha256_file(p) for p in files}


def load_model(model_path: Path, dtype: str):
    """(model, tokenizer, format) from a GGUF file or a transformers folder."""
    NOTICES.context = "load"
    if model_path.is_file():
        # As hf_reference.py: transformers dequantises the GGUF to `dtype`.
        fmt, where, extra = "gguf", str(model_path.parent), dict(gguf_file=model_path.name)
    elif (model_path / "config.json").is_file():
        fmt, where, extra = "transformers", str(model_path), {}
    else:
        raise UsageError(f"{model_path}: neither a GGUF file nor a transformers model folder (no config.json)")
    log(f"loading {model_path} ({fmt}, {dtype})")
    tokenizer = AutoTokenizer.from_pretrained(where, **extra)
    model = AutoModelForCausalLM.from_pretrained(where, dtype=DTYPES[dtype], **extra)
    model.eval()
    return model, tokenizer, fmt


def apply_generation_config(model, mode: str) -> dict:
    """`model`: the model's generation config stays in effect, as in a plain
    generate call. `defaults`: everything but its special token ids is reset
    to transformers' defaults. Returns the values in effect that differ from
    the defaults."""
    if mode == "defaults":
        old = model.generation_config
        model.generation_config = GenerationConfig(
            **{k: getattr(old, k) for k in ("bos_token_id", "eos_token_id", "pad_token_id", "decoder_start_token_id")
               if getattr(old, k, None) is not None})
    values = model.generation_config.to_diff_dict()
    values.pop("transformers_version", None)
    ignored = {"_from_model_config", "bos_token_id", "eos_token_id", "pad_token_id", "decoder_start_token_id",
               "use_cache", "output_attentions", "output_hidden_states"}
    sampling = {k: v for k, v in values.items() if k not in ignored}
    if sampling:
        log(f"WARNING: the model's generation config sets {json.dumps(sampling)}; generate merges these into every "
            "setting. compare's hf-rust and candle sides see only each setting's kwargs, so spell these values "
            "in the kwargs or record with --generation-config defaults")
    return values


def check_generation_mode(model, name: str, kwargs: dict) -> None:
    """A fixture holds one greedy or sampling step; beam search, contrastive
    search and assisted decoding return scores of another kind."""
    try:
        config, _ = model._prepare_generation_config(None, **kwargs)
        mode = config.get_generation_mode()
    except (ValueError, TypeError):
        return  # generate raises this again, and it is recorded as rejected
    if mode not in (GenerationMode.GREEDY_SEARCH, GenerationMode.SAMPLE):
        raise UsageError(f"setting {name}: generate would run {mode.value}; a fixture records one greedy or "
                         "sampling step (num_beams=1, no assistant, no penalty_alpha)")


def prompt_ids(tokenizer, recipe: dict) -> list[int]:
    if recipe["chat_template"]:
        if not getattr(tokenizer, "chat_template", None):
            raise UsageError("the tokenizer has no chat template: pass --no-chat-template to use the prompt as it is")
        return templated_prompt_ids(tokenizer, recipe["prompt"], recipe["system"])
    if recipe["system"] is not None:
        raise UsageError("--system needs the chat template")
    # What `tokenizer(prompt)` gives, special tokens (such as BOS) included.
    return list(tokenizer(recipe["prompt"])["input_ids"])


def vocab_tokens(model_path: Path, fmt: str, tokenizer, vocab_size: int) -> list[str]:
    """Token strings, index = id: the GGUF's own list, or the tokenizer's
    tokens. Ids the tokenizer has no token for (padded embedding rows) get ""."""
    if fmt == "gguf":
        tokens = gguf_tokens(model_path)
    else:
        tokens = [t if t is not None else "" for t in tokenizer.convert_ids_to_tokens(list(range(min(vocab_size, len(tokenizer)))))]
    if len(tokens) > vocab_size:
        raise SystemExit(f"{model_path}: {len(tokens)} tokens but the logits have {vocab_size} entries")
    return tokens + [""] * (vocab_size - len(tokens))


def versions() -> dict[str, str]:
    import importlib.metadata as md

    out = {"python": platform.python_version()}
    for pkg in ("torch", "transformers", "tokenizers", "safetensors", "numpy", "accelerate", "gguf", "Jinja2"):
        try:
            out[pkg] = md.version(pkg)
        except md.PackageNotFoundError:
            out[pkg] = "not installed"
    return out


# --------------------------------------------------------------------------
# Recording
# --------------------------------------------------------------------------

def record(recipe: dict, model_path: Path, out: Path) -> None:
    """Record the recipe into `out` and its vocabulary file beside it."""
    if not model_path.exists():
        raise UsageError(f"{model_path}: no such file or folder")
    torch.set_num_threads(recipe["threads"])
    hashes = weights_sha256(model_path)
    model, tokenizer, fmt = load_model(model_path, recipe["dtype"])
    gen_values = apply_generation_config(model, recipe["generation_config"])
    for name, kwargs in recipe["settings"]:
        check_generation_mode(model, name, kwargs)

    ids_prompt = prompt_ids(tokenizer, recipe)
    answer = greedy_answer(model, tokenizer, ids_prompt, recipe["answer_tokens"])
    k = recipe["k"]
    if k > len(answer):
        raise UsageError(f"--k {k}: the greedy answer ends after {len(answer)} tokens (end of sequence)")
    full_answer = tokenizer.decode(answer)
    log(f"prompt: {len(ids_prompt)} tokens; greedy answer {len(answer)} tokens: {full_answer!r}")

    ids = torch.tensor([ids_prompt + answer[:k]], dtype=torch.int64)
    tensors, settings_meta, rejected = record_context(model, ids, recipe["settings"], out.stem, allow_reject=True)

    description = recipe["description"] or (
        f"next-token logits of {model_path.name} and transformers scores after the "
        f"{'chat-templated ' if recipe['chat_template'] else ''}prompt {recipe['prompt_id']!r} plus the first "
        f"{k} tokens of its greedy answer")
    meta = common_metadata("model", settings_meta, description)
    meta.update(
        rejected=json.dumps(rejected),
        model=recipe["model"],
        gguf_sha256=hashes[model_path.name] if fmt == "gguf" else "",
        prompt_id=recipe["prompt_id"],
        prompt=recipe["prompt"],
        prompt_len=str(len(ids_prompt)),
        k=str(k),
        answer=tokenizer.decode(answer[:k]),
        full_answer=full_answer,
        vocab=recipe["vocab"],
        recorded_by=RECORDED_BY,
        model_format=fmt,
        weights_sha256=json.dumps(hashes),
        chat_template="true" if recipe["chat_template"] else "false",
        answer_tokens=str(recipe["answer_tokens"]),
        dtype=recipe["dtype"],
        threads=str(recipe["threads"]),
        generation_config=recipe["generation_config"],
        generation_config_values=json.dumps(gen_values, sort_keys=True),
        versions=json.dumps(versions()),
    )
    if recipe["system"] is not None:
        meta["system"] = recipe["system"]
    write_fixture(out, tensors, meta)
    vocab = out.parent / recipe["vocab"]
    vocab.write_text(vocab_json(vocab_tokens(model_path, fmt, tokenizer, tensors["logits"].numel())), encoding="utf-8")
    log(f"  wrote {vocab}")


def run_record(args: argparse.Namespace) -> int:
    recipe = recipe_from_args(args)
    out = args.out.resolve()
    if out.suffix != ".safetensors":
        raise UsageError(f"--out {args.out}: the file name must end in .safetensors")
    if not NAME_RE.fullmatch(out.stem):
        # The file stem is the fixture's name in compare's reports.
        log(f"note: {out.stem!r} is not [a-z0-9_]+; compare will still read it")
    out.parent.mkdir(parents=True, exist_ok=True)
    # Record into a scratch folder beside the output and move into place at
    # the end, so a failed run leaves nothing half-written.
    with tempfile.TemporaryDirectory(prefix=".tmp-record-", dir=out.parent) as tmp:
        tmp_out = Path(tmp) / out.name
        record(recipe, Path(args.model_path), tmp_out)
        vocab_new = Path(tmp) / recipe["vocab"]
        vocab = out.parent / recipe["vocab"]
        if vocab.exists() and vocab.read_bytes() != vocab_new.read_bytes():
            raise UsageError(f"{vocab} exists and holds another vocabulary (another model's?): "
                             "pass --vocab OTHER.json, or remove it")
        os.replace(vocab_new, vocab)
        os.replace(tmp_out, out)
    log(f"fixture written: {out}")
    log(f"check it with: {Path(sys.argv[0]).as_posix()} --check {args.out}")
    return 0


def run_check(args: argparse.Namespace) -> int:
    path = args.check
    if not path.is_file():
        raise UsageError(f"{path}: no such fixture file")
    _, meta = read_fixture(path)
    recipe = recipe_from_metadata(path, meta)
    # Checked before loading too: another version's scores can only differ.
    recorded_with = meta.get("transformers_version")
    if recorded_with != transformers.__version__:
        venv = fixturelib.TRANSFORMERS_VENVS.get(recorded_with or "", ".venv")
        raise UsageError(f"{path} was recorded with transformers {recorded_with}, this Python has "
                         f"{transformers.__version__}: check it with scripts/reference/{venv}/bin/python")
    model_path = Path(args.model_path or recipe["model"])
    # Checked before loading: a check against other weights can only fail,
    # and the regenerated metadata would only say so after a long run.
    recorded = json.loads(meta.get("weights_sha256", "{}"))
    found = weights_sha256(model_path) if model_path.exists() else {}
    if found != recorded:
        log(f"CHECK FAILED: {model_path} is not the model the fixture was recorded from: weights sha256 "
            f"{json.dumps(found)} vs recorded {json.dumps(recorded)}"
            + ("" if args.model_path else " (pass --model to say where the model is now)"))
        return 1
    with tempfile.TemporaryDirectory(prefix="record-check-") as tmp:
        regenerated = Path(tmp) / path.name
        record(recipe, model_path, regenerated)
        report = CheckReport()
        compare_fixture(path.name, path, regenerated, args.tolerance, report)
        vocab_old, vocab_new = path.parent / recipe["vocab"], Path(tmp) / recipe["vocab"]
        if not vocab_old.is_file():
            report.fail(f"{recipe['vocab']}: missing beside {path}")
        elif vocab_old.read_bytes() != vocab_new.read_bytes():
            report.fail(f"{recipe['vocab']}: content differs")
        return check_verdict(report, 2, args.strict)


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(
        description="Record a sampling-parity fixture (transformers generate() logits and scores) from your own "
                    "model: a GGUF file or a transformers model folder.",
        formatter_class=argparse.ArgumentDefaultsHelpFormatter,
    )
    ap.add_argument("model_path", metavar="MODEL", nargs="?",
                    help="a .gguf file or a transformers model folder (config.json, weights, tokenizer)")
    ap.add_argument("--prompt", help="the prompt: the user message, or the raw text with --no-chat-template")
    ap.add_argument("--out", type=Path, help="the fixture file to write (FILE.safetensors)")
    ap.add_argument("--setting", action="append", metavar="NAME=JSON",
                    help="a named setting: generate kwargs as a JSON object, e.g. "
                         "t07='{\"do_sample\": true, \"temperature\": 0.7}' (repeatable; default: the 13 settings of "
                         "the bundled fixtures)")
    ap.add_argument("--k", type=int, default=0, help="append this many tokens of the model's greedy answer")
    ap.add_argument("--answer-tokens", type=int, default=80,
                    help="length of the greedy answer generated (cut at the end-of-sequence token); at least --k")
    ap.add_argument("--no-chat-template", action="store_true",
                    help="tokenize the prompt as it is (tokenizer(prompt), special tokens included)")
    ap.add_argument("--system", help="a system message before the prompt (chat template only)")
    ap.add_argument("--prompt-id", default="prompt", help="short name of the prompt, [a-z0-9_]+")
    ap.add_argument("--vocab", default="vocab.json",
                    help="vocabulary file name, written beside the fixture (fixtures of one model can share it)")
    ap.add_argument("--description", help="one line saying what the file is for [default: generated]")
    ap.add_argument("--generation-config", choices=("model", "defaults"), default="model",
                    help="'model': the model's generation_config stays in effect, as in a plain generate call; "
                         "'defaults': only its special token ids are kept")
    ap.add_argument("--dtype", choices=sorted(DTYPES), default="float32", help="dtype the model is loaded in")
    ap.add_argument("--threads", type=int, default=1,
                    help="torch intra-op threads; 1 keeps float reduction order independent of the core count")
    ap.add_argument("--check", type=Path, metavar="FIXTURE",
                    help="record FIXTURE again from the recipe in its metadata and compare bit for bit")
    ap.add_argument("--model", dest="check_model", type=Path, metavar="PATH",
                    help="--check: where the model is now, if not at the path recorded in the fixture")
    ap.add_argument("--tolerance", type=float, default=1e-3,
                    help="--check: max |diff| of logits still reported as CPU low-bit noise, not a failure")
    ap.add_argument("--strict", action="store_true", help="--check: fail on any bit difference, even low-bit noise")
    ap.add_argument("--transformers", choices=tuple(fixturelib.TRANSFORMERS_VENVS), default=None,
                    help="the transformers version to record with (default: the installed one); it must be the "
                         "installed one: scripts/reference/.venv has 5.23.0, .venv-tf4 4.57.6 (setup.sh 4.57.6)")
    args = ap.parse_args(argv)
    if args.check:
        recording_only = [flag for flag, given in (
            ("MODEL", args.model_path), ("--prompt", args.prompt), ("--out", args.out), ("--setting", args.setting),
        ) if given]
        if recording_only:
            ap.error(f"--check takes the recipe from the fixture; drop {', '.join(recording_only)} "
                     "(use --model to say where the model is)")
        args.model_path = str(args.check_model) if args.check_model else None
    else:
        if args.check_model:
            ap.error("--model goes with --check; when recording, the model is the first argument")
        missing = [flag for flag, given in (("MODEL", args.model_path), ("--prompt", args.prompt),
                                            ("--out", args.out)) if not given]
        if missing:
            ap.error(f"recording needs {', '.join(missing)}")
    return args


def main() -> int:
    args = parse_args()
    install_notice_collector()
    fixturelib.require_transformers(args.transformers)
    log(f"torch {torch.__version__}, transformers {transformers.__version__}")
    try:
        rc = run_check(args) if args.check else run_record(args)
    except UsageError as e:
        log(f"error: {e}")
        return 2
    print_notices()
    return rc


if __name__ == "__main__":
    sys.exit(main())
