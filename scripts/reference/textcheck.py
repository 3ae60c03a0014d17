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


def describe_file(name: str, data: bytes) -> list[str]:
    """A readable dump of one output file, for --check diffs: JSON as its
    lines; safetensors as its metadata sorted (the `cases` list one case a
    line) and every tensor's values as exact bit patterns. Compares contents,
    not bytes: safetensors may write the metadata keys in any order."""
    if name.endswith(".json"):
        return data.decode().splitlines()
    import json

    import numpy as np  # the recorders' environments have both
    from safetensors.numpy import load

    n = int.from_bytes(data[:8], "little")
    header = json.loads(data[8 : 8 + n])
    meta = header.pop("__metadata__", {})
    lines = [f"{k}: {v}" for k, v in sorted(meta.items()) if k != "cases"]
    for c in json.loads(meta.get("cases", "[]")):
        lines.append(json.dumps(c, sort_keys=True))
    for k, v in sorted(load(data).items()):
        bits = v.view(np.uint32 if v.dtype == np.float32 else np.uint64) if v.dtype.kind == "f" else v
        lines.append(f"{k}: {v.dtype} {bits.tolist()}")
    return lines


def check_files(out: Path, files: dict[str, bytes], existing: set[str], script: str, regenerate: str) -> int:
    """--check for a recorder that writes several files into `out`: every
    regenerated file must describe (`describe_file`) like the committed one,
    and no file of `existing` (the committed names the recorder owns) may be
    left unregenerated. Prints a diff per differing file; returns the exit
    status."""
    rel = out.relative_to(ROOT)
    bad = 0
    for name in sorted(existing - files.keys()):
        print(f"{script} --check: stale file {rel}/{name}", file=sys.stderr)
        bad += 1
    for name, data in sorted(files.items()):
        path = out / name
        old_lines = describe_file(name, path.read_bytes()) if path.exists() else []
        new_lines = describe_file(name, data)
        if old_lines == new_lines:
            continue
        bad += 1
        diff = difflib.unified_diff(old_lines, new_lines, f"committed/{name}", f"regenerated/{name}", lineterm="", n=0)
        print("\n".join(list(diff)[:60]))
    if bad:
        print(f"{script} --check: {bad} file(s) differ; regenerate with {regenerate}", file=sys.stderr)
        return 1
    print(f"{script} --check: {len(files)} files identical", file=sys.stderr)
    return 0
