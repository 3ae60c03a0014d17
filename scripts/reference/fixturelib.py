"""Shared code of the fixture recorders (hf_reference.py, record_fixture.py).

Both scripts make the same generate call, store the same safetensors format
(`sampling-parity-fixture/1`, see docs/fixtures.md) and compare a regenerated
file with a committed one in the same way; that code lives here once.

Importing this module sets the offline environment variables, so it must be
imported before transformers.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import sys
import warnings
from pathlib import Path

# Everything must come from local files: no hub, ever. Set before transformers
# is imported, because it reads these at import time.
os.environ["HF_HUB_OFFLINE"] = "1"
os.environ["TRANSFORMERS_OFFLINE"] = "1"
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
# torch picks its CPU kernels by processor, and AVX-512's log_softmax rounds
# differently from AVX2's (one ulp on the edge files' renormalised scores).
# The committed fixtures were made with the AVX2 kernels, which every x86-64
# machine these scripts run on has; pin them so a check on an AVX-512
# machine regenerates them bit for bit. Set ATEN_CPU_CAPABILITY to override.
os.environ.setdefault("ATEN_CPU_CAPABILITY", "avx2")

import torch  # noqa: E402
import transformers  # noqa: E402
from safetensors import safe_open  # noqa: E402
from safetensors.torch import save_file  # noqa: E402

FORMAT = "sampling-parity-fixture/1"

# The transformers versions the recorders know, each with the venv that
# holds it (scripts/reference/setup.sh [VERSION] makes each): 5.23.0 records
# every fixture; 4.57.6 (the last 4.x on PyPI) and 5.0.0 (the first 5.x) the
# generation-config cases.
TRANSFORMERS_VENVS = {"5.23.0": ".venv", "4.57.6": ".venv-tf4", "5.0.0": ".venv-tf500"}


def require_transformers(wanted: str | None, allowed=tuple(TRANSFORMERS_VENVS)) -> str:
    """The running transformers version, checked against `--transformers`.

    A fixture names the version it was recorded from, so a recorder run from
    the wrong venv must stop rather than write (or check) another version's
    file. Exits with status 2 and the venv to use.
    """
    have = transformers.__version__
    want = wanted or have
    if want not in allowed:
        log(f"error: records transformers {', '.join(allowed)}, not {want}")
        raise SystemExit(2)
    if have != want:
        venv = TRANSFORMERS_VENVS.get(want, ".venv")
        log(f"error: --transformers {want}, but this Python has transformers {have}; run "
            f"scripts/reference/{venv}/bin/python (made by scripts/reference/setup.sh {want})")
        raise SystemExit(2)
    return want
SEED = 1234  # generate() samples a token we throw away; seeded so runs repeat.

# The 13 settings of the issue, in run order. Names follow the seed article.
STANDARD_SETTINGS: list[tuple[str, dict]] = [
    ("t07_default", dict(do_sample=True, temperature=0.7)),
    ("t07", dict(do_sample=True, temperature=0.7, top_k=0)),
    ("k40", dict(do_sample=True, temperature=0.7, top_k=40)),
    ("p09", dict(do_sample=True, temperature=0.7, top_k=0, top_p=0.9)),
    ("k40p09", dict(do_sample=True, temperature=0.7, top_k=40, top_p=0.9)),
    ("rep13", dict(do_sample=False, repetition_penalty=1.3)),
    ("default", dict(do_sample=True)),
    ("t15", dict(do_sample=True, temperature=1.5, top_k=0)),
    ("minp05", dict(do_sample=True, temperature=0.7, top_k=0, min_p=0.05)),
    ("typ09", dict(do_sample=True, top_k=0, typical_p=0.9)),
    ("eps", dict(do_sample=True, top_k=0, epsilon_cutoff=3e-4)),
    ("eta", dict(do_sample=True, top_k=0, eta_cutoff=2e-3)),
    ("k40p09rep", dict(do_sample=True, temperature=0.7, top_k=40, top_p=0.9, repetition_penalty=1.3)),
]

# Prefix of every progress line; each script sets its own name.
PROGRAM = "fixture"


def log(msg: str) -> None:
    print(f"{PROGRAM}: {msg}", file=sys.stderr, flush=True)


# --------------------------------------------------------------------------
# Capturing what transformers says while it runs
# --------------------------------------------------------------------------

class NoticeCollector(logging.Handler):
    """Collects transformers' log warnings and Python warnings, deduplicated.

    transformers reports effective defaults and ignored arguments through both
    channels (and some only once per process); we print a summary at the end so
    surprises are visible without drowning the progress output.
    """

    def __init__(self) -> None:
        super().__init__(level=logging.WARNING)
        self.seen: dict[str, str] = {}  # message -> first context that produced it
        self.context = "startup"

    def emit(self, record: logging.LogRecord) -> None:
        self.seen.setdefault(record.getMessage().strip(), self.context)

    def add_warning(self, w: warnings.WarningMessage) -> None:
        self.seen.setdefault(f"{w.category.__name__}: {w.message}".strip(), self.context)


NOTICES = NoticeCollector()


def install_notice_collector() -> None:
    tf_logger = logging.getLogger("transformers")
    tf_logger.addHandler(NOTICES)
    # Keep transformers' own stderr output too, but without progress bars.
    transformers.utils.logging.disable_progress_bar()


# --------------------------------------------------------------------------
# The one generate call
# --------------------------------------------------------------------------

def generate_once(model, ids: torch.Tensor, kwargs: dict) -> tuple[torch.Tensor, torch.Tensor]:
    """Run the contract's generate call; return (raw logits, processed scores)."""
    torch.manual_seed(SEED)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with torch.inference_mode():
            g = model.generate(
                ids,
                attention_mask=torch.ones_like(ids),
                max_new_tokens=1,
                output_scores=True,
                output_logits=True,
                return_dict_in_generate=True,
                **kwargs,
            )
    for w in caught:
        NOTICES.add_warning(w)
    logits = g.logits[0][0].detach().to(torch.float32).contiguous().clone()
    scores = g.scores[0][0].detach().to(torch.float32).contiguous().clone()
    return logits, scores


def same_bits(a: torch.Tensor, b: torch.Tensor) -> bool:
    """Bitwise equality (NaN-safe, distinguishes -0.0 from 0.0)."""
    return a.shape == b.shape and a.dtype == b.dtype and torch.equal(a.view(torch.int32), b.view(torch.int32))


def record_context(model, ids: torch.Tensor, settings: list[tuple[str, dict]], label: str, allow_reject: bool):
    """Run every setting on one context.

    Returns (tensors, settings_meta, rejected). A setting whose generate call
    raises is only tolerated for edge fixtures (allow_reject): it is then
    listed in `rejected` with the exception text instead of being stored.
    """
    tensors: dict[str, torch.Tensor] = {"input_ids": ids[0].to(torch.int64).contiguous().clone()}
    settings_meta: list[dict] = []
    rejected: list[dict] = []
    raw: torch.Tensor | None = None
    for name, kwargs in settings:
        assert name.replace("_", "").isalnum() and name == name.lower(), f"bad setting name {name!r}"
        NOTICES.context = f"{label}/{name}"
        try:
            logits, scores = generate_once(model, ids, kwargs)
        except (ValueError, RuntimeError) as e:
            # ValueError: transformers' own validation. RuntimeError: torch
            # failing to sample from an invalid distribution (inf/NaN). Any
            # other exception is a bug in this script and must surface.
            if not allow_reject:
                raise
            err = f"{type(e).__name__}: {e}"
            log(f"  {label}: {name} {json.dumps(kwargs)} rejected -> {err.splitlines()[0][:160]}")
            rejected.append({"name": name, "kwargs": kwargs, "error": err})
            continue
        if raw is None:
            raw = logits
        elif not same_bits(raw, logits):
            # The contract promises one `logits` per file; if the forward pass
            # were not deterministic, the fixture would be meaningless.
            raise SystemExit(f"{label}: raw logits differ between settings (at {name}); refusing to write")
        tensors[f"scores.{name}"] = scores
        settings_meta.append({"name": name, "kwargs": kwargs})
    if raw is None:
        raise SystemExit(f"{label}: every setting was rejected; nothing to store")
    tensors["logits"] = raw
    return tensors, settings_meta, rejected


def common_metadata(kind: str, settings_meta: list[dict], description: str) -> dict[str, str]:
    return {
        "format": FORMAT,
        "kind": kind,
        "torch_version": torch.__version__,
        "transformers_version": transformers.__version__,
        "settings": json.dumps(settings_meta),
        "description": description,
    }


def write_fixture(path: Path, tensors: dict[str, torch.Tensor], metadata: dict[str, str]) -> None:
    assert all(isinstance(v, str) for v in metadata.values())
    path.parent.mkdir(parents=True, exist_ok=True)
    save_file(tensors, str(path), metadata=metadata)
    path.chmod(0o644)  # safetensors creates 0600 files; fixtures are plain data
    n_scores = sum(1 for k in tensors if k.startswith("scores."))
    log(f"  wrote {path} (V={tensors['logits'].numel()}, n={tensors['input_ids'].numel()}, settings={n_scores})")


# --------------------------------------------------------------------------
# Model fixtures
# --------------------------------------------------------------------------

def sha256_file(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()



def templated_prompt_ids(tokenizer, prompt: str, system: str | None = None) -> list[int]:
    """The prompt as one user message (after an optional system message),
    rendered with the tokenizer's own chat template."""
    messages = [{"role": "user", "content": prompt}]
    if system is not None:
        messages.insert(0, {"role": "system", "content": system})
    enc = tokenizer.apply_chat_template(messages, add_generation_prompt=True, return_dict=True)
    return list(enc["input_ids"])


def greedy_answer(model, tokenizer, prompt_ids: list[int], max_new_tokens: int) -> list[int]:
    """The model's own greedy continuation, without the end-of-turn token."""
    ids = torch.tensor([prompt_ids], dtype=torch.int64)
    NOTICES.context = "greedy answer"
    with torch.inference_mode():
        out = model.generate(ids, attention_mask=torch.ones_like(ids), max_new_tokens=max_new_tokens, do_sample=False)
    answer = out[0, len(prompt_ids):].tolist()
    eos = model.generation_config.eos_token_id
    eos_ids = set(eos if isinstance(eos, list) else [eos]) if eos is not None else set()
    # Stop before the first end-of-sequence token: a context that continues
    # past it would not be one the model ever sees.
    for i, t in enumerate(answer):
        if t in eos_ids:
            return answer[:i]
    return answer


def gguf_tokens(gguf_path: Path) -> list[str]:
    """The GGUF's `tokenizer.ggml.tokens`, index = token id."""
    from gguf import GGUFReader  # imported here: only needed for this step

    reader = GGUFReader(str(gguf_path))
    field = reader.fields["tokenizer.ggml.tokens"]
    # A string array field keeps each element's bytes in `parts`; `data` lists
    # the indices of the parts that hold the element values.
    return [bytes(field.parts[i]).decode("utf-8") for i in field.data]


def vocab_json(tokens: list[str]) -> str:
    """The vocabulary file's text: one compact line; ensure_ascii=False keeps
    tokens such as "ĠAI" readable."""
    return json.dumps(tokens, ensure_ascii=False, separators=(",", ":")) + "\n"


# --------------------------------------------------------------------------
# Comparing a regenerated fixture with a committed one
# --------------------------------------------------------------------------

def read_fixture(path: Path) -> tuple[dict[str, torch.Tensor], dict[str, str]]:
    with safe_open(str(path), framework="pt") as f:
        return {k: f.get_tensor(k) for k in f.keys()}, dict(f.metadata() or {})


class CheckReport:
    def __init__(self) -> None:
        self.real: list[str] = []      # differences that fail the check
        self.low_bits: list[str] = []  # model logits differing only in low bits

    def fail(self, msg: str) -> None:
        self.real.append(msg)
        log(f"DIFF  {msg}")


def compare_model_file(rel: str, old: dict, new: dict, tolerance: float, report: CheckReport) -> None:
    """Model logits may differ in the last bits on another CPU (different
    SIMD kernels reorder float sums). That is not a regression: report the max
    difference and check the scores are consistent with it."""
    lo, ln = old["logits"], new["logits"]
    diff = (lo.double() - ln.double()).abs()
    max_diff = float(diff.max())
    if max_diff > tolerance or not torch.isfinite(diff).all():
        report.fail(f"{rel}: logits differ by up to {max_diff:.3e} (> tolerance {tolerance:.1e})")
        return
    report.low_bits.append(f"{rel}: logits max |diff| = {max_diff:.3e}")
    for key in sorted(k for k in old if k.startswith("scores.")):
        so, sn = old[key], new[key]
        kept_o, kept_n = torch.isfinite(so), torch.isfinite(sn)
        flips = int((kept_o != kept_n).sum())
        both = kept_o & kept_n
        d = float((so[both].double() - sn[both].double()).abs().max()) if both.any() else 0.0
        # Scores are logits divided by at most ~1/0.7 or penalised: the same
        # low-bit noise, scaled a little. A kept/filtered flip can only happen
        # at a cut that sits within that noise.
        if d > tolerance * 4:
            report.fail(f"{rel}: {key} differs by up to {d:.3e} beyond the logits noise")
        if flips:
            report.low_bits.append(f"{rel}: {key}: {flips} token(s) kept/filtered differently (cut within the noise)")



def compare_fixture(rel: str, committed: Path, regenerated: Path, tolerance: float, report: CheckReport) -> None:
    """Compare two fixture files: metadata, tensor names, dtypes and shapes,
    input_ids exactly, and every other tensor bitwise (model logits up to
    `tolerance`, see compare_model_file)."""
    old, meta_o = read_fixture(committed)
    new, meta_n = read_fixture(regenerated)
    for key in sorted(set(meta_o) | set(meta_n)):
        if meta_o.get(key) != meta_n.get(key):
            report.fail(f"{rel}: metadata {key!r} differs: {meta_o.get(key)!r} vs {meta_n.get(key)!r}")
    if set(old) != set(new):
        report.fail(f"{rel}: tensor names differ: only committed {sorted(set(old) - set(new))}, "
                    f"only new {sorted(set(new) - set(old))}")
    shared = sorted(set(old) & set(new))
    bad_shape = [k for k in shared if old[k].shape != new[k].shape or old[k].dtype != new[k].dtype]
    for k in bad_shape:
        report.fail(f"{rel}: {k}: {old[k].dtype}{list(old[k].shape)} vs {new[k].dtype}{list(new[k].shape)}")
    if bad_shape:
        return
    if not torch.equal(old["input_ids"], new["input_ids"]):
        report.fail(f"{rel}: input_ids differ")
        return
    differing = [k for k in shared if k != "input_ids" and not same_bits(old[k], new[k])]
    if not differing:
        return
    if meta_o.get("kind") == "model" and "logits" in differing:
        compare_model_file(rel, old, new, tolerance, report)
    else:
        # Edge logits are constants and model scores are a function
        # of the logits: any difference here is a real one.
        report.fail(f"{rel}: bitwise differences in {differing}")


def check_verdict(report: CheckReport, n_checked: int, strict: bool) -> int:
    """Print the outcome of a check; return the exit status."""
    if report.low_bits:
        log("NOTE: raw model logits differ from the committed ones in the low bits only. This is expected "
            "when torch's CPU kernels differ (another processor / instruction set); the committed fixtures "
            "stay authoritative. Details:")
        for line in report.low_bits:
            log(f"  {line}")
    if report.real:
        log(f"CHECK FAILED: {len(report.real)} real difference(s) across {n_checked} compared file(s)")
        return 1
    if report.low_bits and strict:
        log("CHECK FAILED (--strict): low-bit logits differences are not accepted")
        return 1
    log(f"check ok: {n_checked} file(s) match" + (" (up to low-bit logits noise)" if report.low_bits else " bitwise"))
    return 0


def print_notices() -> None:
    if NOTICES.seen:
        log("transformers said (deduplicated; first context in brackets):")
        for msg, ctx in NOTICES.seen.items():
            log(f"  [{ctx}] {msg}")
