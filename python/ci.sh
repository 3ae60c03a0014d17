#!/usr/bin/env bash
# The Python package's CI: a fresh venv, the wheel built by `pip install
# ./python` (maturin, the workspace's target/ and release profile, so the
# crates `cargo test --release` compiled are reused), then pytest on
# python/tests. pytest's exit status 5 (no test collected) fails the run.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)
target="${CARGO_TARGET_DIR:-$root/target}"
python="${PYTHON:-python3}"
if ! command -v "$python" >/dev/null 2>&1; then
    echo "python/ci.sh: $python is not installed" >&2
    exit 2
fi
venv="$target/python-ci/venv"
rm -rf "$venv"
"$python" -m venv "$venv"
"$venv/bin/python" -m pip install -q --disable-pip-version-check -r python/requirements-ci.txt

# The build's own log says which crates it compiled: a workspace crate in it
# means the wheel did not reuse the release build (only pyo3's crates and the
# extension itself should appear once `cargo test --release` has run).
log="$target/python-ci/build.log"
echo "== pip install ./python (maturin, release profile, $target)" >&2
PATH="$venv/bin:$PATH" CARGO_TARGET_DIR="$target" "$venv/bin/python" -m pip install -v --no-build-isolation \
    --disable-pip-version-check ./python >"$log" 2>&1 || {
    tail -50 "$log" >&2
    exit 1
}
compiled=$(grep -oE 'Compiling [a-z0-9_-]+ v[0-9.]+' "$log" | awk '{print $2}' | sort -u | tr '\n' ' ' || true)
echo "wheel build compiled: ${compiled:-nothing (all reused)}" >&2

# The tests compare against `compare report`'s verdicts: the release binary.
compare="$target/release/compare"
if [ ! -x "$compare" ]; then
    cargo build --release --locked -q -p compare
fi
cd python/tests
set +e
COMPARE="$compare" SAMPLING_PARITY_FIXTURES="$root/fixtures" "$venv/bin/python" -m pytest -q -rs "$@"
status=$?
set -e
if [ "$status" -eq 5 ]; then
    echo "python/ci.sh: pytest collected no test" >&2
    exit 1
fi
exit "$status"
