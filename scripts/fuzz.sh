#!/usr/bin/env bash
# Fuzz every target (or the ones named) for a given time each, one after the
# other, with cargo-fuzz / libFuzzer. See docs/robustness.md.
#
#   scripts/fuzz.sh [SECONDS_PER_TARGET] [TARGET...]    (default: 300 s, all targets)
#   scripts/fuzz.sh --minimise [TARGET...]              merge fuzz/corpus-raw/ into fuzz/corpus/, minimised
#
# Targets: compare_dist (the `compare dist` JSON-lines driver under every
# semantics), compare_diff (`compare diff` on the same records),
# compare_request (each line as a request through every server route),
# speculative_args (the SEMANTICS:PARAMS and SCALE:SEED parsers),
# token_piece (the byte-level token decoder), trace (the trace loader),
# spec_line (the spec-sampler line parser and sampler), fixture (the
# safetensors fixture loader), hf_sampler (HfSampler at both SIMD levels
# against the reference), probe_replay (a `compare probe --replay`
# recording replayed against the registry), beam_recording (a beam
# recording parsed and its runs replayed), compare_check (`compare check`
# records against every semantics), arrays (the .npy and safetensors array
# readers of `compare check --logits/--probs`). Harnesses: fuzz/src/lib.rs.
#
# Works on the stable toolchain: cargo-fuzz needs nightly flags, which
# RUSTC_BOOTSTRAP=1 unlocks. The default build has no sanitizer (the code is
# `unsafe`-free; panics, overflow checks via --debug-assertions, hangs and
# memory blow-ups are what is looked for) and is ~3x faster than ASan;
# FUZZ_SANITIZER=address turns ASan on.
#
# New interesting inputs go to fuzz/corpus-raw/<target>/ (not committed);
# crashes to fuzz/artifacts/<target>/, and every crash found should be copied
# to fuzz/regressions/<target>/ once fixed, where CI replays it. The log of
# each run, with libFuzzer's final statistics, is fuzz/logs/<target>.log.
set -euo pipefail

cd "$(dirname "$0")/.."
ALL_TARGETS=(compare_dist compare_diff compare_request speculative_args token_piece trace spec_line fixture hf_sampler probe_replay beam_recording gguf_metadata compare_check arrays)
export RUSTC_BOOTSTRAP=1
SANITIZER=${FUZZ_SANITIZER:-none}
BUILD_FLAGS=(-O --debug-assertions --sanitizer "$SANITIZER")

if ! cargo fuzz --version >/dev/null 2>&1; then
    echo "installing cargo-fuzz from crates.io" >&2
    cargo install cargo-fuzz --locked
fi

dict_of() {
    case "$1" in
        fixture) echo fuzz/dict/safetensors.dict ;;
        *) echo fuzz/dict/json.dict ;;
    esac
}

# Inputs longer than this are cut. compare_dist runs three semantics (and
# candle's Gumbel integration) per record, so long inputs slow it ~4x while
# short ones reach the same code.
max_len_of() {
    case "$1" in
        fixture | trace) echo 8192 ;;
        probe_replay | beam_recording) echo 16384 ;;
        compare_dist | compare_diff | compare_request) echo 1024 ;;
        *) echo 4096 ;;
    esac
}

if [[ "${1:-}" == "--minimise" ]]; then
    shift
    targets=("$@")
    [[ ${#targets[@]} -gt 0 ]] || targets=("${ALL_TARGETS[@]}")
    cargo fuzz build "${BUILD_FLAGS[@]}"
    host=$(rustc -vV | sed -n 's/^host: //p')
    for t in "${targets[@]}"; do
        mkdir -p "fuzz/corpus-raw/$t" "fuzz/corpus/$t"
        out=$(mktemp -d)
        # A set cover of the coverage edges (counters off): a few hundred
        # small files, where `cargo fuzz cmin` keeps thousands.
        "fuzz/target/$host/release/$t" -set_cover_merge=1 -use_counters=0 \
            -max_len="$(max_len_of "$t")" -timeout=10 \
            "$out" "fuzz/corpus/$t" "fuzz/corpus-raw/$t"
        rm -rf "fuzz/corpus/$t"
        mv "$out" "fuzz/corpus/$t"
        chmod 755 "fuzz/corpus/$t"
        echo "$t: $(find "fuzz/corpus/$t" -type f | wc -l) files after minimising" >&2
    done
    exit 0
fi

seconds=${1:-300}
shift || true
targets=("$@")
[[ ${#targets[@]} -gt 0 ]] || targets=("${ALL_TARGETS[@]}")

# Only the targets to run (each links the whole tree: 14 links are minutes).
for t in "${targets[@]}"; do
    cargo fuzz build "${BUILD_FLAGS[@]}" "$t"
done
mkdir -p fuzz/logs
status=0
for t in "${targets[@]}"; do
    mkdir -p "fuzz/corpus-raw/$t" "fuzz/corpus/$t"
    echo "== $t: ${seconds}s" >&2
    # One job on one core: the machine is shared. -timeout catches hangs,
    # -malloc_limit_mb a single allocation blowing up, -rss_limit_mb the rest.
    if ! cargo fuzz run "${BUILD_FLAGS[@]}" "$t" "fuzz/corpus-raw/$t" "fuzz/corpus/$t" -- \
        -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 -malloc_limit_mb=1024 \
        -max_len="$(max_len_of "$t")" -dict="$(dict_of "$t")" -print_final_stats=1 \
        >"fuzz/logs/$t.log" 2>&1; then
        echo "$t: FAILED, see fuzz/logs/$t.log and fuzz/artifacts/$t/" >&2
        status=1
    fi
    execs=$(grep -o 'stat::number_of_executed_units: *[0-9]*' "fuzz/logs/$t.log" | grep -o '[0-9]*$' || echo "?")
    echo "$t: $execs executions" >&2
done
exit "$status"
