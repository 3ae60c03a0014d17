"""Cross-check data for hf-sampling: random logits x random kwargs through real transformers generate (stub model from scripts/reference/hf_reference.py).

Usage: scripts/reference/.venv/bin/python crates/hf-sampling/scripts/crosscheck.py OUT.jsonl SEED N_CASES [MAX_V]

The committed crosscheck.jsonl beside this script, which `cargo test -p hf-sampling` always checks, was made with
    crosscheck.py crates/hf-sampling/scripts/crosscheck.jsonl 7 40 300
(small vocabularies keep it near a megabyte). For a larger run (V up to 49,152) write another file and point
HF_SAMPLING_CROSSCHECK=OUT.jsonl at it.
"""
import sys, json, random, warnings
sys.path.insert(0, str(__import__("pathlib").Path(__file__).resolve().parents[3] / "scripts" / "reference"))
import numpy as np, torch
import hf_reference as H
warnings.simplefilter("ignore")
import transformers; transformers.utils.logging.set_verbosity_error()
rng = np.random.default_rng(int(sys.argv[2]) if len(sys.argv) > 2 else 0)
random.seed(int(sys.argv[2]) if len(sys.argv) > 2 else 0)
out = open(sys.argv[1], "w")
def rand_setting():
    kw = {"do_sample": random.random() < 0.85}
    if random.random() < 0.7: kw["temperature"] = random.choice([0.3, 0.5, 0.7, 0.9, 1.0, 1.3, 2.0, 1, 0.0, -0.5, 3])
    if random.random() < 0.7: kw["top_k"] = random.choice([0, 1, 2, 5, 20, 40, 50, 100, 1000, 100000, None, -2, 3.0])
    if random.random() < 0.5: kw["top_p"] = random.choice([0.0, 0.1, 0.5, 0.8, 0.9, 0.95, 0.99, 1.0, 1.2, None, -0.2])
    if random.random() < 0.3: kw["min_p"] = random.choice([0.0, 0.01, 0.05, 0.1, 0.5, 1.0, None, 1.2])
    if random.random() < 0.2: kw["typical_p"] = random.choice([0.2, 0.5, 0.9, 0.99, 1.0, 0.0, None])
    if random.random() < 0.2: kw["epsilon_cutoff"] = random.choice([1e-4, 3e-4, 1e-3, 0.05, 0.0, 1.0])
    if random.random() < 0.2: kw["eta_cutoff"] = random.choice([1e-4, 2e-3, 0.01, 0.2, 0.0, -1.0])
    if random.random() < 0.3: kw["repetition_penalty"] = random.choice([0.5, 0.8, 1.0, 1.1, 1.3, 2.0, 2, 0.0])
    return kw
for case in range(int(sys.argv[3]) if len(sys.argv) > 3 else 60):
    max_v = int(sys.argv[4]) if len(sys.argv) > 4 else 49152
    V = int(random.choice([v for v in [3, 10, 17, 100, 300, 1000, 5000, 49152, 49152] if v <= max_v]))
    kind = random.choice(["normal", "bf16", "int", "wide"])
    x = rng.normal(size=V).astype(np.float32) * random.choice([1, 3, 8])
    if kind == "bf16": x = torch.tensor(x).to(torch.bfloat16).float().numpy()
    if kind == "int": x = rng.integers(-3, 4, size=V).astype(np.float32)
    if kind == "wide": x = (rng.normal(size=V) * 20).astype(np.float32)
    if random.random() < 0.2: x[rng.integers(0, V, size=V // 3)] = -np.inf
    ids = rng.integers(0, V + 2, size=random.choice([1, 5, 30])).tolist()
    model = H.edge_model(x)
    for _ in range(8):
        kw = rand_setting()
        rec = {"logits": [float(v) if np.isfinite(v) else "-inf" for v in x], "input_ids": ids, "kwargs": kw}
        try:
            _, scores = H.generate_once(model, torch.tensor([ids]), kw)
            rec["scores"] = [float(v) if np.isfinite(v) else ("-inf" if v < 0 else "inf") for v in scores.numpy()]
        except Exception as e:
            rec["error"] = f"{type(e).__name__}: {e}"
        out.write(json.dumps(rec) + "\n")
