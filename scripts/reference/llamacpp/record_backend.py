#!/usr/bin/env python3
"""Record what llama.cpp's backend sampling (`--backend-sampling`, request
field `backend_sampling`) does to our fixture logits on the CPU backend.

For every case record.py records (same fixtures, same requests, same chains
built by record.py's `build_chain`, the prompt accepted the same way), this
script runs the chain the way llama-server runs it when backend sampling is
on (backend_sampling.cpp says which llama.cpp functions it follows): the
chain's `backend_init` on the CPU device's buffer type, its `backend_apply`
on the logits row of a ggml graph, computed by ggml's CPU backend; then, as
`common_sampler_sample` does, either the token the backend sampled, or, when
only a prefix of the chain is backend-capable, the rest of the chain on the
CPU over the candidates the prefix left.

It records into fixtures/llamacpp-b11434/backend-cpu.jsonl, per case, what
record.py records (the final candidates with p > 0, `size`, `DRAWS` seeded
draws; each draw is one more graph computation, as each decode is) plus
`offloaded`: whether the whole chain ran on the backend. The header names the
build. crates/llamacpp-sampling/tests/it/backend.rs replays it with the
`llama.cpp` semantics given `backend_sampling: true` (crates/llamacpp-sampling/
src/backend.rs), and compares it with the CPU chain (the same semantics
without it, which replays this build's cases.jsonl exactly).

Usage (after scripts/reference/llamacpp/setup-build.sh b11434, which also
builds the harness):

    .cache/llama-build/venv/bin/python scripts/reference/llamacpp/record_backend.py \\
        --lib .cache/llama-build/b11434/bin [--check]
"""

from __future__ import annotations

import argparse
import ctypes
import json
import math
import os
import subprocess
import sys
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import record as R  # noqa: E402  (the requests, the chains, the fixtures)

BUILD = "b11434"
OUT = R.REPO / "fixtures" / f"llamacpp-{BUILD}" / "backend-cpu.jsonl"
FORMAT = "sampling-parity-llamacpp-backend/1"
# Samplers of record.py's chains without a backend implementation (backend_init
# is nullptr in src/llama-sampler.cpp); the chain runs on the backend up to the
# first of them (llama_sampler_chain_backend_init). Disabled samplers ("?name")
# are empty samplers, which have one.
CPU_ONLY = {"typical", "xtc", "top-n-sigma"}
# ggml_top_k (ggml/src/ggml.c line 5472) asserts k <= the row's length: an
# offloaded top-k with k above the vocabulary aborts the process.
TOP_K_ABORT = "GGML_ASSERT(a->ne[0] >= k) failed"


def offloaded_prefix(names: list[str]) -> list[str]:
    out = []
    for n in names:
        if n in CPU_ONLY:
            break
        out.append(n)
    return out


def harness(lib: Path):
    h = ctypes.CDLL(str(lib / "libbackend_sampling.so"))
    h.bs_init.argtypes = [ctypes.c_void_p]
    h.bs_init.restype = ctypes.c_bool
    h.bs_build.argtypes = [ctypes.c_void_p, ctypes.c_int32]
    h.bs_build.restype = ctypes.c_void_p
    i32p = ctypes.POINTER(ctypes.c_int32)
    f32p = ctypes.POINTER(ctypes.c_float)
    h.bs_run.argtypes = [ctypes.c_void_p, ctypes.c_void_p, f32p, i32p, i32p, f32p, f32p, i32p]
    h.bs_run.restype = ctypes.c_int32
    h.bs_free.argtypes = [ctypes.c_void_p]
    h.bs_free.restype = None
    return h


def run(h, p: dict, logits: np.ndarray, input_ids: list[int], seed: int, draws: int,
        xtc_override: float | None = None) -> dict:
    L = R.L
    n_vocab = len(logits)
    chain, _ = R.build_chain(p, n_vocab, seed, xtc_override)
    names = [L.llama_sampler_name(L.llama_sampler_chain_get(chain, i)).decode()
             for i in range(L.llama_sampler_chain_n(chain))]
    ptr = ctypes.cast(chain, ctypes.c_void_p)
    g = None
    if "top-k" in offloaded_prefix(names) and p["top_k"] > n_vocab and not os.environ.get("BS_RUN_ABORTING"):
        L.llama_sampler_free(chain)
        return {"chain": names, "abort": TOP_K_ABORT}
    try:
        offloaded = bool(h.bs_init(ptr))
        for t in input_ids:
            L.llama_sampler_accept(chain, t)
        g = h.bs_build(ptr, n_vocab)
        if not g:
            raise RuntimeError("graph allocation failed")
        src = np.ascontiguousarray(logits, dtype=np.float32)
        ids = np.zeros(n_vocab, dtype=np.int32)
        out_logits = np.zeros(n_vocab, dtype=np.float32)
        probs = np.zeros(n_vocab, dtype=np.float32)
        sampled = ctypes.c_int32()
        has_probs = ctypes.c_int32()
        f32p = ctypes.POINTER(ctypes.c_float)
        i32p = ctypes.POINTER(ctypes.c_int32)
        first = None
        tokens = []
        for _ in range(draws):
            n = h.bs_run(g, ptr, src.ctypes.data_as(f32p), ctypes.byref(sampled),
                         ids.ctypes.data_as(i32p), out_logits.ctypes.data_as(f32p),
                         probs.ctypes.data_as(f32p), ctypes.byref(has_probs))
            if n < 0:
                raise RuntimeError("graph compute failed")
            # common_sampler::set_logits, then common_sampler_sample
            buf = np.zeros(n, dtype=R.TOKEN_DATA)
            buf["id"] = ids[:n]
            buf["logit"] = out_logits[:n]
            if has_probs.value:
                buf["p"] = probs[:n]
            if sampled.value != -1:
                token = sampled.value
            else:
                arr = L.llama_token_data_array(
                    data=buf.ctypes.data_as(L.llama_token_data_p), size=n, selected=-1, sorted=False)
                L.llama_sampler_apply(chain, ctypes.byref(arr))
                n = arr.size
                base = ctypes.addressof(arr.data.contents)
                buf = np.frombuffer((ctypes.c_char * (n * R.TOKEN_DATA.itemsize)).from_address(base),
                                    dtype=R.TOKEN_DATA).copy()
                token = int(buf["id"][arr.selected])
            if first is None:
                first = buf
            tokens.append(token)
    finally:
        if g:
            h.bs_free(g)
        L.llama_sampler_free(chain)
    kept = [(int(i), float(q)) for i, q in zip(first["id"], first["p"]) if not (q == 0.0)]
    return {
        "chain": names,
        "offloaded": offloaded,
        "size": len(first),
        "ids": [i for i, _ in kept],
        "p": [None if math.isnan(q) else q for _, q in kept],
        "tokens": tokens,
    }


def check_abort(lib: Path, fixture: str, name: str) -> bool:
    """Run one case whose chain should abort in a child process: True if it
    died with TOP_K_ABORT on stderr."""
    env = dict(os.environ, BS_RUN_ABORTING="1", GGML_NO_BACKTRACE="1")
    r = subprocess.run([sys.executable, __file__, "--lib", str(lib), "--one", fixture, name],
                       env=env, capture_output=True, text=True, timeout=120)
    return r.returncode != 0 and TOP_K_ABORT in r.stderr


def record(h, lib: Path, only: tuple[str, str] | None = None) -> list[str]:
    L = R.L
    header = {"format": FORMAT, "llama_cpp_build": BUILD,
              "llama_cpp_source": R.BUILDS[BUILD]["llama_cpp_source"],
              "llama_cpp_python": L.__version__, "backend": "CPU",
              "system_info": L.llama_print_system_info().decode().strip(),
              "seed": R.SEED, "draws": R.DRAWS}
    lines = [json.dumps(header, sort_keys=True)]
    files = sorted((R.REPO / "fixtures" / "smollm2").glob("*.safetensors")) + sorted(
        (R.REPO / "fixtures" / "edge").glob("*.safetensors"))
    for path in files:
        logits, input_ids, meta = R.load(path)
        fixture = f"{path.parent.name}/{path.stem}"
        if only is not None and fixture != only[0]:
            continue
        requests = R.REQUESTS + (R.EDGE_ONLY if meta.get("kind") == "edge" else [])
        checked = False
        for name, request in requests:
            if only is not None and name != only[1]:
                continue
            request = dict(request)
            case = {"fixture": fixture, "name": name, "request": request}
            bad = [i for i, t in enumerate(input_ids) if not 0 <= t < len(logits)]
            if bad:
                continue  # refused before sampling, as record.py records
            p = R.resolve(request)
            case["seed"] = R.SEED
            case.update(run(h, p, logits, input_ids, R.SEED, R.DRAWS))
            if "abort" in case:
                # the first such case of each fixture is run for real in a child process
                if not checked and only is None:
                    if not check_abort(lib, fixture, name):
                        raise RuntimeError(f"{fixture} / {name}: expected {TOP_K_ABORT}")
                    case["abort_seen"] = True
                    checked = True
                lines.append(json.dumps(case, sort_keys=True))
                continue
            if 0.0 < p["xtc_probability"] < 1.0 and p["xtc_threshold"] <= 0.5:
                for branch, q in (("xtc_applied", 1.0), ("xtc_skipped", 0.0)):
                    r = run(h, p, logits, input_ids, R.SEED, 1, xtc_override=q)
                    case[branch] = {"ids": r["ids"], "p": r["p"], "size": r["size"]}
            lines.append(json.dumps(case, sort_keys=True))
        print(f"record_backend.py: {fixture}: {len(requests)} requests", file=sys.stderr)
    return lines


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--check", action="store_true",
                    help="regenerate in memory and fail if the committed file differs")
    ap.add_argument("--lib", type=Path, required=True,
                    help="folder holding the build's libllama.so and libbackend_sampling.so")
    ap.add_argument("--one", nargs=2, metavar=("FIXTURE", "NAME"),
                    help="run one case and print it (check_abort runs aborting cases this way)")
    args = ap.parse_args()
    os.environ["LLAMA_CPP_LIB_PATH"] = str(args.lib.resolve())
    import llama_cpp
    R.L = llama_cpp
    loaded = Path(llama_cpp.llama_cpp._lib._name).resolve()
    if loaded.parent != args.lib.resolve():
        print(f"record_backend.py: loaded {loaded}, not the library in {args.lib}", file=sys.stderr)
        return 2
    llama_cpp.llama_backend_init()
    h = harness(args.lib)
    if args.one:
        print("\n".join(record(h, args.lib, tuple(args.one))[1:]))
        return 0
    text = "\n".join(record(h, args.lib)) + "\n"
    if args.check:
        old = OUT.read_text() if OUT.exists() else ""
        if old == text:
            print(f"record_backend.py: {OUT.relative_to(R.REPO)} is up to date", file=sys.stderr)
            return 0
        a, b = old.splitlines(), text.splitlines()
        diff = [i + 1 for i, (x, y) in enumerate(zip(a, b)) if x != y]
        print(f"record_backend.py: DIFF: {len(a)} committed lines, {len(b)} regenerated; "
              f"differing lines {diff[:10]}", file=sys.stderr)
        return 1
    OUT.parent.mkdir(parents=True, exist_ok=True)
    OUT.write_text(text)
    print(f"record_backend.py: wrote {OUT.relative_to(R.REPO)}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
