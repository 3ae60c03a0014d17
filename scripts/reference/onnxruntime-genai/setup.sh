#!/usr/bin/env bash
# Create the Python environment that records fixtures/onnxruntime-genai/ from the
# real ONNX Runtime GenAI 0.18.0 CPU wheel.
#
# Makes scripts/reference/onnxruntime-genai/.venv (git-ignored) and installs the
# pinned wheels from requirements.txt (binary wheels from PyPI; nothing is
# compiled). Only people who regenerate fixtures need this; CI and the Rust
# tests read the committed fixture and never run Python.
#
# Usage: scripts/reference/onnxruntime-genai/setup.sh     (any cwd; idempotent)
#        PYTHON=python3.11 scripts/reference/onnxruntime-genai/setup.sh
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
venv="$here/.venv"
python="${PYTHON:-python3}"

if [[ ! -x "$venv/bin/python" ]]; then
    echo "setup.sh: creating venv at $venv with $($python --version 2>&1)" >&2
    "$python" -m venv "$venv"
fi

"$venv/bin/python" -m pip install --quiet --upgrade pip
"$venv/bin/python" -m pip install --quiet -r "$here/requirements.txt"

# Fail early if the environment cannot do what record.py needs.
"$venv/bin/python" - <<'PY'
import sys
import onnxruntime_genai as og, onnxruntime, onnx, safetensors, numpy  # noqa: F401
assert og.__version__ == "0.18.0", og.__version__
assert og.__commit__ == "00d66ef04ec56c0dae66d93ae2690f72e7bb90eb", og.__commit__
og.Generator.set_logits  # the API record.py drives
print(f"setup.sh: ok: python {sys.version.split()[0]}, onnxruntime-genai {og.__version__} "
      f"({og.__commit__}), onnxruntime {onnxruntime.__version__}", file=sys.stderr)
PY
echo "setup.sh: done; run $venv/bin/python $here/record.py --check" >&2
