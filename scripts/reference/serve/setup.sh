#!/usr/bin/env bash
# Create the `transformers serve` reference environment used by record.py.
#
# Makes scripts/reference/serve/.venv (git-ignored) with the pinned
# requirements: transformers 5.23.0 and torch 2.15.0 (the same pins as
# scripts/reference/requirements.txt; torch pulls its CUDA runtime wheels, a few
# GB, and runs on CPU) plus transformers' `serving` extra. Only people who
# re-record fixtures/serve need this: CI and the Rust tests read the committed
# fixtures.
#
# Usage: scripts/reference/serve/setup.sh    (any cwd; idempotent)
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
venv="$here/.venv"
python="${PYTHON:-python3}"

if [[ ! -x "$venv/bin/python" ]]; then
    echo "setup.sh: creating venv at $venv with $($python --version 2>&1)" >&2
    "$python" -m venv "$venv"
fi
"$venv/bin/python" -m pip install --quiet --upgrade pip
echo "setup.sh: installing pinned requirements (torch is large, this takes a while)" >&2
"$venv/bin/python" -m pip install --quiet -r "$here/requirements.txt"

# Fail early if transformers serve's request handling cannot be imported.
"$venv/bin/python" - <<'PY'
import sys, torch, transformers
from transformers.cli.serving.server import build_server  # noqa: F401
print(f"setup.sh: ok: transformers {transformers.__version__}, torch {torch.__version__}",
      file=sys.stderr)
PY
echo "setup.sh: done; run scripts/reference/serve/.venv/bin/python scripts/reference/serve/record.py --check" >&2
