#!/usr/bin/env bash
# The mlx_lm.server environment (scripts/servers/start.sh mlx PORT).
#
# Makes $SERVERS_VENVS/srv-mlx (default /work/venvs/srv-mlx) with the pinned
# requirements (those scripts/reference/mlx records with): mlx 0.32.4 with its
# Linux CPU backend (mlx-cpu), mlx-lm 0.32.2 and what mlx_lm.server imports
# (no torch). A few hundred MB.
#
# Usage: scripts/servers/mlx/setup.sh     (any cwd; idempotent)
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/../common.sh"
setup_venv mlx
"$(venv_of mlx)/bin/python" - <<'PY'
import sys
import mlx.core as mx
import mlx_lm
import mlx_lm.server  # noqa: F401
print(f"setup.sh: ok: mlx {mx.__version__}, mlx-lm {mlx_lm.__version__}, device {mx.default_device()}",
      file=sys.stderr)
PY
