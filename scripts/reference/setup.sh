#!/usr/bin/env bash
# Create the Python reference environment used to regenerate fixtures.
#
# Makes scripts/reference/.venv (git-ignored) and installs the exact versions in
# scripts/reference/requirements.txt. Only people who regenerate fixtures need
# this: CI and the Rust tests read the committed fixtures and never run Python.
#
# torch comes from PyPI (the only index reachable here), so the Linux wheel pulls
# its CUDA runtime packages too: expect a few GB on disk. The reference script
# runs on CPU regardless.
#
# Usage: scripts/reference/setup.sh          (works from any cwd; idempotent)
#        PYTHON=python3.11 scripts/reference/setup.sh
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
venv="$here/.venv"
python="${PYTHON:-python3}"

if [[ ! -x "$venv/bin/python" ]]; then
    echo "setup.sh: creating venv at $venv with $($python --version 2>&1)" >&2
    "$python" -m venv "$venv"
fi

echo "setup.sh: installing pinned requirements (torch is large, this takes a while)" >&2
"$venv/bin/python" -m pip install --quiet --upgrade pip
"$venv/bin/python" -m pip install --quiet -r "$here/requirements.txt"

# Fail early if the environment cannot do what hf_reference.py needs.
"$venv/bin/python" - <<'PY'
import sys
import torch, transformers, accelerate, gguf, safetensors, numpy  # noqa: F401
print(f"setup.sh: ok: python {sys.version.split()[0]}, torch {torch.__version__}, "
      f"transformers {transformers.__version__}", file=sys.stderr)
PY
echo "setup.sh: done; run scripts/reference/.venv/bin/python scripts/reference/hf_reference.py --help" >&2
