#!/usr/bin/env python3
"""Record what the real llama-server samples an absent field with.

llama.cpp 0c1e57098 (llama-cpp-python 0.3.36's vendored tree) fills a field
a request leaves out with its server default, and that default is layered:
the built-in value (common/common.h), then the model file's
`general.sampling.*` keys (common/common.cpp `common_init_sampler_from_model`)
for every field no sampling flag set, then the operator's flags. This script
runs the real server (scripts/build-llama-server.sh) in those setups and
records, with `compare probe --record`, its `/props` and the post-sampling
probabilities of requests that leave those fields out:

  * stamped: a copy of the SmolLM2 GGUF (scripts/fetch-model.sh) with
    STAMPED's keys added by PyPI `gguf`'s writer (gguf 0.19.0,
    `gguf.scripts.gguf_new_metadata.copy_with_new_metadata`; every other key
    and every tensor copied unchanged), started with no sampling flag;
  * flags: the plain GGUF started with FLAGS;
  * stamped-flags: the stamped copy started with BOTH_FLAGS (a flag over
    the file's key on top_k and temperature, the file's top_p and min_p).

Each recording goes to fixtures/llamacpp/server-defaults/NAME.json, the
setup (keys, flags, requests, files' sha256) to manifest.json, and a GGUF
holding only the stamped keys (no tensors, same writer) to stamped-keys.gguf.
crates/compare/tests/it/server_defaults.rs replays them with `compare probe
--replay`.

What is changed from what the server returned, so that a run is repeatable
byte for byte (the probe reads none of it):

  * the `token` and `bytes` fields of every log-probability entry are
    dropped (as fixtures/server-probe/ does: the probe reads ids and
    numbers);
  * `timings` of every completion and `created` of `/v1/models` (clock
    readings) and `/props` `media_marker` (a random string drawn at each
    start: tools/server/server-common.cpp `get_media_marker`, line 134) are
    dropped;
  * the recorded `options.server` is `http://127.0.0.1` without the free
    port the run used.

The server is started in the model's folder with the bare file name, so
`/props` `model_path` and the model's name are the file name, not a
temporary path.

The server binds 127.0.0.1 on a free port, runs under `timeout`, and is
stopped by its PID.

Usage (needs the `compare` binary, cargo build --release -p compare, and a
venv with requirements-server-defaults.txt):

    python3 -m venv /tmp/gguf-venv
    /tmp/gguf-venv/bin/pip install -r scripts/reference/llamacpp/requirements-server-defaults.txt
    /tmp/gguf-venv/bin/python scripts/reference/llamacpp/record_server_defaults.py
    /tmp/gguf-venv/bin/python scripts/reference/llamacpp/record_server_defaults.py --check

--check records everything again into a temporary folder and compares each
file with the committed one byte for byte; exit 1 naming the files (and, for
a recording, the first exchange) that differ.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[3]
OUT = REPO / "fixtures" / "llamacpp" / "server-defaults"
SERVER = REPO / ".cache" / "llama-server" / "0.3.36" / "llama-server"
MODEL = REPO / ".cache" / "models" / "SmolLM2-135M-Instruct.Q4_1.gguf"
COMPARE = REPO / "target" / "release" / "compare"
PROMPT = "The cat sat on the"
SEED = 1234
# The requests leave top_k, top_p and min_p out (the first, temperature too;
# the third sets top_p and min_p off, so that top_k alone cuts).
REQUESTS = [{}, {"temperature": 0.7}, {"temperature": 0.7, "top_p": 1.0, "min_p": 0.0}]
# What the recorded options say the server was: the port is a free one,
# different at each run.
SERVER_URL = "http://127.0.0.1"
# What a converter writes from a generation_config.json with top_k 20,
# top_p 0.8, temperature 0.6 (gguf-py/gguf/metadata.py), plus a min_p; the
# types are the ones gguf's writer uses for them (add_sampling_* in
# gguf_writer.py: int32 top_k, float32 the rest).
STAMPED = {
    "general.sampling.top_k": ("INT32", 20),
    "general.sampling.top_p": ("FLOAT32", 0.8),
    "general.sampling.min_p": ("FLOAT32", 0.1),
    "general.sampling.temp": ("FLOAT32", 0.6),
}
FLAGS = ["--top-k", "25", "--temp", "0.9", "--min-p", "0.02"]
BOTH_FLAGS = ["--top-k", "25", "--temp", "0.9"]
# Everything run() writes, which --check compares.
FILES = ["stamped.json", "flags.json", "stamped-flags.json", "manifest.json", "stamped-keys.gguf"]


def sha256(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def stamp(src: Path, dst: Path) -> None:
    import gguf
    from gguf.scripts.gguf_new_metadata import MetadataDetails, copy_with_new_metadata

    reader = gguf.GGUFReader(src, "r")
    arch = reader.get_field(gguf.Keys.General.ARCHITECTURE)
    arch_name = arch.contents()
    writer = gguf.GGUFWriter(dst, arch=arch_name, endianess=reader.endianess)
    align = reader.get_field(gguf.Keys.General.ALIGNMENT)
    if align is not None:
        writer.data_alignment = align.contents()
    new = {
        key: MetadataDetails(getattr(gguf.GGUFValueType, kind), value)
        for key, (kind, value) in STAMPED.items()
    }
    copy_with_new_metadata(reader, writer, new, [])


def keys_only(dst: Path) -> None:
    """A GGUF with no tensors and only `general.architecture`, `general.name`
    and STAMPED's keys, written by gguf's writer: what the Rust tests read
    with parity-core's GGUF reader (the 98 MB model is not committed)."""
    import gguf

    writer = gguf.GGUFWriter(dst, arch="llama")
    writer.add_name("SmolLM2-135M-Instruct (general.sampling.* keys of stamped.json)")
    for key, (kind, value) in STAMPED.items():
        writer.add_key_value(key, value, getattr(gguf.GGUFValueType, kind))
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_ti_data_to_file()
    writer.close()


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def record(model: Path, flags: list[str], out: Path) -> None:
    port = free_port()
    cmd = [
        "timeout", "600", str(SERVER), "-m", model.name,
        "--host", "127.0.0.1", "--port", str(port),
        "-c", "512", "-np", "1", "-t", "2", "--no-webui", *flags,
    ]
    server = subprocess.Popen(cmd, cwd=model.parent,
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        args = [str(COMPARE), "probe", "--server", f"http://127.0.0.1:{port}",
                "--api", "llama-server", "--prompt", PROMPT, "--seed", str(SEED),
                "--format", "json", "--record", str(out)]
        for r in REQUESTS:
            args += ["--request", json.dumps(r)]
        deadline = time.time() + 180
        while True:
            p = subprocess.run(args, capture_output=True, text=True)
            loading = "not ready" in p.stderr or "connection refused" in p.stderr.lower()
            if p.returncode == 0 or not loading or time.time() > deadline:
                break
            time.sleep(0.5)
        if p.returncode != 0:
            sys.exit(f"compare probe failed ({p.returncode}): {p.stderr}")
    finally:
        server.send_signal(signal.SIGTERM)
        try:
            server.wait(timeout=30)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait()
    normalise(out)


def normalise(path: Path) -> None:
    """What the module's docstring lists: token texts, clock readings and
    the port dropped; everything else as the server answered."""
    doc = json.loads(path.read_text())
    doc["options"]["server"] = SERVER_URL

    def walk(v):
        if isinstance(v, dict):
            if "id" in v and ("logprob" in v or "prob" in v):
                v.pop("token", None)
                v.pop("bytes", None)
            for x in v.values():
                walk(x)
        elif isinstance(v, list):
            for x in v:
                walk(x)

    for ex in doc["exchanges"]:
        resp = ex.get("response")
        if not isinstance(resp, dict):
            continue
        resp.pop("timings", None)
        if ex["path"] == "/props":
            resp.pop("media_marker", None)
        if ex["path"] == "/v1/models":
            for m in resp.get("data", []):
                m.pop("created", None)
        walk(resp)
    path.write_text(json.dumps(doc, separators=(",", ":")) + "\n")


def first_difference(committed: Path, fresh: Path) -> str:
    """Where two recordings first differ, in words."""
    a, b = json.loads(committed.read_text()), json.loads(fresh.read_text())
    if a.get("options") != b.get("options"):
        return "the options"
    for i, (x, y) in enumerate(zip(a["exchanges"], b["exchanges"])):
        if x != y:
            return f"exchange {i} ({x['method']} {x['path']})"
    return f"{len(a['exchanges'])} vs {len(b['exchanges'])} exchanges"


def run(dest: Path) -> dict:
    dest.mkdir(parents=True, exist_ok=True)
    for need, how in [(SERVER, "scripts/build-llama-server.sh"),
                      (MODEL, "scripts/fetch-model.sh"),
                      (COMPARE, "cargo build --release -p compare")]:
        if not need.exists():
            print(f"{need} is missing ({how} makes it)", file=sys.stderr)
            sys.exit(2)
    with tempfile.TemporaryDirectory() as tmp:
        stamped = Path(tmp) / "SmolLM2-135M-Instruct.Q4_1.sampling.gguf"
        stamp(MODEL, stamped)
        stamped_model = MODEL.name + " with " + ", ".join(
            f"{k} = {v} ({t.lower()})" for k, (t, v) in STAMPED.items())
        stamped_entry = {
            "model": stamped_model,
            "model_sha256": sha256(stamped),
            "base_model_sha256": sha256(MODEL),
            "stamped_keys": {k: v for k, (_, v) in STAMPED.items()},
            "keys_file": "stamped-keys.gguf",
        }
        manifest = {
            "format": "sampling-parity-llamacpp-server-defaults/1",
            "llama_server": "llama.cpp 0c1e57098 (llama-cpp-python 0.3.36), scripts/build-llama-server.sh",
            "prompt": PROMPT,
            "seed": SEED,
            "requests": REQUESTS,
            "recordings": {
                "stamped.json": {**stamped_entry, "flags": []},
                "flags.json": {
                    "model": MODEL.name,
                    "model_sha256": sha256(MODEL),
                    "flags": FLAGS,
                },
                "stamped-flags.json": {**stamped_entry, "flags": BOTH_FLAGS},
            },
        }
        keys_only(dest / "stamped-keys.gguf")
        record(stamped, [], dest / "stamped.json")
        record(MODEL, FLAGS, dest / "flags.json")
        record(stamped, BOTH_FLAGS, dest / "stamped-flags.json")
    (dest / "manifest.json").write_text(json.dumps(manifest, indent=2) + "\n")
    return manifest


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--check", action="store_true", help="record again and compare")
    args = ap.parse_args()
    if not args.check:
        run(OUT)
        print(f"wrote {OUT}", file=sys.stderr)
        return
    with tempfile.TemporaryDirectory() as tmp:
        fresh = Path(tmp)
        run(fresh)
        bad = []
        for name in FILES:
            if (OUT / name).read_bytes() == (fresh / name).read_bytes():
                continue
            where = ""
            if name.endswith(".json") and name != "manifest.json":
                where = f" (first at {first_difference(OUT / name, fresh / name)})"
            bad.append(name + where)
        if bad:
            sys.exit(f"--check: differs from the committed fixtures: {'; '.join(bad)} "
                     f"(regenerate with {Path(__file__).relative_to(REPO)})")
        print(f"--check: {', '.join(FILES)}: byte for byte the same", file=sys.stderr)


if __name__ == "__main__":
    main()
