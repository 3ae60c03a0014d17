#!/usr/bin/env bash
# Build the real `llama-server` pinned to the llama.cpp that the `llama.cpp`
# semantics reproduces, and cache it outside target/.
#
# llama.cpp commit 0c1e57098 is the one vendored by the PyPI sdist
# llama-cpp-python==0.3.36 (vendor/llama.cpp, server included), and PyPI is the
# only route to source we have. We download that sdist with pip (no deps, no
# binaries), unpack it, and build ONLY the `llama-server` target with cmake:
# CPU only, no native tuning, AVX2/FMA/F16C on, AVX-512 and AMX off (the build
# machine reports AVX-512/AMX that trap with "illegal instruction"), no libcurl.
#
# Output: <repo>/.cache/llama-server/0.3.36/llama-server (.cache is git-ignored).
# Idempotent: skips everything when that binary is already there, or copies
# the one a previous run cached machine-wide (~/.cache/sampling-parity/). Prints the
# binary path on stdout and the build time on stderr. If the machine has no
# cmake, the PyPI package `cmake` is installed into a private venv under
# .cache/llama-server/ (nothing else is installed).
#
# Usage: scripts/build-llama-server.sh          (any cwd)
#        JOBS=4 scripts/build-llama-server.sh   (default JOBS=2; runs under nice)
set -euo pipefail

VERSION="0.3.36"
PACKAGE="llama-cpp-python==$VERSION"

repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cache="$repo/.cache/llama-server"
dest_dir="$cache/$VERSION"
dest="$dest_dir/llama-server"
python="${PYTHON:-python3}"
jobs="${JOBS:-2}"

# A machine-wide copy outlives a checkout (CI runs in a fresh clone on the
# machine that built it): reuse it, keyed by the same version.
machine="${XDG_CACHE_HOME:-$HOME/.cache}/sampling-parity/llama-server/$VERSION/llama-server"

if [[ -x "$dest" ]]; then
    echo "build-llama-server.sh: $dest already built" >&2
    echo "$dest"
    exit 0
fi
if [[ -x "$machine" ]]; then
    mkdir -p "$dest_dir"
    cp "$machine" "$dest.part"
    mv "$dest.part" "$dest"
    echo "build-llama-server.sh: copied the build cached in $machine" >&2
    echo "$dest"
    exit 0
fi

mkdir -p "$dest_dir"
start=$(date +%s)

# cmake: the system one, else the PyPI `cmake` package in a private venv.
cmake_bin="$(command -v cmake || true)"
if [[ -z "$cmake_bin" ]]; then
    tools="$cache/tools-venv"
    if [[ ! -x "$tools/bin/cmake" ]]; then
        echo "build-llama-server.sh: no cmake on PATH; pip install cmake into $tools" >&2
        "$python" -m venv "$tools"
        "$tools/bin/python" -m pip install --quiet cmake
    fi
    cmake_bin="$tools/bin/cmake"
fi

src_root="$cache/src-$VERSION"
if [[ ! -d "$src_root/vendor/llama.cpp" ]]; then
    tmp="$(mktemp -d)"
    trap 'rm -rf "$tmp"' EXIT
    # `--no-binary llama-cpp-python`, not `:all:`: pip prepares the sdist's
    # metadata in an isolated build env, and `:all:` would build that env's
    # tools (scikit-build-core, hatchling, ...) from source too.
    echo "build-llama-server.sh: pip download --no-deps --no-binary llama-cpp-python $PACKAGE" >&2
    "$python" -m pip download --quiet --no-deps --no-binary llama-cpp-python "$PACKAGE" -d "$tmp" >&2
    sdist="$(ls "$tmp"/*.tar.gz)"
    mkdir -p "$tmp/unpacked"
    tar -xzf "$sdist" -C "$tmp/unpacked"
    rm -rf "$src_root"
    mv "$tmp/unpacked/llama_cpp_python-$VERSION" "$src_root"
fi
llama="$src_root/vendor/llama.cpp"
build="$cache/build-$VERSION"

echo "build-llama-server.sh: configuring $llama" >&2
nice -n 10 "$cmake_bin" -S "$llama" -B "$build" \
    -DCMAKE_BUILD_TYPE=Release \
    -DBUILD_SHARED_LIBS=OFF \
    -DLLAMA_CURL=OFF \
    -DLLAMA_BUILD_SERVER=ON \
    -DLLAMA_BUILD_TESTS=OFF \
    -DLLAMA_BUILD_EXAMPLES=OFF \
    -DGGML_NATIVE=OFF \
    -DGGML_CPU_ALL_VARIANTS=OFF \
    -DGGML_BACKEND_DL=OFF \
    -DGGML_AVX=ON -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON \
    -DGGML_AVX512=OFF -DGGML_AVX512_VBMI=OFF -DGGML_AVX512_VNNI=OFF -DGGML_AVX512_BF16=OFF \
    -DGGML_AMX_TILE=OFF -DGGML_AMX_INT8=OFF -DGGML_AMX_BF16=OFF \
    -DGGML_CUDA=OFF -DGGML_METAL=OFF -DGGML_VULKAN=OFF -DGGML_OPENMP=OFF \
    >&2

echo "build-llama-server.sh: building target llama-server with -j$jobs" >&2
nice -n 10 "$cmake_bin" --build "$build" --config Release --target llama-server -j "$jobs" >&2

cp "$build/bin/llama-server" "$dest.part"
mv "$dest.part" "$dest"
mkdir -p "$(dirname "$machine")"
cp "$dest" "$machine.part" && mv "$machine.part" "$machine" || true
end=$(date +%s)
echo "build-llama-server.sh: built $dest in $((end - start)) s" >&2
echo "$dest"
