#!/usr/bin/env python3
"""Record what mistral.rs's own CPU sampler does on the bundled fixture logits.

The sampler is run by a harness binary kept OUTSIDE this repository (it is
built from mistral.rs's and candle's fetched source, which this repository
never holds). fixtures/mistralrs/README.md says exactly what the harness
compiles, at which commits, and how to rebuild it; in short:

  - `mistralrs-core/src/sampler.rs` of tag v0.9.2 (d184053f) or v0.9.1
    (11f25505), byte for byte, compiled as a module of a small binary crate
    whose dependencies are the ones that file imports, at the versions of
    mistral.rs's own Cargo.lock, and candle-core/candle-nn as path
    dependencies on `git archive` of candle at the exact revision the tag's
    Cargo.toml names (35d7ae7c for v0.9.2, 27f20fea for v0.9.1);
  - `rand` is the real rand 0.9.4 re-exported whole, except that
    `WeightedIndex::new` first copies the weights it is given (then builds the
    real `WeightedIndex` from the same values): that copy is what is recorded;
  - per case, `Sampler::new(...)` exactly as `engine/add_request.rs` calls it
    and `sampler.sample(...)` exactly as `pipeline/sampling.rs` does, with the
    engine's one `Isaac64Rng::seed_from_u64(0)` (`engine/mod.rs`), called
    DRAWS times in a row on the same logits and the same RNG.

The harness reads one JSON case per line on stdin and answers one JSON line.

Usage (from the repository root; standard library only, no venv):
    MISTRALRS_HARNESS_092=/path/to/mistralrs-sampler-harness-092 \
    MISTRALRS_HARNESS_091=/path/to/mistralrs-sampler-harness-091 \
        python3 scripts/reference/mistralrs/record.py            # write fixtures/mistralrs
        python3 scripts/reference/mistralrs/record.py --check    # regenerate in memory, compare bit for bit, exit 1 on a difference
The binaries can also be given with --harness-092 / --harness-091.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import random
import struct
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[3]
OUT = REPO / "fixtures" / "mistralrs"
FORMAT = "sampling-parity-mistralrs/1"
DRAWS = 20  # successive Sampler::sample calls per case, one RNG
SPARSE_MAX = 2048  # store every kept weight up to this many, else the TOP largest
TOP = 256

VERSIONS = {
    "0.9.2": {
        "env": "MISTRALRS_HARNESS_092",
        "tag": "v0.9.2",
        "commit": "d184053f2441f897cf81429b98b0d868f4d96ff3",
        "candle": "35d7ae7ca5c93e17c77359c3617376b8a72e96a4",
    },
    "0.9.1": {
        "env": "MISTRALRS_HARNESS_091",
        "tag": "v0.9.1",
        "commit": "11f255058573e085afe0a149f8a19cbd39aa1200",
        "candle": "27f20fea993c81ea6d32ce44018f42b68466525e",
    },
}

# Request-level SamplingParams fields (None = unset), as add_request.rs holds
# them after the server parsed the request. "bias": "top" biases the three
# largest logits (+2, -1.5, +0.25) and one id past the vocabulary.
MODEL_CASES = [
    ("t1", {}),
    ("t07", {"temperature": 0.7}),
    ("t15", {"temperature": 1.5}),
    ("greedy", {"temperature": 0.0}),
    ("t1e8", {"temperature": 1e-8}),
    ("k1", {"temperature": 0.7, "top_k": 1}),
    ("k0", {"temperature": 0.7, "top_k": 0}),
    ("k40", {"temperature": 0.7, "top_k": 40}),
    ("k50", {"top_k": 50}),
    ("k1000", {"top_k": 1000}),
    ("p09", {"temperature": 0.7, "top_p": 0.9}),
    ("p05", {"top_p": 0.5}),
    ("p0", {"top_p": 0.0}),
    ("p1", {"top_p": 1.0}),
    ("k40p09", {"temperature": 0.7, "top_k": 40, "top_p": 0.9}),
    ("k40p05", {"top_k": 40, "top_p": 0.5}),
    ("k17p095", {"temperature": 0.7, "top_k": 17, "top_p": 0.95}),
    ("minp005", {"temperature": 0.7, "min_p": 0.05}),
    ("minp02k40p08", {"min_p": 0.02, "top_k": 40, "top_p": 0.8}),
    ("minp1", {"min_p": 1.0}),
    ("rep13_greedy", {"temperature": 0.0, "repetition_penalty": 1.3}),
    ("rep13_k40", {"temperature": 0.7, "top_k": 40, "repetition_penalty": 1.3}),
    ("freq05_pres03", {"temperature": 0.7, "frequency_penalty": 0.5, "presence_penalty": 0.3, "top_k": 100}),
    ("pres_neg1_k20", {"presence_penalty": -1.0, "top_k": 20}),
    ("rep07_freqneg_k100", {"repetition_penalty": 0.7, "frequency_penalty": -0.4, "top_k": 100}),
    ("bias_k50", {"temperature": 0.9, "top_k": 50, "logits_bias": "top"}),
    ("combo", {"temperature": 0.8, "top_k": 60, "top_p": 0.85, "min_p": 0.02,
               "repetition_penalty": 1.2, "frequency_penalty": 0.3, "presence_penalty": 0.2,
               "logits_bias": "top"}),
]

EDGE_CASES = [
    ("t1", {}),
    ("t07", {"temperature": 0.7}),
    ("t15", {"temperature": 1.5}),
    ("greedy", {"temperature": 0.0}),
    ("k1", {"top_k": 1}),
    ("k2", {"top_k": 2}),
    ("k5", {"top_k": 5}),
    ("k40", {"temperature": 0.7, "top_k": 40}),
    ("p05", {"top_p": 0.5}),
    ("p08", {"top_p": 0.8}),
    ("p09", {"top_p": 0.9}),
    ("p09_t07", {"temperature": 0.7, "top_p": 0.9}),
    ("p15", {"top_p": 1.5}),
    ("k2p09", {"top_k": 2, "top_p": 0.9}),
    ("k40p09", {"temperature": 0.7, "top_k": 40, "top_p": 0.9}),
    ("k100p05", {"top_k": 100, "top_p": 0.5}),
    ("minp01", {"min_p": 0.1}),
    ("minp05", {"min_p": 0.5}),
    ("minp05_t07", {"temperature": 0.7, "min_p": 0.5}),
    ("minp05p05", {"min_p": 0.5, "top_p": 0.5}),
    ("k40minp02", {"top_k": 40, "min_p": 0.2}),
    ("rep13", {"repetition_penalty": 1.3}),
    ("rep07_greedy", {"temperature": 0.0, "repetition_penalty": 0.7}),
    ("freq1_pres1", {"frequency_penalty": 1.0, "presence_penalty": 1.0}),
    ("bias", {"logits_bias": "top"}),
    ("bias_neg_inf_greedy", {"temperature": 0.0, "logits_bias": "ninf"}),
]

# Synthetic rows (stored with the recording): tie-heavy rows whose top-k,
# top-p and min-p cuts fall inside ties, a Gaussian row and one with -inf.
SYNTH_CASES = [
    ("t1", {}),
    ("greedy", {"temperature": 0.0}),
    ("k2", {"top_k": 2}),
    ("k10", {"top_k": 10}),
    ("k46", {"top_k": 46}),
    ("k47", {"top_k": 47}),
    ("k500", {"top_k": 500}),
    ("p03", {"top_p": 0.3}),
    ("p09_t07", {"temperature": 0.7, "top_p": 0.9}),
    ("k10p03", {"top_k": 10, "top_p": 0.3}),
    ("k40p09_t07", {"temperature": 0.7, "top_k": 40, "top_p": 0.9}),
    ("k47p05_minp05", {"top_k": 47, "top_p": 0.5, "min_p": 0.5}),
    ("minp03", {"min_p": 0.3}),
    ("t05_k46", {"temperature": 0.5, "top_k": 46}),
    ("pen_k10", {"top_k": 10, "repetition_penalty": 1.5, "frequency_penalty": 0.7, "presence_penalty": -0.3}),
]


# One engine generator shared by successive requests, in arrival order
# (continue_rng): (source, params, number of sample() calls). The first step
# of "server_start" is the startup dummy run of a freshly started
# mistralrs-server (lib.rs: SamplingParams::deterministic(), i.e. top_k 1 and
# no temperature, max_len 1): one call.
SEQUENCES = {
    "arrival_order": [
        ("smollm2/hello_k7.safetensors", {"temperature": 0.7, "top_k": 40}, 3),
        ("edge/int_ties_v1000.safetensors", {"temperature": 0.0}, 2),
        ("edge/ties_3221.safetensors", {}, 4),
        ("smollm2/write_k0.safetensors", {"top_p": 0.9}, 5),
        ("edge/int_ties_v1000.safetensors", {"temperature": 0.7, "top_k": 40, "top_p": 0.9}, 6),
        ("smollm2/hello_k0.safetensors", {"min_p": 0.05, "frequency_penalty": 0.5}, 3),
    ],
    "server_start": [
        ("smollm2/hello_k0.safetensors", {"top_k": 1}, 1),
        ("smollm2/hello_k7.safetensors", {"temperature": 0.7, "top_k": 40, "top_p": 0.9}, 10),
    ],
}


# Small rows whose answer turns on one rule (each row with its own settings):
# top-p renormalised after top-k (0.9.2) or not (0.9.1), the crossing token,
# top-p off values, min-p dropping a token exactly at the threshold, exactly k
# at a tie, T unset = 1, T below 1e-7 = argmax, T as a reciprocal, the
# penalty order and scope, bias after penalties with an id past V.
RULE_ROWS = [
    ("rule_ln5_ln3_0_0", [math.log(5), math.log(3), 0.0, 0.0], [0], 1, [
        ("k3p055", {"temperature": 1.0, "top_k": 3, "top_p": 0.55}),
        ("p07", {"temperature": 1.0, "top_p": 0.7}),
        ("p0", {"temperature": 1.0, "top_p": 0.0}),
        ("p1", {"temperature": 1.0, "top_p": 1.0}),
        ("p15", {"temperature": 1.0, "top_p": 1.5}),
    ]),
    ("rule_ln2_0_0", [math.log(2), 0.0, 0.0], [0], 1, [
        ("minp05", {"temperature": 1.0, "min_p": 0.5}),
        ("minp049", {"temperature": 1.0, "min_p": 0.49}),
    ]),
    ("rule_3_2_2_1", [3.0, 2.0, 2.0, 1.0], [0], 1, [
        ("k2", {"temperature": 1.0, "top_k": 2}),
        ("k0", {"temperature": 1.0, "top_k": 0}),
    ]),
    ("rule_1_4_4_0", [1.0, 4.0, 4.0, 0.0], [0], 1, [
        ("unset_k3", {"top_k": 3}),
        ("t5e8", {"temperature": 5e-8}),
        ("t0", {"temperature": 0.0}),
        ("t05", {"temperature": 0.5}),
    ]),
    ("rule_penalties", [2.0, 1.0, -1.0, 0.5], [0, 2, 1, 1, 2], 2, [
        ("freq_pres_rep", {"frequency_penalty": 0.25, "presence_penalty": 0.5, "repetition_penalty": 2.0}),
        ("rep2_bias", {"repetition_penalty": 2.0, "logits_bias": {"0": 1.5, "9": 3.0}}),
        ("rep2_bias_greedy", {"temperature": 0.0, "repetition_penalty": 2.0, "logits_bias": {"0": 1.5, "9": 3.0}}),
    ]),
]


def f32(x: float) -> float:
    return struct.unpack("<f", struct.pack("<f", x))[0]


def synthetic() -> list[tuple[str, list[float], list[int], int]]:
    """(name, logits, context, prompt_len) from a fixed generator (Python's
    `random.Random`, whose sequence is fixed across versions)."""
    rng = random.Random(20261202)
    rows = []
    for v, levels in ((3000, 4), (3000, 12), (200, 3), (1000, 9)):
        rows.append((f"ties_v{v}_l{levels}", [f32(rng.randrange(levels) / 2) for _ in range(v)]))
    rows.append(("gauss_v5000", [f32(rng.gauss(0.0, 2.0)) for _ in range(5000)]))
    b = [float(rng.randrange(5)) for _ in range(400)]
    b = [-math.inf if rng.random() < 0.6 else x for x in b]
    rows.append(("neg_inf_blocks_v400", b))
    out = []
    for name, logits in rows:
        ids = [rng.randrange(len(logits)) for _ in range(14)]
        ids[-3:] = [ids[-1]] * 3  # a repeated generated id
        out.append((name, logits, ids, 8))
    return out


# --------------------------------------------------------------------------
# safetensors, by hand (standard library only)
# --------------------------------------------------------------------------

def read_safetensors(path: Path) -> tuple[dict, dict[str, list]]:
    data = path.read_bytes()
    n = int.from_bytes(data[:8], "little")
    header = json.loads(data[8 : 8 + n])
    meta = header.pop("__metadata__", {})
    base = 8 + n
    out = {}
    for k, v in header.items():
        a, b = v["data_offsets"]
        raw = data[base + a : base + b]
        code = {"F32": "f", "I64": "q", "F64": "d", "I32": "i"}[v["dtype"]]
        out[k] = list(struct.unpack(f"<{len(raw) // struct.calcsize(code)}{code}", raw))
    return meta, out


def write_safetensors(tensors: dict[str, tuple[str, list]], meta: dict[str, str]) -> bytes:
    """Deterministic bytes: keys sorted, data in key order, header padded with spaces."""
    header: dict = {}
    blobs = []
    off = 0
    for k in sorted(tensors):
        dtype, vals = tensors[k]
        code = {"F32": "f", "I64": "q", "U32": "I"}[dtype]
        raw = struct.pack(f"<{len(vals)}{code}", *vals)
        header[k] = {"dtype": dtype, "shape": [len(vals)], "data_offsets": [off, off + len(raw)]}
        blobs.append(raw)
        off += len(raw)
    header["__metadata__"] = meta
    h = json.dumps(header, sort_keys=True, separators=(",", ":")).encode()
    h += b" " * ((8 - len(h) % 8) % 8)
    return len(h).to_bytes(8, "little") + h + b"".join(blobs)


def fnv1a64_bits(bits: list[int]) -> str:
    """FNV-1a 64 over the f32 bit patterns, little-endian, in vocabulary order."""
    h = 0xCBF29CE484222325
    for b in struct.pack(f"<{len(bits)}I", *bits):
        h ^= b
        h = (h * 0x100000001B3) & 0xFFFFFFFFFFFFFFFF
    return f"{h:016x}"


# --------------------------------------------------------------------------
# Driving the harness
# --------------------------------------------------------------------------

def bias_for(kind, logits: list[float]) -> dict[str, float] | None:
    if kind is None:
        return None
    order = sorted(range(len(logits)), key=lambda i: (-logits[i], i))
    if kind == "top":
        b = {}
        for i, v in zip(order[:3], (2.0, -1.5, 0.25)):
            b[str(i)] = v
        b[str(len(logits) + 5)] = 3.0  # past the vocabulary: skipped
        return b
    if kind == "ninf":
        # JSON has no -inf; serde reads 1e39 into an f32 as `1e39f64 as f32`, infinity.
        return {str(order[0]): -1e39}
    raise ValueError(kind)


class Harness:
    def __init__(self, binary: str, tmp: Path) -> None:
        # candle's errors carry a backtrace when RUST_BACKTRACE is set: keep
        # only their message, so a run repeats byte for byte.
        env = dict(os.environ, RUST_BACKTRACE="0", RUST_LIB_BACKTRACE="0")
        self.proc = subprocess.Popen([binary], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, env=env)
        self.tmp = tmp
        self.n = 0

    def run(self, name: str, logits: list[float], context: list[int], prompt_len: int, params: dict,
            draws: int = DRAWS, continue_rng: bool = False) -> dict:
        self.n += 1
        path = self.tmp / f"logits_{self.n}.f32"
        path.write_bytes(struct.pack(f"<{len(logits)}f", *logits))
        case = {"name": name, "logits_file": str(path), "context": context, "prompt_len": prompt_len,
                "draws": draws, "continue_rng": continue_rng}
        for k in ("temperature", "top_k", "top_p", "min_p", "frequency_penalty", "presence_penalty",
                  "repetition_penalty"):
            case[k] = params.get(k)
        lb = params.get("logits_bias")
        lb = lb if isinstance(lb, dict) else bias_for(lb, logits)
        case["logits_bias"] = lb
        self.proc.stdin.write(json.dumps(case) + "\n")
        self.proc.stdin.flush()
        line = self.proc.stdout.readline()
        path.unlink()
        if not line:
            raise SystemExit(f"record.py: the harness stopped on case {name}")
        out = json.loads(line)
        if "harness_error" in out:
            raise SystemExit(f"record.py: harness error on case {name}: {out['harness_error']}")
        out["bias"] = lb
        return out

    def close(self) -> None:
        self.proc.stdin.close()
        self.proc.wait()


def sources() -> list[tuple[str, str, list[float], list[int], int, list, bool]]:
    """(file stem, source label, logits, context, prompt_len, cases, store_logits)."""
    rows = []
    for p in sorted((REPO / "fixtures" / "edge").glob("*.safetensors")):
        meta, t = read_safetensors(p)
        ids = [int(i) for i in t["input_ids"]]
        # The edge files hold no prompt/generated split: the last half of
        # their ids counts as generated (frequency/presence in 0.9.2).
        rows.append((f"edge__{p.stem}", f"edge/{p.name}", t["logits"], ids, len(ids) - len(ids) // 2,
                     EDGE_CASES, False))
    for p in sorted((REPO / "fixtures" / "smollm2").glob("*.safetensors")):
        meta, t = read_safetensors(p)
        ids = [int(i) for i in t["input_ids"]]
        rows.append((f"smollm2__{p.stem}", f"smollm2/{p.name}", t["logits"], ids, int(meta["prompt_len"]),
                     MODEL_CASES, False))
    for name, logits, ids, prompt_len in synthetic():
        rows.append((f"synthetic__{name}", "synthetic", logits, ids, prompt_len, SYNTH_CASES, True))
    for name, logits, ids, prompt_len, cases in RULE_ROWS:
        rows.append((f"synthetic__{name}", "synthetic", [f32(x) for x in logits], ids, prompt_len, cases, True))
    return rows


def record_version(version: str, binary: str) -> dict[str, bytes]:
    v = VERSIONS[version]
    files = {}
    with tempfile.TemporaryDirectory() as tmp:
        h = Harness(binary, Path(tmp))
        for stem, label, logits, ids, prompt_len, cases, store_logits in sources():
            tensors: dict[str, tuple[str, list]] = {"context": ("I64", ids)}
            if store_logits:
                tensors["logits"] = ("F32", logits)
            metas = []
            for name, params in cases:
                out = h.run(name, logits, ids, prompt_len, params)
                m: dict = {"name": name, "params": {k: x for k, x in params.items()}}
                if out.get("bias") is not None:
                    m["params"]["logits_bias"] = out["bias"]
                if "new_error" in out:
                    m["new_error"] = out["new_error"]
                    metas.append(m)
                    continue
                w = out.get("weights_bits")
                if w is not None:
                    m["weights_len"] = len(w)
                    m["weights_fnv1a64"] = fnv1a64_bits(w)
                    nz = [i for i, b in enumerate(w) if (b & 0x7FFFFFFF) != 0]
                    m["nonzero"] = len(nz)
                    if len(nz) <= SPARSE_MAX:
                        keep = nz
                        m["complete"] = True
                    else:
                        vals = {i: struct.unpack("<f", struct.pack("<I", w[i]))[0] for i in nz}
                        keep = sorted(sorted(nz, key=lambda i: (-vals[i], i))[:TOP])
                        m["complete"] = False
                    total = math.fsum(struct.unpack("<f", struct.pack("<I", w[i]))[0] for i in nz)
                    if math.isfinite(total):
                        m["weights_sum"] = total
                    tensors[f"{name}.ids"] = ("I64", keep)
                    tensors[f"{name}.weights"] = ("U32", [w[i] for i in keep])
                if "sample_error" in out:
                    m["sample_error"] = out["sample_error"]
                    m["calls_before_error"] = out["calls"]
                else:
                    m["argmax"] = out["is_argmax"]
                    m["weighted_index_calls"] = sorted(set(out["weighted_index_calls"]))
                    tensors[f"{name}.draws"] = ("I64", out["tokens"])
                metas.append(m)
            meta = {
                "format": FORMAT,
                "source": label,
                "prompt_len": str(prompt_len),
                "mistralrs_version": version,
                "mistralrs_commit": v["commit"],
                "candle_commit": v["candle"],
                "draws_per_case": str(DRAWS),
                "cases": json.dumps(metas, sort_keys=True),
            }
            files[f"v{version}/{stem}.safetensors"] = write_safetensors(tensors, meta)
        for seq, steps in SEQUENCES.items():
            tensors = {}
            metas = []
            for i, (src, params, calls) in enumerate(steps):
                meta_src, t = read_safetensors(REPO / "fixtures" / src)
                ids = [int(x) for x in t["input_ids"]]
                prompt_len = int(meta_src["prompt_len"]) if "prompt_len" in meta_src else len(ids) - len(ids) // 2
                out = h.run(f"{seq}_{i}", t["logits"], ids, prompt_len, params, calls, continue_rng=i > 0)
                if "tokens" not in out:
                    raise SystemExit(f"record.py: sequence {seq} step {i} did not sample: {out}")
                metas.append({"step": i, "source": src, "prompt_len": prompt_len, "params": params,
                              "calls": calls, "argmax": out["is_argmax"]})
                tensors[f"{i}.draws"] = ("I64", out["tokens"])
            meta = {"format": FORMAT, "sequence": seq, "mistralrs_version": version,
                    "mistralrs_commit": v["commit"], "candle_commit": v["candle"],
                    "steps": json.dumps(metas, sort_keys=True)}
            files[f"v{version}/sequence__{seq}.safetensors"] = write_safetensors(tensors, meta)
        h.close()
    return files


def describe(data: bytes) -> list[str]:
    n = int.from_bytes(data[:8], "little")
    header = json.loads(data[8 : 8 + n])
    meta = header.pop("__metadata__", {})
    lines = [f"{k}: {x}" for k, x in sorted(meta.items()) if k not in ("cases", "steps")]
    lines += [json.dumps(c, sort_keys=True) for c in json.loads(meta.get("cases", meta.get("steps", "[]")))]
    base = 8 + n
    for k, x in sorted(header.items()):
        a, b = x["data_offsets"]
        lines.append(f"{k}: {x['dtype']} {data[base + a : base + b].hex()}")
    return lines


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--check", action="store_true", help="regenerate in memory and compare with the committed files")
    ap.add_argument("--harness-092", help="path of the v0.9.2 harness binary (else $MISTRALRS_HARNESS_092)")
    ap.add_argument("--harness-091", help="path of the v0.9.1 harness binary (else $MISTRALRS_HARNESS_091)")
    ap.add_argument("--only", choices=sorted(VERSIONS), help="record or check one version only")
    a = ap.parse_args()
    files: dict[str, bytes] = {}
    for version, v in VERSIONS.items():
        if a.only and version != a.only:
            continue
        flag = version.replace(".", "")
        binary = getattr(a, f"harness_{flag}") or os.environ.get(v["env"])
        if not binary or not Path(binary).is_file():
            print(f"record.py: no harness binary for mistral.rs {version}: set {v['env']} or "
                  f"--harness-{flag} (see fixtures/mistralrs/README.md)", file=sys.stderr)
            return 2
        files.update(record_version(version, binary))
    n_cases = sum(len(json.loads(json.loads(d[8 : 8 + int.from_bytes(d[:8], "little")])["__metadata__"].get("cases", "[]")))
                  for d in files.values())
    if a.check:
        bad = 0
        for rel, data in sorted(files.items()):
            p = OUT / rel
            old = p.read_bytes() if p.exists() else b""
            if old != data:
                bad += 1
                import difflib
                sys.stdout.writelines(difflib.unified_diff(
                    [x + "\n" for x in (describe(old) if old else [])], [x + "\n" for x in describe(data)],
                    f"committed {rel}", f"regenerated {rel}", n=0))
        if bad:
            print(f"record.py: DIFF in {bad} of {len(files)} files; regenerate with "
                  "python3 scripts/reference/mistralrs/record.py", file=sys.stderr)
            return 1
        print(f"record.py: {len(files)} files match ({n_cases} cases)")
        return 0
    for rel, data in files.items():
        p = OUT / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_bytes(data)
    print(f"record.py: wrote {len(files)} files under {OUT.relative_to(REPO)} ({n_cases} cases)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
