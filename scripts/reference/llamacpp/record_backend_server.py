#!/usr/bin/env python3
"""Check on the real llama-server (b11434, CPU build) what record_backend.py
found with its harness: the same request sampled with `backend_sampling`
false and true.

Starts llama-server built from the b11434 sources (setup-build.sh's build
folder, `--target llama-server`) with SmolLM2-135M-Instruct Q4_1
(scripts/fetch-model.sh) on 127.0.0.1, under `timeout`, `-c 512 -np 1 -t 2`,
and sends `/completion` for PROMPT with each of REQUESTS twice, once per
`backend_sampling` value (the request field, tools/server/server-schema.cpp
line 187), with a fixed seed, `n_predict` N_PREDICT, `n_probs` 8 and
`post_sampling_probs` (so backend sampling stays on: server-context.cpp line
1928 drops it only for pre-sampling probabilities). It records the generated
token ids and, per step, the post-sampling candidates and probabilities the
server reports. ABORT_REQUEST (top_k above the vocabulary) is sent last with
backend sampling on; the recording says whether the server process died and
with which assertion on stderr.

Writes fixtures/llamacpp-b11434/server-backend.json; --check records again
and compares (token ids exactly, probabilities to 1e-6).

Usage:
    .cache/llama-build/venv/bin/python scripts/reference/llamacpp/record_backend_server.py \\
        --server .cache/llama-build/b11434/bin/llama-server [--check]
"""

from __future__ import annotations

import argparse
import json
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from pathlib import Path

REPO = Path(__file__).resolve().parents[3]
OUT = REPO / "fixtures" / "llamacpp-b11434" / "server-backend.json"
MODEL = REPO / ".cache" / "models" / "SmolLM2-135M-Instruct.Q4_1.gguf"
MODEL_SHA256 = "b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53"
PROMPT = "The cat sat on the"
SEED = 1234
N_PREDICT = 24
REQUESTS = [
    ("server_defaults", {}),
    ("t07", {"temperature": 0.7}),
    ("top_k5_no_top_p", {"samplers": ["top_k", "temperature"], "top_k": 5, "temperature": 1.0}),
    ("min_keep", {"min_keep": 5, "top_p": 0.1, "min_p": 0.5}),
    ("dynatemp", {"temperature": 0.8, "dynatemp_range": 0.5}),
    ("greedy", {"temperature": 0.0}),
]
ABORT_REQUEST = ("top_k_above_vocab", {"top_k": 50000})


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def post(port: int, body: dict, timeout: float = 120) -> dict:
    req = urllib.request.Request(f"http://127.0.0.1:{port}/completion", data=json.dumps(body).encode(),
                                 headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=timeout) as r:
        return json.loads(r.read())


def wait_ready(port: int, server: subprocess.Popen) -> None:
    deadline = time.time() + 180
    while time.time() < deadline:
        if server.poll() is not None:
            sys.exit(f"llama-server exited early ({server.returncode})")
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/health", timeout=5) as r:
                if r.status == 200:
                    return
        except (urllib.error.URLError, ConnectionError, TimeoutError):
            pass
        time.sleep(0.5)
    sys.exit("llama-server did not become ready")


def step(p: dict) -> dict:
    return {"id": p["id"], "top": [[t["id"], t["prob"]] for t in p.get("top_probs", [])]}


def record(server_bin: Path) -> dict:
    port = free_port()
    log = tempfile.NamedTemporaryFile("w+", suffix=".log", delete=False)
    args = ["-m", MODEL.name, "--host", "127.0.0.1", "-c", "512", "-np", "1", "-t", "2", "--no-webui"]
    cmd = ["timeout", "600", str(server_bin.resolve()), *args, "--port", str(port)]
    server = subprocess.Popen(cmd, cwd=MODEL.parent, stdout=subprocess.DEVNULL, stderr=log)
    out = {"format": "sampling-parity-llamacpp-server-backend/1", "llama_cpp_build": "b11434",
           "model": MODEL.name, "model_sha256": MODEL_SHA256, "prompt": PROMPT, "seed": SEED,
           "n_predict": N_PREDICT, "cases": [],
           "args": args}  # and --port, a free one
    try:
        wait_ready(port, server)
        for name, request in REQUESTS:
            case = {"name": name, "request": request}
            for bs in (False, True):
                body = dict(request, prompt=PROMPT, seed=SEED, n_predict=N_PREDICT, n_probs=8,
                            post_sampling_probs=True, cache_prompt=False, backend_sampling=bs)
                r = post(port, body)
                case["backend" if bs else "cpu"] = [step(p) for p in r["completion_probabilities"]]
            out["cases"].append(case)
        name, request = ABORT_REQUEST
        body = dict(request, prompt=PROMPT, seed=SEED, n_predict=4, cache_prompt=False,
                    backend_sampling=True)
        try:
            r = post(port, body, timeout=60)
            answered = [step(p) for p in r.get("completion_probabilities", [])] or r.get("content")
        except (urllib.error.URLError, ConnectionError, TimeoutError) as e:
            answered = None
            err = type(e).__name__
        else:
            err = None
        time.sleep(1.0)
        died = server.poll() is not None
        log.flush()
        log.seek(0)
        asserts = sorted({line.split("GGML_ASSERT", 1)[1].strip() for line in log.read().splitlines()
                          if "GGML_ASSERT" in line})
        out["abort"] = {"name": name, "request": request, "answered": answered, "client_error": err,
                        "server_died": died, "returncode": server.returncode if died else None,
                        "asserts": asserts}
    finally:
        if server.poll() is None:
            server.send_signal(signal.SIGTERM)
            try:
                server.wait(timeout=30)
            except subprocess.TimeoutExpired:
                server.kill()
                server.wait()
        Path(log.name).unlink(missing_ok=True)
    return out


def same(a, b) -> bool:
    if isinstance(a, float) and isinstance(b, float):
        return abs(a - b) <= 1e-6
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b))
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(same(a[k], b[k]) for k in a)
    return a == b


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--server", type=Path, required=True, help="the b11434 llama-server binary")
    ap.add_argument("--check", action="store_true", help="record again and compare with the committed file")
    args = ap.parse_args()
    if not MODEL.is_file():
        sys.exit(f"{MODEL} missing: run scripts/fetch-model.sh")
    doc = record(args.server)
    if args.check:
        old = json.loads(OUT.read_text())
        if same(old, doc):
            print(f"record_backend_server.py: {OUT.relative_to(REPO)} is up to date", file=sys.stderr)
            return 0
        for k in sorted(set(old) | set(doc)):
            if k == "cases":
                # By name, so a case recorded only once is named too.
                was = {c["name"]: c for c in old.get(k, [])}
                now = {c["name"]: c for c in doc.get(k, [])}
                for name in sorted(set(was) | set(now)):
                    if name not in now:
                        print(f"record_backend_server.py: case {name} is no longer recorded", file=sys.stderr)
                    elif name not in was:
                        print(f"record_backend_server.py: case {name} is new", file=sys.stderr)
                    elif not same(was[name], now[name]):
                        print(f"record_backend_server.py: DIFF in case {name}", file=sys.stderr)
            elif not same(old.get(k), doc.get(k)):
                print(f"record_backend_server.py: DIFF in {k}: {old.get(k)} vs {doc.get(k)}", file=sys.stderr)
        print("record_backend_server.py: DIFF", file=sys.stderr)
        return 1
    OUT.write_text(json.dumps(doc, indent=1, sort_keys=True) + "\n")
    print(f"record_backend_server.py: wrote {OUT.relative_to(REPO)}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
