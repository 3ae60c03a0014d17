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
  * flags: the plain GGUF started with FLAGS.

Each recording goes to fixtures/llamacpp/server-defaults/NAME.json (the
`token` and `bytes` fields of the log-probability lists dropped, as
fixtures/server-probe/ does: the probe reads ids and numbers only), and the
setup (keys, flags, files' sha256) to manifest.json, and a GGUF holding only
the stamped keys (no tensors, same writer) to stamped-keys.gguf.
crates/compare/tests/it/server_defaults.rs replays them.

The server binds 127.0.0.1 on a free port, runs under `timeout`, and is
stopped by its PID.

Usage (needs the `compare` binary: cargo build --release -p compare):

    /work/venvs/gguf-rec/bin/python scripts/reference/llamacpp/record_server_defaults.py
    .../python scripts/reference/llamacpp/record_server_defaults.py --check

--check records again into a temporary folder and compares what the server
decides — `/props` `default_generation_settings.params` and every returned
probability — with the committed files (timings, ports and paths differ
between runs and are not compared); exit 1 with the differences if any.
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
# The requests leave top_k, top_p and min_p out (and the first, temperature).
REQUESTS = [{}, {"temperature": 0.7}]
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
        "timeout", "600", str(SERVER), "-m", str(model),
        "--host", "127.0.0.1", "--port", str(port),
        "-c", "512", "-np", "1", "-t", "2", "--no-webui", *flags,
    ]
    server = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
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
    slim(out)


def slim(path: Path) -> None:
    """Drops `token` and `bytes` from every log-probability entry."""
    doc = json.loads(path.read_text())

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

    walk(doc)
    path.write_text(json.dumps(doc, separators=(",", ":")) + "\n")


def decided(path: Path) -> dict:
    """What the server decided: its default params and every probability."""
    doc = json.loads(path.read_text())
    out = {"props": None, "answers": []}
    for ex in doc["exchanges"]:
        resp = ex.get("response")
        if ex["path"] == "/props":
            out["props"] = resp["default_generation_settings"]["params"]
        elif ex["method"] == "POST" and isinstance(resp, dict):
            probs = []

            def walk(v):
                if isinstance(v, dict):
                    if "id" in v and ("logprob" in v or "prob" in v):
                        probs.append((v["id"], v.get("logprob", v.get("prob"))))
                    for x in v.values():
                        walk(x)
                elif isinstance(v, list):
                    for x in v:
                        walk(x)

            walk(resp)
            out["answers"].append({"path": ex["path"], "body": ex["body"], "probs": probs})
    return out


def run(dest: Path) -> dict:
    dest.mkdir(parents=True, exist_ok=True)
    for need, how in [(SERVER, "scripts/build-llama-server.sh"),
                      (MODEL, "scripts/fetch-model.sh"),
                      (COMPARE, "cargo build --release -p compare")]:
        if not need.exists():
            sys.exit(f"{need} is missing ({how} makes it)")
    with tempfile.TemporaryDirectory() as tmp:
        stamped = Path(tmp) / "SmolLM2-135M-Instruct.Q4_1.sampling.gguf"
        stamp(MODEL, stamped)
        manifest = {
            "format": "sampling-parity-llamacpp-server-defaults/1",
            "llama_server": "llama.cpp 0c1e57098 (llama-cpp-python 0.3.36), scripts/build-llama-server.sh",
            "prompt": PROMPT,
            "seed": SEED,
            "requests": REQUESTS,
            "recordings": {
                "stamped.json": {
                    "model": MODEL.name + " with " + ", ".join(
                        f"{k} = {v} ({t.lower()})" for k, (t, v) in STAMPED.items()),
                    "model_sha256": sha256(stamped),
                    "base_model_sha256": sha256(MODEL),
                    "stamped_keys": {k: v for k, (_, v) in STAMPED.items()},
                    "flags": [],
                },
                "flags.json": {
                    "model": MODEL.name,
                    "model_sha256": sha256(MODEL),
                    "flags": FLAGS,
                },
            },
        }
        keys_only(dest / "stamped-keys.gguf")
        manifest["recordings"]["stamped.json"]["keys_file"] = "stamped-keys.gguf"
        record(stamped, [], dest / "stamped.json")
        record(MODEL, FLAGS, dest / "flags.json")
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
        for name in ["stamped.json", "flags.json"]:
            a, b = decided(OUT / name), decided(fresh / name)
            if a != b:
                bad.append(name)
        keys = "stamped-keys.gguf"
        if (OUT / keys).read_bytes() != (fresh / keys).read_bytes():
            bad.append(keys)
        ma = json.loads((OUT / "manifest.json").read_text())
        mb = json.loads((fresh / "manifest.json").read_text())
        if ma != mb:
            bad.append("manifest.json")
        if bad:
            sys.exit(f"--check: differs from the committed fixtures: {', '.join(bad)} "
                     f"(regenerate with {Path(__file__).relative_to(REPO)})")
        print("--check: stamped.json, flags.json and manifest.json: the server decided the same",
              file=sys.stderr)


if __name__ == "__main__":
    main()
