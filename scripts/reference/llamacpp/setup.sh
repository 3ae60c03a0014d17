#!/usr/bin/env bash
# Create the Python environment that records fixtures/llamacpp/ from the real
# llama.cpp sampler chain.
#
# Makes scripts/reference/llamacpp/.venv (git-ignored) and installs
# llama-cpp-python from its source distribution, which vendors llama.cpp and
# compiles it: CPU only, no native tuning (so results do not depend on the
# build machine's instruction set), no libcurl. Takes about 15 minutes on two
# cores. Only people who regenerate fixtures need this; CI and the Rust tests
# read the committed fixtures and never run Python or C.
#
# Usage: scripts/reference/llamacpp/setup.sh     (any cwd; idempotent)
#        PYTHON=python3.11 scripts/reference/llamacpp/setup.sh
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
venv="$here/.venv"
python="${PYTHON:-python3}"

if [[ ! -x "$venv/bin/python" ]]; then
    echo "setup.sh: creating venv at $venv with $($python --version 2>&1)" >&2
    "$python" -m venv "$venv"
fi

"$venv/bin/python" -m pip install --quiet --upgrade pip
echo "setup.sh: building llama-cpp-python from source (CPU only; ~15 min on 2 cores)" >&2
CMAKE_ARGS="-DGGML_NATIVE=OFF -DLLAMA_CURL=OFF -DGGML_CUDA=OFF -DGGML_METAL=OFF -DGGML_VULKAN=OFF" \
CMAKE_BUILD_PARALLEL_LEVEL="${CMAKE_BUILD_PARALLEL_LEVEL:-2}" \
    "$venv/bin/python" -m pip install --no-binary llama-cpp-python -r "$here/requirements.txt"

# Fail early if the environment cannot do what record.py needs.
"$venv/bin/python" - <<'PY'
import sys
import llama_cpp, safetensors, numpy  # noqa: F401
llama_cpp.llama_sampler_init_dist  # the low-level sampler API record.py drives
print(f"setup.sh: ok: python {sys.version.split()[0]}, llama-cpp-python {llama_cpp.__version__}",
      file=sys.stderr)
PY
echo "setup.sh: done; run $venv/bin/python $here/record.py --check" >&2
