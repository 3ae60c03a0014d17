#!/usr/bin/env bash
# Stop a server started by scripts/servers/start.sh, by the PID in its PID file.
#
#   scripts/servers/stop.sh NAME      NAME: vllm | vllm-processed | mlx | serve
#
# The PID is the leader of the server's own process group (start.sh runs it
# under setsid), so SIGTERM goes to that group (the server and the workers it
# spawned, e.g. vLLM's engine core) and to nothing else; SIGKILL follows after
# 30 s if the group is still there. Exits 0 when stopped or not running, 2 on
# bad arguments.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"

[[ $# -eq 1 ]] || { echo "usage: $0 NAME   (NAME: $SERVERS_NAMES)" >&2; exit 2; }
name="$1"
known_name "$name" || exit 2
pidfile="$run_dir/$name.pid"
if [[ ! -f "$pidfile" ]]; then
    echo "stop.sh: $name: no PID file ($pidfile): not started by start.sh" >&2
    exit 0
fi
pid="$(cat "$pidfile")"
if ! [[ "$pid" =~ ^[0-9]+$ ]]; then
    echo "stop.sh: $pidfile: ${pid@Q} is not a PID" >&2
    exit 2
fi
alive() { kill -0 -- "-$pid" 2>/dev/null; }
if ! alive; then
    echo "stop.sh: $name (PID $pid) is not running" >&2
    rm -f "$pidfile"
    exit 0
fi
kill -TERM -- "-$pid"
for _ in $(seq 60); do
    alive || break
    sleep 0.5
done
if alive; then
    echo "stop.sh: $name (PID $pid) still there after 30 s: SIGKILL to its group" >&2
    kill -KILL -- "-$pid" 2>/dev/null || true
fi
rm -f "$pidfile"
echo "stop.sh: $name (PID $pid) stopped" >&2
