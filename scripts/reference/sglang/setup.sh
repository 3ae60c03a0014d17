#!/usr/bin/env bash
# Create the SGLang reference environment used by record.py.
#
# Makes scripts/reference/sglang/.venv (git-ignored): installs the pinned
# requirements (torch 2.14.1 from the package registry, several GB with its
# CUDA runtime wheels; it runs on CPU) and then sglang 0.5.23 with --no-deps,
# because its own dependency list needs CUDA-only kernels (sglang-kernel,
# flashinfer-python, ...). Only people who re-record fixtures/sglang need
# this: CI and the Rust tests read the committed fixtures.
#
# Usage: scripts/reference/sglang/setup.sh     (any cwd; idempotent)
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
"$venv/bin/python" -m pip install --quiet --no-deps sglang==0.5.23

# Fail early if SGLang's sampler cannot be loaded on CPU.
TRITON_INTERPRET=1 TORCH_COMPILE_DISABLE=1 "$venv/bin/python" - <<'PY'
import sys, warnings
warnings.filterwarnings("ignore")
import torch, sglang
from sglang.srt.layers.sampler import Sampler, top_k_top_p_min_p_sampling_from_probs_torch  # noqa: F401
from sglang.srt.sampling.penaltylib import BatchedRepetitionPenalizer  # noqa: F401
from sglang.srt.entrypoints.openai.protocol import ChatCompletionRequest  # noqa: F401
from sglang.kernels.ops.sampling.murmur_hash import murmur_hash32_kernel  # noqa: F401
print(f"setup.sh: ok: sglang {sglang.__version__}, torch {torch.__version__}, "
      f"CPU {torch.backends.cpu.get_cpu_capability()}", file=sys.stderr)
PY
echo "setup.sh: done; run scripts/reference/sglang/.venv/bin/python scripts/reference/sglang/record.py --check" >&2
