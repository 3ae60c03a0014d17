"""Benchmark (not a test): sampling_parity.check over N records of a
V-token vocabulary from NumPy, beside the JSON-lines path a user had before
the package (records as JSON text through `compare diff`, which computes
hf-rust's distribution for each and compares it with transformers' own as
hf-rust computes it: one pair, the least `diff` does per record).

    python python/bench/check_bench.py [--records 1000] [--vocab 151936] [--json-records N] [--compare PATH]

Logits: seeded standard normals x 3 (float32); params: transformers kwargs
temperature 0.7, top-p 0.9 (the most common sampled setting); your
probabilities: a NumPy top-p sampler (not timed). Prints one JSON object.
"""

import argparse
import json
import os
import platform
import subprocess
import tempfile
import time

import numpy as np

import sampling_parity as sp

KWARGS = {"do_sample": True, "temperature": 0.7, "top_k": 0, "top_p": 0.9}


def my_top_p(row):
    z = row.astype(np.float64) / 0.7
    p = np.exp(z - z.max())
    p /= p.sum()
    order = np.argsort(-p, kind="stable")
    k = int(np.searchsorted(np.cumsum(p[order]), 0.9)) + 1
    out = np.zeros_like(p)
    out[order[:k]] = p[order[:k]]
    return out / out.sum()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--records", type=int, default=1000)
    ap.add_argument("--vocab", type=int, default=151_936)
    ap.add_argument("--json-records", type=int, default=None, help="records through the JSON path (default: all)")
    ap.add_argument("--compare", default=os.environ.get("COMPARE", "target/release/compare"))
    args = ap.parse_args()
    rng = np.random.default_rng(0)
    logits = (rng.standard_normal((args.records, args.vocab), dtype=np.float32) * 3).astype(np.float32)
    probs = np.stack([my_top_p(r) for r in logits])

    start = time.perf_counter()
    results = sp.check(probs, logits, KWARGS)
    check_s = time.perf_counter() - start
    same = sum(r.same for r in results)

    n_json = args.json_records or args.records
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "records.jsonl")
        start = time.perf_counter()
        with open(path, "w") as f:
            for row in logits[:n_json]:
                f.write(json.dumps({"logits": row.tolist(), "params": KWARGS}) + "\n")
        encode_s = time.perf_counter() - start
        size = os.path.getsize(path)
        start = time.perf_counter()
        with open(path) as f:
            out = subprocess.run(
                [args.compare, "diff", "--pairs", "hf:hf-rust", "--format", "json"],
                stdin=f, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
            )
        diff_s = time.perf_counter() - start
        assert out.returncode == 0, out.stderr
    json_s = (encode_s + diff_s) * args.records / n_json
    print(json.dumps({
        "records": args.records,
        "vocab": args.vocab,
        "check_s": round(check_s, 3),
        "check_same": same,
        "json_records_timed": n_json,
        "json_bytes_per_record": size // n_json,
        "json_encode_s": round(encode_s, 3),
        "compare_diff_s": round(diff_s, 3),
        "json_path_s_for_all_records": round(json_s, 1),
        "speedup": round(json_s / check_s, 1),
        "cores": os.cpu_count(),
        "machine": platform.processor() or platform.machine(),
        "loadavg_after": os.getloadavg(),
    }, indent=1))


if __name__ == "__main__":
    main()
