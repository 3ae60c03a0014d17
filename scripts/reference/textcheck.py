"""Write a reference file made of text, or with --check compare it with the committed one.

The JSON-lines recorders (beam_reference.py, beam_smollm2_reference.py,
speculative_reference.py) render their whole output as one string, then
either write it or check it byte for byte, printing a unified diff when it
differs. Standard library only, so importing it changes nothing about how
torch or transformers run.
"""

from __future__ import annotations

import difflib
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def write_or_check(out: Path, text: str, check: bool, script: str, summary: str = "", on_diff: str = "") -> int:
    """Writes `text` to `out`, or with `check` compares it; returns the exit status.

    `summary` is appended to the success lines (e.g. " (288 configurations)");
    `on_diff` replaces the default advice printed when the check fails.
    """
    rel = out.relative_to(ROOT)
    if check:
        old = out.read_text() if out.exists() else ""
        if old == text:
            print(f"{script}: {rel} matches{summary}")
            return 0
        sys.stdout.writelines(difflib.unified_diff(old.splitlines(True), text.splitlines(True), "committed", "regenerated"))
        print(f"{script}: DIFF{on_diff or f'; regenerate with scripts/reference/{script}'}", file=sys.stderr)
        return 1
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(text)
    print(f"{script}: wrote {rel}{summary}")
    return 0
