# Shared by scripts/servers/*.sh (sourced, not run).
#
# Where each server's venv lives: $SERVERS_VENVS/srv-<name> (default
# /work/venvs, outside the worktree so several worktrees share one install;
# each venv is made by scripts/servers/<name>/setup.sh from its pinned
# requirements.txt). The served model is the HF folder
# scripts/servers/make-hf-model.py makes under .cache/models/.
servers_dir="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(cd "$servers_dir/../.." && pwd)"
SERVERS_VENVS="${SERVERS_VENVS:-/work/venvs}"
SERVERS_NAMES="vllm vllm-processed mlx serve"
model_dir="$repo/.cache/models/SmolLM2-135M-Instruct-hf"
run_dir="$repo/.cache/servers"

venv_of() { echo "$SERVERS_VENVS/srv-${1%-processed}"; }

known_name() {
    case "$1" in
        vllm|vllm-processed|mlx|serve) return 0 ;;
        *) echo "$(basename "$0"): unknown server ${1@Q}: expected one of: $SERVERS_NAMES" >&2; return 2 ;;
    esac
}

# Makes $SERVERS_VENVS/srv-<name> (if missing) and installs <name>/requirements.txt.
setup_venv() {
    local name="$1" python="${PYTHON:-python3}" venv
    venv="$(venv_of "$name")"
    if [[ ! -x "$venv/bin/python" ]]; then
        echo "setup.sh: creating venv at $venv with $($python --version 2>&1)" >&2
        mkdir -p "$SERVERS_VENVS"
        "$python" -m venv "$venv"
    fi
    "$venv/bin/python" -m pip install --quiet --upgrade pip
    echo "setup.sh: installing $servers_dir/$name/requirements.txt (this takes a while)" >&2
    "$venv/bin/python" -m pip install --quiet -r "$servers_dir/$name/requirements.txt"
}
