#!/usr/bin/env bash
# Create the Python environment that records fixtures/llama-cpp-python/ from
# llama-cpp-python 0.3.36's own Python sampling layer (llama_cpp/llama.py,
# llama_cpp/_internals.py) and its OpenAI-compatible server's request models
# (llama_cpp/server/).
#
# Makes scripts/reference/llama-cpp-python/.venv (git-ignored by the
# /scripts/reference/*/.venv rule) and installs llama-cpp-python from its
# source distribution, which vendors llama.cpp 0c1e57098 and compiles it: CPU
# only, no native tuning (this machine reports AMX/AVX-512 that traps, so
# GGML_NATIVE=OFF with AVX2/FMA/F16C named and AVX-512 off), no libcurl,
# under `nice -n 10` with two build jobs. Takes about 15 minutes on two cores.
# Only people who regenerate the fixture need this; CI and the Rust tests read
# the committed fixture and never run Python or C.
#
# Usage: scripts/reference/llama-cpp-python/setup.sh     (any cwd; idempotent)
#        PYTHON=python3.11 scripts/reference/llama-cpp-python/setup.sh
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
CMAKE_ARGS="-DGGML_NATIVE=OFF -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON -DGGML_AVX512=OFF -DLLAMA_CURL=OFF -DGGML_CUDA=OFF -DGGML_METAL=OFF -DGGML_VULKAN=OFF" \
CMAKE_BUILD_PARALLEL_LEVEL="${CMAKE_BUILD_PARALLEL_LEVEL:-2}" \
    nice -n 10 "$venv/bin/python" -m pip install --no-binary llama-cpp-python -r "$here/requirements.txt"

# Fail early if the environment cannot do what record.py needs.
"$venv/bin/python" - <<'PY'
import sys
import llama_cpp, safetensors, numpy  # noqa: F401
from llama_cpp.llama import Llama  # noqa: F401
from llama_cpp.server.app import create_app  # noqa: F401  (the [server] extra)
from llama_cpp.server.types import CreateCompletionRequest  # noqa: F401
assert llama_cpp.__version__ == "0.3.36", llama_cpp.__version__
print(f"setup.sh: ok: python {sys.version.split()[0]}, llama-cpp-python {llama_cpp.__version__}",
      file=sys.stderr)
PY
echo "setup.sh: done; run $venv/bin/python $here/record.py --check" >&2
