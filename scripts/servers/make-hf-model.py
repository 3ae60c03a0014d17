#!/usr/bin/env python3
"""Make the HF model folder the real servers serve, from the fetched SmolLM2 GGUF.

vLLM, mlx_lm.server and `transformers serve` need a Hugging Face model
directory; the only weights here are scripts/fetch-model.sh's GGUF
(SmolLM2-135M-Instruct Q4_1). transformers itself loads it
(`from_pretrained(dir, gguf_file=...)`, which dequantises every tensor to
float32) and writes it with `save_pretrained`, with the tokenizer it reads
from the same file. A model loaded from GGUF refuses `save_pretrained`, so its
weights are copied into a plain model of the same config first (as
scripts/reference/serve/record.py does).

Two fix-ups of config.json. `save_pretrained` keeps the
`quantization_config` ({"quant_method": "gguf", ...}) of the model it was
loaded as, although the saved weights are plain float32: the servers would
read it as a quantised checkpoint, so it is dropped. And, checked: transformers 5 writes the RoPE base inside
`rope_parameters` ({"rope_theta": 100000.0, "rope_type": "default"}) and not
at the top level of config.json, while mlx-lm 0.32.2 reads only the top-level
`rope_theta` and otherwise silently uses 10000 (`ModelArgs.rope_theta: float =
10000` in mlx_lm/models/llama.py). The script copies the GGUF's
`llama.rope.freq_base` to the top level and fails if config.json then
disagrees with the GGUF anywhere it names the RoPE base.

Output: <repo>/.cache/models/SmolLM2-135M-Instruct-hf/ (git-ignored), written
to a temporary folder and renamed, so a half-made folder is never served.
Idempotent: if the folder exists and its stamp (the GGUF's sha256 and this
script's version) matches, nothing is done. Prints the folder on stdout.

Usage (needs the transformers venv of scripts/servers/serve/setup.sh):
    /work/venvs/srv-serve/bin/python scripts/servers/make-hf-model.py [--force]
"""

import argparse
import hashlib
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

os.environ["HF_HUB_OFFLINE"] = "1"
os.environ["TRANSFORMERS_OFFLINE"] = "1"

REPO = Path(__file__).resolve().parents[2]
OUT = REPO / ".cache" / "models" / "SmolLM2-135M-Instruct-hf"
# Bump when the output would change (the stamp makes old folders be rebuilt).
VERSION = 2


def log(msg: str) -> None:
    print(f"make-hf-model: {msg}", file=sys.stderr)


def fetch_gguf() -> Path:
    out = subprocess.run(["bash", str(REPO / "scripts" / "fetch-model.sh")], check=True,
                         capture_output=True, text=True)
    return Path(out.stdout.strip())


def sha256(path: Path) -> str:
    h = hashlib.sha256()
    with path.open("rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def gguf_rope_base(path: Path) -> float:
    """`llama.rope.freq_base` from the GGUF's own metadata."""
    from gguf import GGUFReader

    reader = GGUFReader(str(path))
    field = reader.fields.get("llama.rope.freq_base")
    if field is None:
        sys.exit(f"make-hf-model: {path}: no `llama.rope.freq_base` in the GGUF metadata")
    return float(field.parts[field.data[0]][0])


def convert(gguf: Path, dest: Path) -> None:
    import torch
    import transformers
    from transformers import AutoModelForCausalLM, AutoTokenizer

    log(f"loading {gguf.name} with transformers {transformers.__version__} (dequantises to float32)")
    tok = AutoTokenizer.from_pretrained(gguf.parent, gguf_file=gguf.name)
    loaded = AutoModelForCausalLM.from_pretrained(gguf.parent, gguf_file=gguf.name, dtype=torch.float32)
    model = AutoModelForCausalLM.from_config(loaded.config, dtype=torch.float32)
    model.load_state_dict(loaded.state_dict())
    model.generation_config = loaded.generation_config
    model.save_pretrained(dest)
    tok.save_pretrained(dest)


def fix_config(dest: Path, base: float) -> None:
    path = dest / "config.json"
    config = json.loads(path.read_text())
    quant = config.pop("quantization_config", None)
    if quant is not None:
        if quant.get("quant_method") != "gguf":
            sys.exit(f"make-hf-model: {path}: unexpected quantization_config {quant}")
        log("config.json: dropped quantization_config (the saved weights are float32)")
    nested = (config.get("rope_parameters") or {}).get("rope_theta")
    if nested is not None and float(nested) != base:
        sys.exit(f"make-hf-model: {path}: rope_parameters.rope_theta = {nested}, "
                 f"but the GGUF's llama.rope.freq_base = {base}")
    top = config.get("rope_theta")
    if top is not None and float(top) != base:
        sys.exit(f"make-hf-model: {path}: rope_theta = {top}, but the GGUF's llama.rope.freq_base = {base}")
    if top is None:
        config["rope_theta"] = base
        log(f"config.json: added top-level rope_theta = {base} (mlx-lm reads only that one)")
    path.write_text(json.dumps(config, indent=2, sort_keys=True) + "\n")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--force", action="store_true", help="rebuild even if the stamp matches")
    args = ap.parse_args()

    gguf = fetch_gguf()
    stamp = {"gguf": gguf.name, "gguf_sha256": sha256(gguf), "script_version": VERSION}
    stamp_file = OUT / "make-hf-model.json"
    if not args.force and stamp_file.exists():
        try:
            old = json.loads(stamp_file.read_text())
        except json.JSONDecodeError:
            old = None
        if old is not None and {k: old.get(k) for k in stamp} == stamp:
            log(f"{OUT} is up to date")
            print(OUT)
            return
    tmp = OUT.with_name(OUT.name + ".part")
    shutil.rmtree(tmp, ignore_errors=True)
    convert(gguf, tmp)
    base = gguf_rope_base(gguf)
    fix_config(tmp, base)
    import torch
    import transformers

    stamp["rope_theta"] = base
    stamp["made_by"] = f"transformers {transformers.__version__}, torch {torch.__version__}"
    stamp["files"] = {f.name: sha256(f) for f in sorted(tmp.iterdir()) if f.is_file()}
    (tmp / "make-hf-model.json").write_text(json.dumps(stamp, indent=2) + "\n")
    shutil.rmtree(OUT, ignore_errors=True)
    tmp.rename(OUT)
    log(f"wrote {OUT}")
    print(OUT)


if __name__ == "__main__":
    main()
