#!/usr/bin/env bash
# Create the Python environment that records fixtures/mlx/ from the real
# mlx-lm sampler (scripts/reference/mlx/record.py).
#
# Makes scripts/reference/mlx/.venv (git-ignored) and installs the pinned
# requirements: mlx 0.32.4 with its Linux CPU backend (mlx-cpu), mlx-lm
# 0.32.2 and what mlx_lm.server imports (transformers, huggingface_hub, ...;
# no torch). A few hundred MB, a minute or two. Only people who re-record
# fixtures/mlx need this: CI and the Rust tests read the committed file.
#
# MLX compiles the `mx.compile`d sampler functions with the system g++ at
# run time (mlx/backend/cpu/jit_compiler.cpp); without g++ it runs them
# unfused, which computes the same float32 operations.
#
# Usage: scripts/reference/mlx/setup.sh     (any cwd; idempotent)
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

# Fail early if the sampler or the server cannot be loaded.
"$venv/bin/python" - <<'PY'
import sys
import mlx.core as mx
import mlx_lm
import mlx_lm.server  # noqa: F401
from mlx_lm.sample_utils import make_sampler  # noqa: F401
mx.random.seed(5)
assert abs(mx.random.uniform().item() - 0.856399655342102) < 1e-12, "unexpected MLX random stream"
print(f"setup.sh: ok: mlx {mx.__version__}, mlx-lm {mlx_lm.__version__}, device {mx.default_device()}",
      file=sys.stderr)
PY
echo "setup.sh: done; run $venv/bin/python $here/record.py --check" >&2
