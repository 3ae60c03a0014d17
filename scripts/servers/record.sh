#!/usr/bin/env bash
# Record `compare probe` sessions against the real servers into
# fixtures/server-probe/<name>.json, or (--check) probe them again and compare
# the verdicts with the committed recordings.
#
#   scripts/servers/record.sh [--check] [NAME ...]     NAME: vllm | mlx | serve (default: all three)
#
# For each NAME: start it (scripts/servers/start.sh, 127.0.0.1, port 18701,
# 18702, 18703), run issue #36's four requests (T 0.7; T 0.8 + top_p 0.9; T 1.0 +
# top_k 20; T 0.7 + min_p 0.1) through `compare probe --api <its dialect>
# --record FILE` on the prompt "My favorite color is" (as ids where the server
# takes them) with seed 1 and --samples 300 (vllm; about 0.6 s a draw here),
# 120 (mlx: about 0.6 s a draw on two busy cores; with --vocab
# fixtures/smollm2/vocab.json, the vocabulary's size it does not say) or 30 (serve: greedy; it
# returns no logprobs, so it borrows vllm.json's raw list with --raw-from and
# reads its texts as ids with --vocab fixtures/smollm2/vocab.json, and gets the
# first two requests only: it refuses top_k and min_p), or SAMPLES=N, stop it
# by PID, and print the replayed verdicts. Without
# --check FILE is the fixture; with --check it is a temporary file, and the
# verdicts of both (each replayed with `compare probe --replay F --format
# json`: per request `explained_by` and each candidate's verdict) must be
# equal, else exit 1. Exit 2 on bad arguments or a missing binary/venv.
#
# Needs: target/release/compare (cargo build --release -p compare), the venvs
# of scripts/servers/<name>/setup.sh, and python3 (standard library) for the
# verdict comparison. The fixture README (fixtures/server-probe/README.md)
# names each server's version and command line.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"

check=0
names=()
for a in "$@"; do
    case "$a" in
        --check) check=1 ;;
        -h|--help) sed -n '2,26p' "$0"; exit 0 ;;
        vllm|mlx|serve) names+=("$a") ;;
        *) echo "record.sh: ${a@Q}: expected --check or a server name (vllm, mlx, serve)" >&2; exit 2 ;;
    esac
done
[[ ${#names[@]} -gt 0 ]] || names=(vllm mlx serve)

compare="${COMPARE:-$repo/target/release/compare}"
[[ -x "$compare" ]] || { echo "record.sh: no $compare: cargo build --release -p compare" >&2; exit 2; }
fixtures="$repo/fixtures/server-probe"
tmp="$(mktemp -d)"
running=""
cleanup() {
    [[ -n "$running" ]] && "$servers_dir/stop.sh" "$running" || true
    rm -rf "$tmp"
}
trap cleanup EXIT

PROMPT="My favorite color is"
# The served tokenizer's ids for PROMPT (vLLM's /tokenize gives the same).
PROMPT_IDS="[5965, 4932, 2380, 314]"
requests=(--request '{"temperature": 0.7}'
          --request '{"temperature": 0.8, "top_p": 0.9}'
          --request '{"temperature": 1.0, "top_k": 20}'
          --request '{"temperature": 0.7, "min_p": 0.1}')

# The verdicts of a recording, as canonical JSON lines (one per request).
verdicts() {
    "$compare" probe --replay "$1" --format json | python3 -c '
import json, sys
doc = json.load(sys.stdin)
for p in doc["probes"]:
    cands = sorted((c["semantics"], c["endpoint"], c.get("variant") or "", c["verdict"]) for c in p["candidates"])
    print(json.dumps({"request": p["request"], "explained_by": sorted(p["explained_by"]), "candidates": cands}, sort_keys=True))
'
}

status=0
for name in "${names[@]}"; do
    # One port per server, so that two record.sh can run at once.
    case "$name" in
        vllm)  port=18701; samples=300; args=(--api vllm --prompt-ids "$PROMPT_IDS") ;;
        # mlx_lm.server does not say its vocabulary's size; the token
        # strings do (the spread tail of its 11-entry list needs it).
        mlx)   port=18702; samples=120; args=(--api mlx-lm --prompt "$PROMPT"
                   --vocab "$repo/fixtures/smollm2/vocab.json") ;;
        # transformers serve returns no logprobs: the raw list is vllm.json's
        # (vLLM 0.32.0, the same HF folder and prompt, the whole vocabulary)
        # and each drawn text is read as its id with the GGUF's token strings.
        # It refuses top_k and min_p (HTTP 422, fields it does not know), so
        # it gets the first two requests only; its answers are greedy, so 30
        # draws rule out every sampling candidate.
        serve) port=18703; samples=30; args=(--api transformers-serve --prompt "$PROMPT" --model "$model_dir"
                   --raw-from "$fixtures/vllm.json" --vocab "$repo/fixtures/smollm2/vocab.json") ;;
    esac
    reqs=("${requests[@]}")
    [[ "$name" == serve ]] && reqs=("${requests[@]:0:4}")
    args+=(--samples "${SAMPLES:-$samples}")
    out="$fixtures/$name.json"
    (( check )) && out="$tmp/$name.json"
    url="$("$servers_dir/start.sh" "$name" "$port")"
    running="$name"
    echo "record.sh: $name: compare probe --server $url ${args[*]} ($(( ${#reqs[@]} / 2 )) requests) --seed 1 --record $out" >&2
    t0=$(date +%s)
    rc=0
    "$compare" probe --server "$url" "${args[@]}" "${reqs[@]}" --seed 1 --timeout 600 \
        --record "$out" >"$tmp/$name.txt" || rc=$?
    # A fixture names the files it borrows relative to itself (compare
    # probe --replay reads them so), not as this machine's absolute paths.
    if (( ! check )) && [[ "$name" != vllm && -f "$out" ]]; then
        python3 - "$out" "$fixtures" <<'PY'
import json, os, sys
path, base = sys.argv[1], sys.argv[2]
rec = json.load(open(path))
for key in ("raw_from", "vocab"):
    if rec["options"].get(key):
        rec["options"][key] = os.path.relpath(rec["options"][key], base)
open(path, "w").write(json.dumps(rec, separators=(",", ":")) + "\n")
PY
    fi
    echo "record.sh: $name: probe exit $rc after $(( $(date +%s) - t0 ))s" >&2
    "$servers_dir/stop.sh" "$name"
    running=""
    if (( rc != 0 )); then
        echo "record.sh: $name: the probe failed (exit $rc)" >&2
        status=1
        continue
    fi
    "$compare" probe --replay "$out" >&2
    if (( check )); then
        if diff <(verdicts "$fixtures/$name.json") <(verdicts "$out") >&2; then
            echo "record.sh: $name: verdicts match fixtures/server-probe/$name.json" >&2
        else
            echo "record.sh: $name: verdicts differ from fixtures/server-probe/$name.json (above: < committed, > now)" >&2
            status=1
        fi
    fi
done
exit "$status"
