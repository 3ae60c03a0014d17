#!/usr/bin/env bash
# Create the Python reference environment used to regenerate fixtures.
#
# Makes scripts/reference/.venv (git-ignored) and installs the exact versions in
# scripts/reference/requirements.txt (transformers 5.23.0). `setup.sh 4.57.6`
# makes scripts/reference/.venv-tf4 from requirements-tf4.txt instead
# (transformers 4.57.6, for fixtures/genconfig/transformers-4.57.6.json), and
# `setup.sh 5.0.0` makes .venv-tf500 from requirements-tf500.txt (the first 5.x).
# Only people who regenerate fixtures need this: CI and the Rust tests read
# the committed fixtures and never run Python.
#
# torch comes from PyPI (the only index reachable here), so the Linux wheel pulls
# its CUDA runtime packages too: expect a few GB on disk. The reference script
# runs on CPU regardless.
#
# Usage: scripts/reference/setup.sh          (works from any cwd; idempotent)
#        scripts/reference/setup.sh 4.57.6   (the transformers 4.x venv)
#        scripts/reference/setup.sh 5.0.0    (the first 5.x)
#        PYTHON=python3.11 scripts/reference/setup.sh
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
case "${1:-5.23.0}" in
    5.23.0) venv="$here/.venv"; requirements="$here/requirements.txt" ;;
    4.57.6) venv="$here/.venv-tf4"; requirements="$here/requirements-tf4.txt" ;;
    5.0.0) venv="$here/.venv-tf500"; requirements="$here/requirements-tf500.txt" ;;
    *) echo "setup.sh: transformers ${1} is not one the recorders know (5.23.0, 4.57.6, 5.0.0)" >&2; exit 2 ;;
esac
python="${PYTHON:-python3}"

if [[ ! -x "$venv/bin/python" ]]; then
    echo "setup.sh: creating venv at $venv with $($python --version 2>&1)" >&2
    "$python" -m venv "$venv"
fi

echo "setup.sh: installing pinned requirements (torch is large, this takes a while)" >&2
"$venv/bin/python" -m pip install --quiet --upgrade pip
"$venv/bin/python" -m pip install --quiet -r "$requirements"

# Fail early if the environment cannot do what hf_reference.py needs.
"$venv/bin/python" - <<'PY'
import sys
import torch, transformers, accelerate, gguf, safetensors, numpy  # noqa: F401
print(f"setup.sh: ok: python {sys.version.split()[0]}, torch {torch.__version__}, "
      f"transformers {transformers.__version__}", file=sys.stderr)
PY
echo "setup.sh: done; run $venv/bin/python scripts/reference/hf_reference.py --help" >&2
