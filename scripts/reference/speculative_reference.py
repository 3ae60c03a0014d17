#!/usr/bin/env python3
"""Record what transformers' own `_speculative_sampling` emits first.

For a few target/draft pairs `p`, `q` over a small vocabulary and a way of
choosing the candidate token (drawn from q, q's argmax, or a fixed token),
this script calls the real `transformers.generation.utils._speculative_sampling`
of the pinned transformers many times under a fixed torch seed and counts the
first token of `valid_tokens` (or a `RuntimeError`, which transformers raises
when a rejection meets an empty residual). The Rust crate `tutorial-sampling`
checks its closed-form first-token distribution against these counts with a
chi-square test.

One verification step with K = 1 candidate: `candidate_logits = log(q)` (so
`softmax` gives back q, zeros as `-inf`), `new_logits = log(p)` for the
candidate position and for the bonus position. The SmolLM2 cases use the
scores transformers recorded in a fixture instead: `new_logits` the target
setting's scores, `candidate_logits` the draft setting's.

Counts are stored sparsely: token id (as a string) to count, and `raised`.

Output: fixtures/speculative/transformers_counts.jsonl (a header line, then one
line per case).

Usage (from the repository root, with the environment of setup.sh):
    scripts/reference/.venv/bin/python scripts/reference/speculative_reference.py
    scripts/reference/.venv/bin/python scripts/reference/speculative_reference.py --check
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

os.environ["HF_HUB_OFFLINE"] = "1"
os.environ["TRANSFORMERS_OFFLINE"] = "1"

import torch  # noqa: E402
import transformers  # noqa: E402
from safetensors import safe_open  # noqa: E402
from transformers.generation.utils import _speculative_sampling  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
from textcheck import write_or_check  # noqa: E402

OUT = ROOT / "fixtures" / "speculative" / "transformers_counts.jsonl"
FORMAT = "sampling-parity-speculative/1"
DRAWS = 20000

P = [0.30, 0.25, 0.20, 0.15, 0.0, 0.10]
Q = [0.10, 0.35, 0.20, 0.05, 0.30, 0.0]
SAME = [0.5, 0.5, 0.0]

SMOLLM2 = {"fixture": "smollm2/write_k60.safetensors", "target": "t07", "draft": "k40p09"}

CASES = [
    # name, target, draft, proposal ("draft", "greedy" or a token id)
    ("draft", P, Q, "draft"),
    ("greedy", P, Q, "greedy"),
    ("token_p0", P, Q, 4),  # q > 0, p = 0: always rejected
    ("token_q0", P, Q, 5),  # q = 0, p > 0: p/0 = inf, always accepted
    ("token_both0", SAME, SAME, 2),  # 0/0: rejected, residual empty: raises
    # Recorded transformers distributions of SmolLM2 (V = 49,152).
    ("smollm2_draft", SMOLLM2, None, "draft"),
    ("smollm2_greedy", SMOLLM2, None, "greedy"),
]


def log(probs: list[float]) -> torch.Tensor:
    return torch.tensor(probs, dtype=torch.float32).log()


def fixture_scores(spec: dict) -> tuple[torch.Tensor, torch.Tensor]:
    with safe_open(str(ROOT / "fixtures" / spec["fixture"]), framework="pt") as f:
        return f.get_tensor("scores." + spec["target"]), f.get_tensor("scores." + spec["draft"])


def run_case(name: str, p, q, proposal) -> dict:
    torch.manual_seed(1234)
    if isinstance(p, dict):
        target_scores, draft_scores = fixture_scores(p)
        record = {"name": name, "fixture": p, "proposal": proposal}
    else:
        target_scores, draft_scores = log(p), log(q)
        record = {"name": name, "target": p, "draft": q, "proposal": proposal}
    v = target_scores.numel()
    counts: dict[int, int] = {}
    raised = 0
    candidate_logits = draft_scores.view(1, 1, v)
    new_logits = torch.stack([target_scores, target_scores]).view(1, 2, v)
    q_t = candidate_logits.softmax(dim=-1).view(v)
    for _ in range(DRAWS):
        if proposal == "draft":
            x = int(torch.multinomial(q_t, 1))
        elif proposal == "greedy":
            x = int(torch.argmax(q_t))
        else:
            x = int(proposal)
        candidate_input_ids = torch.tensor([[0, x]], dtype=torch.int64)
        try:
            valid_tokens, _ = _speculative_sampling(candidate_input_ids, candidate_logits, 1, new_logits)
            t = int(valid_tokens[0, 0])
            counts[t] = counts.get(t, 0) + 1
        except RuntimeError:
            raised += 1
    sparse = {str(t): counts[t] for t in sorted(counts)}
    return {**record, "draws": DRAWS, "counts": sparse, "raised": raised}


def render() -> str:
    header = {
        "format": FORMAT,
        "torch_version": torch.__version__,
        "transformers_version": transformers.__version__,
        "generator": "scripts/reference/speculative_reference.py",
    }
    lines = [json.dumps(header)] + [json.dumps(run_case(*c)) for c in CASES]
    return "\n".join(lines) + "\n"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--check", action="store_true", help="regenerate and compare with the committed file")
    args = parser.parse_args()
    torch.set_num_threads(1)
    text = render()
    return write_or_check(OUT, text, args.check, "speculative_reference.py")


if __name__ == "__main__":
    sys.exit(main())
