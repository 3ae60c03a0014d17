#!/usr/bin/env bash
# The `transformers serve` environment (scripts/servers/start.sh serve PORT),
# also the one scripts/servers/make-hf-model.py runs in.
#
# Makes $SERVERS_VENVS/srv-serve (default /work/venvs/srv-serve) with the
# pinned requirements: transformers 5.23.0 / torch 2.15.0 (the pins of
# scripts/reference/requirements.txt; torch pulls its CUDA runtime wheels, a
# few GB, and runs on CPU) plus transformers' `serving` extra.
#
# Usage: scripts/servers/serve/setup.sh    (any cwd; idempotent)
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/../common.sh"
setup_venv serve
"$(venv_of serve)/bin/python" - <<'PY'
import sys, torch, transformers, gguf  # noqa: F401
from transformers.cli.serve import Serve  # noqa: F401
print(f"setup.sh: ok: transformers {transformers.__version__}, torch {torch.__version__}",
      file=sys.stderr)
PY
