"""Reading the committed recordings (fixtures/) with NumPy alone.

The files are plain safetensors: an 8-byte little-endian header length, a
JSON header (dtype, shape, byte offsets per tensor; `__metadata__` strings),
then the bytes. Nothing here computes an engine's answer: the answers are the
recorded tensors.
"""

import json
import os
import struct
from pathlib import Path

import numpy as np
import pytest

DTYPES = {"F32": np.float32, "F64": np.float64, "I64": np.int64}


def fixtures_dir() -> Path:
    env = os.environ.get("SAMPLING_PARITY_FIXTURES")
    path = Path(env) if env else Path(__file__).resolve().parents[2] / "fixtures"
    assert (path / "smollm2").is_dir(), f"no fixtures at {path} (set SAMPLING_PARITY_FIXTURES)"
    return path


class Recording:
    """One safetensors file: its metadata (strings) and tensors (ndarrays)."""

    def __init__(self, path: Path):
        data = path.read_bytes()
        (n,) = struct.unpack("<Q", data[:8])
        header = json.loads(data[8 : 8 + n])
        self.path = path
        self.meta = header.pop("__metadata__", {})
        self.tensors = {}
        for name, t in header.items():
            start, end = t["data_offsets"]
            raw = data[8 + n + start : 8 + n + end]
            self.tensors[name] = np.frombuffer(raw, dtype=DTYPES[t["dtype"]]).reshape(t["shape"])

    def json(self, key):
        return json.loads(self.meta[key])


@pytest.fixture(scope="session")
def fixtures() -> Path:
    return fixtures_dir()


def softmax64(scores: np.ndarray):
    """transformers' recorded scores as probabilities (-inf gives 0), in
    float64, as a user would compute them; None when no score is finite or
    one is +inf (edge/near_f32_max's rep07)."""
    s = scores.astype(np.float64)
    m = s.max()
    if not np.isfinite(m):
        return None
    e = np.exp(s - m)
    return e / e.sum()
