#!/usr/bin/env python3
"""Record llama.cpp's logits along each transformers trace (fixtures/traces/).

For every `fixtures/traces/NAME.safetensors` written by trace_reference.py,
this script loads the same GGUF into the real llama.cpp (llama-cpp-python
0.3.36, vendoring llama.cpp 0c1e57098bba43ac29e6e3b677cdceebdd22334f; the
venv of scripts/reference/llamacpp/setup.sh) and teacher-forces transformers'
tokens the way llama.cpp runs a generation: the prompt in one batch
(`llama_decode` of prompt_len tokens), then one token per `llama_decode`.
After each decode it copies the logits of the last position
(`llama_get_logits`, float32) into `NAME.llamacpp.safetensors`:

  logits     F32 [steps, V]   llama.cpp's logits for step t (context input_ids[:prompt_len + t])
  input_ids  I64 [n]          the trace's input_ids, so a mismatched pair is detected

One thread, CPU only, so `--check` regenerates the same bits.

    scripts/reference/llamacpp/.venv/bin/python scripts/reference/trace_llamacpp.py
    scripts/reference/llamacpp/.venv/bin/python scripts/reference/trace_llamacpp.py --check
"""

from __future__ import annotations

import argparse
import hashlib
import sys
import tempfile
from pathlib import Path

import numpy as np
from safetensors import safe_open
from safetensors.numpy import save_file

import llama_cpp

REPO = Path(__file__).resolve().parents[2]
FORMAT = "sampling-parity-trace-llamacpp/1"
LLAMA_CPP_COMMIT = "0c1e57098bba43ac29e6e3b677cdceebdd22334f"
MODEL_NAME = "SmolLM2-135M-Instruct.Q4_1.gguf"
MODEL_SHA256 = "b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53"


def log(msg: str) -> None:
    print(f"trace_llamacpp: {msg}", file=sys.stderr, flush=True)


def sha256_file(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def traces(trace_dir: Path) -> list[Path]:
    return sorted(p for p in trace_dir.glob("*.safetensors") if not p.name.endswith(".llamacpp.safetensors"))


def record(llm, trace: Path, out: Path) -> None:
    with safe_open(str(trace), framework="np") as f:
        meta = f.metadata()
        input_ids = f.get_tensor("input_ids")
    if meta.get("gguf_sha256") != MODEL_SHA256:
        raise SystemExit(f"{trace}: recorded from gguf_sha256 {meta.get('gguf_sha256')!r}, not {MODEL_SHA256}")
    prompt_len, steps = int(meta["prompt_len"]), int(meta["steps"])
    n_vocab = llm.n_vocab()
    if str(n_vocab) != meta["vocab_size"]:
        raise SystemExit(f"{trace}: vocab_size {meta['vocab_size']} but llama.cpp has {n_vocab}")
    ids = [int(t) for t in input_ids]
    llm.reset()
    rows = []
    llm.eval(ids[:prompt_len])
    for t in range(steps):
        if t > 0:
            llm.eval([ids[prompt_len + t - 1]])
        rows.append(np.ctypeslib.as_array(llm._ctx.get_logits(), shape=(n_vocab,)).astype(np.float32).copy())
    logits = np.stack(rows)
    save_file(
        {"logits": np.ascontiguousarray(logits), "input_ids": input_ids.astype(np.int64)},
        str(out),
        metadata={
            "format": FORMAT,
            "llama_cpp_python_version": llama_cpp.__version__,
            "llama_cpp_commit": LLAMA_CPP_COMMIT,
            "model": MODEL_NAME,
            "gguf_sha256": MODEL_SHA256,
            "vocab_size": str(n_vocab),
            "trace": trace.name,
            "prompt_len": str(prompt_len),
            "steps": str(steps),
            "description": "llama.cpp logits teacher-forced on the trace's tokens: prompt in one llama_decode, "
                           "then one token per llama_decode; 1 thread, CPU",
        },
    )
    out.chmod(0o644)
    argmax_agree = sum(int(np.argmax(r)) == int(input_ids[prompt_len + t]) for t, r in enumerate(rows))
    log(f"  wrote {out.name} ({steps} steps; llama.cpp's argmax is the sampled token at {argmax_agree} steps)")


def generate_into(args, out_dir: Path) -> list[str]:
    model = args.model_dir / MODEL_NAME
    if not model.is_file():
        raise SystemExit(f"{model} not found: run scripts/fetch-model.sh first")
    if sha256_file(model) != MODEL_SHA256:
        raise SystemExit(f"{model}: sha256 is not {MODEL_SHA256}; rerun scripts/fetch-model.sh")
    llm = llama_cpp.Llama(model_path=str(model), n_ctx=512, n_batch=512, n_ubatch=512, n_threads=1,
                          n_threads_batch=1, logits_all=False, seed=0, verbose=False)
    names = []
    for trace in traces(args.trace_dir):
        name = trace.name.removesuffix(".safetensors") + ".llamacpp.safetensors"
        record(llm, trace, out_dir / name)
        names.append(name)
    return names


def main() -> int:
    ap = argparse.ArgumentParser(description="Record llama.cpp logits along the transformers traces.")
    ap.add_argument("--trace-dir", type=Path, default=REPO / "fixtures" / "traces")
    ap.add_argument("--model-dir", type=Path, default=REPO / ".cache" / "models")
    ap.add_argument("--check", action="store_true", help="regenerate into a temporary folder and compare bit for bit")
    args = ap.parse_args()
    log(f"llama-cpp-python {llama_cpp.__version__}")
    if not args.check:
        generate_into(args, args.trace_dir)
        return 0
    with tempfile.TemporaryDirectory(prefix="trace-llamacpp-check-") as tmp:
        failures = 0
        for name in generate_into(args, Path(tmp)):
            old, new = args.trace_dir / name, Path(tmp) / name
            if not old.is_file():
                log(f"DIFF  {name}: regenerated but not committed")
                failures += 1
                continue
            # Compare contents, not bytes: safetensors writes the metadata map
            # in no fixed order.
            with safe_open(str(old), framework="np") as a, safe_open(str(new), framework="np") as b:
                if a.metadata() != b.metadata():
                    log(f"DIFF  {name}: metadata differs")
                    failures += 1
                for key in sorted(set(a.keys()) | set(b.keys())):
                    if key not in a.keys() or key not in b.keys():
                        log(f"DIFF  {name}: tensor {key!r} only on one side")
                        failures += 1
                        continue
                    x, y = a.get_tensor(key), b.get_tensor(key)
                    if x.dtype != y.dtype or x.shape != y.shape or x.tobytes() != y.tobytes():
                        log(f"DIFF  {name}: tensor {key!r} is not bitwise identical")
                        failures += 1
        if failures:
            log(f"CHECK FAILED; regenerate with scripts/reference/llamacpp/.venv/bin/python {Path(__file__).name}")
            return 1
        log("check ok: every llama.cpp trace file matches bitwise")
        return 0


if __name__ == "__main__":
    sys.exit(main())
