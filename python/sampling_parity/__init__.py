"""Check your own sampler against LLM engines' sampling semantics.

The same crates as the ``compare`` command line (no second implementation):
``dist`` is ``compare dist``, ``check``/``assert_matches`` are ``compare
check``, ``semantics``/``request``/``translate`` return the JSON documents
``compare semantics|request|translate --format json`` print, as dicts.

    import numpy as np, sampling_parity as sp
    probs = my_sampler(logits, top_p=0.9)                   # your own code
    sp.assert_matches(probs, logits, {"do_sample": True, "top_p": 0.9})

Arrays: 1-D ``[V]`` or 2-D ``[N, V]`` float32/float64, anything
``numpy.asarray`` reads (``__array__``), torch tensors (on any device; moved
to the CPU), DLPack producers. 2-D calls run every row on every core with
the GIL released. Errors are ``ValueError`` with the text ``compare`` prints.
See docs/python.md.
"""

from __future__ import annotations

import json
import sys
from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional, Sequence

import numpy as np

from . import _native

__all__ = [
    "Result",
    "SAME_TOLERANCE",
    "assert_matches",
    "check",
    "dist",
    "request",
    "semantics",
    "translate",
]

#: Probabilities closer than this are float rounding (``compare``'s verdict rule).
SAME_TOLERANCE: float = _native.SAME_TOLERANCE


def _torch_on_cpu(x: Any) -> Any:
    """A torch tensor as NumPy can read it through DLPack: autograd dropped,
    on the CPU, float16/bfloat16 widened (exactly) to float32. Without a copy
    when it is already a float32/float64 CPU tensor."""
    x = x.detach()
    if x.device.type != "cpu":
        x = x.cpu()
    if str(x.dtype) not in ("torch.float32", "torch.float64"):
        x = x.float()
    return x


def _is_torch(x: Any) -> bool:
    torch = sys.modules.get("torch")  # never imported here: only if the caller has
    return torch is not None and isinstance(x, torch.Tensor)


def _array(name: str, x: Any) -> np.ndarray:
    """``x`` as a C-contiguous float32/float64 ndarray, without a copy where it can.

    One path for every producer: a torch tensor is first brought to the CPU
    (``_torch_on_cpu``), then anything that speaks DLPack (torch, JAX, CuPy's
    host arrays, ...) is read with ``np.from_dlpack`` (a view of its memory),
    anything else with ``np.asarray`` (``__array__``, lists).
    """
    if _is_torch(x):
        x = _torch_on_cpu(x)
    if not isinstance(x, np.ndarray) and hasattr(x, "__dlpack__"):
        try:
            x = np.from_dlpack(x)
        except (BufferError, TypeError, RuntimeError, ValueError) as e:
            if not hasattr(x, "__array__"):
                raise ValueError(f"`{name}` cannot be read through DLPack: {e}") from e
    a = np.asarray(x)
    if a.dtype == np.float16:
        a = a.astype(np.float32)
    if a.dtype not in (np.float32, np.float64):
        raise ValueError(f"`{name}` must be a float32 or float64 array, got dtype {a.dtype}")
    return np.ascontiguousarray(a)


def _ids(input_ids: Any) -> Optional[List[int]]:
    if input_ids is None:
        return None
    return [int(i) for i in np.asarray(input_ids).reshape(-1).tolist()]


def _params(params: Optional[Dict[str, Any]]) -> str:
    if params is None:
        return "{}"
    if not isinstance(params, dict):
        raise ValueError(f"`params` must be a dict of the semantics' params, got {type(params).__name__}")
    return json.dumps(params)


def dist(
    semantics: str,
    logits: Any,
    params: Optional[Dict[str, Any]] = None,
    input_ids: Optional[Sequence[int]] = None,
    prompt_len: Optional[int] = None,
) -> np.ndarray:
    """The distribution ``semantics`` draws from for these logits (float64, the shape of ``logits``).

    ``params`` are the semantics' own (``semantics()`` lists them; for ``hf``
    and ``hf-rust``, transformers generate kwargs), exactly as in ``compare dist``.
    """
    return _native.dist(semantics, _array("logits", logits), _params(params), _ids(input_ids), prompt_len)


@dataclass
class Result:
    """One row of yours checked against a semantics (``compare check``'s record)."""

    semantics: str
    vocab: int
    verdict: str
    tv: float
    max_abs_diff: float
    kept_yours: int
    kept_semantics: int
    kept_ranges: List[List[int]]
    only_yours: List[Dict[str, float]]
    only_semantics: List[Dict[str, float]]
    fragile: List[Dict[str, Any]]
    only_fragile: bool
    explanation: Optional[str]
    expected: Optional[np.ndarray] = field(default=None, repr=False)

    @property
    def same(self) -> bool:
        """The verdict is ``same``."""
        return self.verdict == "same"

    @property
    def kept(self) -> np.ndarray:
        """The semantics' kept token ids."""
        if not self.kept_ranges:
            return np.zeros(0, dtype=np.int64)
        return np.concatenate([np.arange(a, b, dtype=np.int64) for a, b in self.kept_ranges])

    @property
    def kept_by_you(self) -> np.ndarray:
        """Your kept token ids (the semantics' with ``only_yours`` added, ``only_semantics`` taken away)."""
        drop = [t["id"] for t in self.only_semantics]
        add = [t["id"] for t in self.only_yours]
        kept = np.setdiff1d(self.kept, np.asarray(drop, dtype=np.int64))
        return np.union1d(kept, np.asarray(add, dtype=np.int64))

    def fails(self, ignore_fragile: bool = False) -> bool:
        """Whether a check fails on it (``ignore_fragile``: a difference that is only fragile passes)."""
        return self.verdict != "same" and not (ignore_fragile and self.only_fragile)

    def __bool__(self) -> bool:
        return self.same

    @classmethod
    def _from(cls, text: str, expected: Optional[np.ndarray]) -> "Result":
        d = json.loads(text)
        return cls(
            semantics=d["semantics"],
            vocab=d["vocab"],
            verdict=d["verdict"],
            tv=d["tv"],
            max_abs_diff=d["max_abs_diff"],
            kept_yours=d["kept_yours"],
            kept_semantics=d["kept_semantics"],
            kept_ranges=d["kept"],
            only_yours=d["only_yours"],
            only_semantics=d["only_semantics"],
            fragile=d["fragile"],
            only_fragile=d["only_fragile"],
            explanation=d.get("explanation"),
            expected=expected,
        )


def check(
    probs: Any,
    logits: Any,
    params: Optional[Dict[str, Any]] = None,
    semantics: str = "hf-rust",
    input_ids: Optional[Sequence[int]] = None,
    prompt_len: Optional[int] = None,
    logprobs: bool = False,
    dense: bool = False,
):
    """Your probabilities against ``semantics``' distribution for the same logits.

    ``probs`` (or log-probabilities with ``logprobs=True``) has the shape of
    ``logits``: one ``Result`` for a 1-D row, a list of them for ``[N, V]``
    (all rows on every core). ``dense=True`` keeps the semantics'
    distribution in ``Result.expected``.
    """
    p = _array("logprobs" if logprobs else "probs", probs)
    lg = _array("logits", logits)
    rows = _native.check(semantics, p, lg, _params(params), _ids(input_ids), prompt_len, logprobs, dense)
    results = [Result._from(text, expected) for text, expected in rows]
    return results if lg.ndim == 2 else results[0]


def assert_matches(
    probs: Any,
    logits: Any,
    params: Optional[Dict[str, Any]] = None,
    semantics: str = "hf-rust",
    input_ids: Optional[Sequence[int]] = None,
    prompt_len: Optional[int] = None,
    logprobs: bool = False,
    ignore_fragile: bool = False,
):
    """``check``, raising ``AssertionError`` with the explanation when a row differs (for pytest)."""
    got = check(probs, logits, params, semantics, input_ids, prompt_len, logprobs)
    rows = got if isinstance(got, list) else [got]
    failing = [(i, r) for i, r in enumerate(rows) if r.fails(ignore_fragile)]
    if failing:
        lines = [(f"row {i}: " if isinstance(got, list) else "") + str(r.explanation) for i, r in failing]
        if len(failing) < len(rows):
            lines.append(f"({len(failing)} of {len(rows)} rows differ)")
        raise AssertionError("\n".join(lines))
    return got


def semantics() -> Dict[str, Any]:
    """``compare semantics --format json``: every semantics, its engine, version and params."""
    return json.loads(_native.semantics_json())


def request(
    body: Dict[str, Any],
    fixtures: Sequence[str] = (),
    generation_config: Optional[str] = None,
) -> Dict[str, Any]:
    """``compare request BODY --format json``: what each engine's server samples with for this request body."""
    return json.loads(_native.request_json(json.dumps(body), [str(f) for f in fixtures], generation_config))


def translate(
    kwargs: Dict[str, Any],
    to: Optional[str] = None,
    context_len: int = 4096,
    generation_config: Optional[str] = None,
) -> Dict[str, Any]:
    """``compare translate --kwargs KWARGS --to TO --format json``: the engine setup that reproduces generate(**kwargs)."""
    return json.loads(_native.translate_json(json.dumps(kwargs), to, context_len, generation_config))
