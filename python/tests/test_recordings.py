"""sampling_parity against the committed recordings of real engines.

Expected values come from fixtures/: vLLM 0.32's recorded kept sets and
probabilities (fixtures/vllm, scripts/reference/vllm/record.py), and
transformers 5.23's recorded scores (fixtures/smollm2, fixtures/edge) with
the verdicts `compare report` gives them. None is computed by this package.
"""

import json
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import numpy as np
import pytest

import sampling_parity as sp
from conftest import Recording, fixtures_dir, softmax64


def compare_bin() -> str:
    """The `compare` binary (python/ci.sh sets COMPARE). Without it the
    tests that compare with the command line fail under CI and are skipped,
    visibly, elsewhere."""
    path = os.environ.get("COMPARE")
    if path and Path(path).is_file():
        return path
    if os.environ.get("CI"):
        pytest.fail("COMPARE is not set to the compare binary (python/ci.sh sets it)")
    pytest.skip("COMPARE is not set to the compare binary (python/ci.sh sets it)")


def run_compare(*args, stdin: str = ""):
    return subprocess.run([compare_bin(), *args], input=stdin, capture_output=True, text=True)


def transformers_fixtures():
    root = fixtures_dir()
    return sorted((root / "smollm2").glob("*.safetensors")) + sorted((root / "edge").glob("*.safetensors"))


def context(rec: Recording):
    ids = rec.tensors["input_ids"]
    prompt_len = int(rec.meta["prompt_len"]) if "prompt_len" in rec.meta else None
    return ids, prompt_len


# --- vLLM's recordings ---------------------------------------------------


def test_vllm_recorded_kept_sets_and_probabilities(fixtures):
    cases = kept_sets = own_probs_checked = refused = 0
    for path in sorted((fixtures / "vllm").glob("*.safetensors")):
        rec = Recording(path)
        source = Recording(fixtures / rec.meta["source"])
        logits = source.tensors["logits"]
        ids = source.tensors["input_ids"]
        prompt_len = int(rec.meta["prompt_len"])
        out_of_vocab = bool(((ids < 0) | (ids >= logits.size)).any())
        for case in rec.json("cases"):
            what = f"{path.name} {case['name']}"
            cases += 1
            if out_of_vocab or "error" in case:
                # vLLM raised (or its renderer refuses the ids): so does dist.
                with pytest.raises(ValueError):
                    sp.dist("vllm", logits, case["params"], ids, prompt_len)
                refused += 1
                continue
            p = sp.dist("vllm", logits, case["params"], ids, prompt_len)
            assert p.dtype == np.float64 and p.shape == logits.shape, what
            if "greedy_token" in case:
                assert np.flatnonzero(p).tolist() == [case["greedy_token"]], what
                continue
            rec_ids = rec.tensors[f"{case['name']}.ids"]
            rec_probs = rec.tensors[f"{case['name']}.probs"]
            nonfinite = "nonfinite" in case
            if len(rec_ids) == case["finite"]:
                # Every finite final logit stored: the kept set is exactly known.
                kept = sorted(int(i) for i, q in zip(rec_ids, rec_probs) if q > 0) or [0]
                assert np.flatnonzero(p).tolist() == kept, what
                kept_sets += 1
                if not nonfinite and rec_probs.sum() > 0:
                    # vLLM's own probabilities, checked as a user's would be.
                    yours = np.zeros(logits.size)
                    yours[rec_ids] = rec_probs
                    r = sp.assert_matches(yours, logits, case["params"], "vllm", ids, prompt_len)
                    assert r.same and r.kept_semantics == len(kept), what
                    own_probs_checked += 1
            if not nonfinite and len(rec_ids) > 0:
                assert np.abs(p[rec_ids] - rec_probs).max() <= 1e-6, what
    print(f"vllm: {cases} cases, {refused} refused, {kept_sets} kept sets, {own_probs_checked} checks")
    assert cases > 300 and kept_sets > 100 and own_probs_checked > 100


def test_sglang_recorded_probabilities_pass_assert_matches(fixtures):
    """SGLang 0.5.23's own probabilities (fixtures/sglang,
    scripts/reference/sglang), checked as a user's would be against the
    `sglang` semantics, wherever the recording holds the whole kept set."""
    cases = checked = refused = 0
    for path in sorted((fixtures / "sglang").glob("*.safetensors")):
        rec = Recording(path)
        source = rec.meta["source"]
        if source.startswith("synthetic/"):
            logits, ids = rec.tensors["logits"], rec.tensors["input_ids"]
        else:
            src = Recording(fixtures / source)
            logits, ids = src.tensors["logits"], src.tensors["input_ids"]
        prompt_len = int(rec.meta["prompt_len"])
        for case in rec.json("cases"):
            what = f"{path.name} {case['name']}"
            params = dict(case["params"])
            if "deterministic" in case:
                params["enable_deterministic_inference"] = True
            cases += 1
            if "error" in case:
                with pytest.raises(ValueError):
                    sp.dist("sglang", logits, params, ids, prompt_len)
                refused += 1
                continue
            if "greedy_token" in case or "nan_weights" in case:
                continue
            rec_ids = rec.tensors[f"{case['name']}.ids"]
            if len(rec_ids) != case["kept"]:
                continue  # only the heaviest ids stored: the kept set is not known
            yours = np.zeros(logits.size)
            yours[rec_ids] = rec.tensors[f"{case['name']}.probs"]
            r = sp.assert_matches(yours, logits, params, "sglang", ids, prompt_len)
            assert r.same and r.kept_semantics == case["kept"], what
            checked += 1
    print(f"sglang: {cases} cases, {refused} refused, {checked} checks")
    assert cases > 600 and refused > 10 and checked > 400


# --- transformers' recordings and compare report's verdicts -------------------


def report_rows():
    paths = [str(p) for p in transformers_fixtures()]
    out = run_compare(
        "report", *paths, "--all-settings", "--pairs", "hf:hf-rust", "--draws", "0", "--format", "json"
    )
    assert out.returncode == 0, out.stderr
    rows = {}
    for row in json.loads(out.stdout)["rows"]:
        if row["variant"] is None:
            rows[(row["fixture"], row["setting"])] = row
    return rows


def test_check_reproduces_report_verdicts_on_every_fixture():
    rows = report_rows()
    compared = differing = 0
    for path in transformers_fixtures():
        rec = Recording(path)
        logits = rec.tensors["logits"]
        ids, prompt_len = context(rec)
        for setting in rec.json("settings"):
            row = rows[(path.stem, setting["name"])]
            scores = rec.tensors[f"scores.{setting['name']}"]
            if setting["kwargs"].get("do_sample") is True:
                probs = softmax64(scores)
            else:  # transformers decodes greedily: the argmax of its scores
                probs = np.zeros(scores.size)
                probs[int(np.argmax(scores))] = 1.0
            if probs is None or row["kept_right"] is None:
                continue  # nothing to draw from, or hf-rust refuses (the row says why)
            r = sp.check(probs, logits, setting["kwargs"], "hf-rust", ids, prompt_len)
            what = f"{path.name} {setting['name']}"
            assert r.verdict == row["verdict"], f"{what}: {r.explanation} / {row['reason']}"
            assert (r.kept_yours, r.kept_semantics) == (row["kept_left"], row["kept_right"]), what
            assert r.only_fragile == row["only_fragile"], what
            compared += 1
            differing += r.verdict == "differs"
    print(f"{compared} fixture settings compared with compare report, {differing} differ")
    assert compared > 200


def test_the_command_line_gives_the_same_records():
    rec = Recording(fixtures_dir() / "smollm2" / "write_k7.safetensors")
    logits = rec.tensors["logits"]
    ids, prompt_len = context(rec)
    lines, expected = [], []
    for setting in rec.json("settings"):
        probs = softmax64(rec.tensors[f"scores.{setting['name']}"])
        record = {
            "logits": logits.tolist(),
            "probs": probs.tolist(),
            "params": setting["kwargs"],
            "input_ids": ids.tolist(),
            "prompt_len": prompt_len,
        }
        lines.append(json.dumps(record))
        expected.append(sp.check(probs, logits, setting["kwargs"], "hf-rust", ids, prompt_len))
    out = run_compare("check", "--semantics", "hf-rust", "--format", "json", stdin="\n".join(lines))
    assert out.returncode in (0, 1), out.stderr
    got = [json.loads(line) for line in out.stdout.splitlines()]
    assert len(got) == len(expected)
    for g, e in zip(got, expected):
        assert (g["verdict"], g["tv"], g["max_abs_diff"]) == (e.verdict, e.tv, e.max_abs_diff)
        assert g["kept"] == e.kept_ranges and g.get("explanation") == e.explanation
    assert out.returncode == (1 if any(not e.same for e in expected) else 0)


def npy_and_safetensors(tmp_path, name, array):
    """`array` as numpy.save writes it, and as a plain safetensors file (no metadata)."""
    np.save(tmp_path / f"{name}.npy", array)
    dtype = {np.dtype(np.float32): "F32", np.dtype(np.float64): "F64"}[array.dtype]
    header = json.dumps({name: {"dtype": dtype, "shape": list(array.shape), "data_offsets": [0, array.nbytes]}})
    header += " " * (-len(header) % 8)
    (tmp_path / f"{name}.safetensors").write_bytes(
        len(header).to_bytes(8, "little") + header.encode() + array.tobytes()
    )


def test_binary_files_through_the_command_line(tmp_path):
    rec = Recording(fixtures_dir() / "smollm2" / "hello_k7.safetensors")
    settings = {s["name"]: s["kwargs"] for s in rec.json("settings")}
    kwargs = settings["p09"]
    logits = np.stack([rec.tensors["logits"]] * 3)
    probs = np.stack([softmax64(rec.tensors["scores.p09"])] * 3)
    probs[2] = softmax64(rec.tensors["scores.t07"])  # row 2: nothing cut, so it differs
    npy_and_safetensors(tmp_path, "logits", logits)
    npy_and_safetensors(tmp_path, "probs", probs)
    expected = sp.check(probs, logits, kwargs, "hf-rust")
    assert [r.verdict for r in expected] == ["same", "same", "differs"]
    for ext in ("npy", "safetensors"):
        out = run_compare(
            "check", "--semantics", "hf-rust", "--format", "json",
            "--logits", str(tmp_path / f"logits.{ext}"), "--probs", str(tmp_path / f"probs.{ext}"),
            "--params", json.dumps(kwargs),
        )
        assert out.returncode == 1, out.stderr  # row 2 differs
        got = [json.loads(line) for line in out.stdout.splitlines()]
        assert [g["verdict"] for g in got] == ["same", "same", "differs"]
        assert [g["tv"] for g in got] == [r.tv for r in expected]
        assert "probs" not in got[0]  # sparse unless --dense


# --- a sampler with a bug -------------------------------------------------------


def my_top_p(logits, temperature, top_p, one_too_many):
    """A user's top-p sampler in NumPy; with `one_too_many`, the classic bug
    of keeping the token after the one that crosses p."""
    z = logits.astype(np.float64) / temperature
    p = np.exp(z - z.max())
    p /= p.sum()
    order = np.argsort(-p, kind="stable")
    k = int(np.searchsorted(np.cumsum(p[order]), top_p)) + 1  # tokens to reach p
    keep = order[: k + 1] if one_too_many else order[:k]
    out = np.zeros_like(p)
    out[keep] = p[keep]
    return out / out.sum(), int(order[k])


def test_a_sampler_that_keeps_one_token_too_many_is_caught_by_name():
    rec = Recording(fixtures_dir() / "smollm2" / "hello_k7.safetensors")
    logits = rec.tensors["logits"]
    kwargs = {"do_sample": True, "temperature": 0.7, "top_k": 0, "top_p": 0.9}
    right, _ = my_top_p(logits, 0.7, 0.9, one_too_many=False)
    assert sp.assert_matches(right, logits, kwargs).same
    wrong, extra = my_top_p(logits, 0.7, 0.9, one_too_many=True)
    with pytest.raises(AssertionError) as caught:
        sp.assert_matches(wrong, logits, kwargs)
    text = str(caught.value)
    assert f"your sampler can draw 1 token hf-rust never draws: token {extra} (p " in text, text
    r = sp.check(wrong, logits, kwargs)
    assert [t["id"] for t in r.only_yours] == [extra] and r.only_semantics == []
    assert r.kept_yours == r.kept_semantics + 1 and extra in r.kept_by_you and extra not in r.kept
    # The recorded transformers side keeps exactly what the right sampler keeps.
    recorded = softmax64(rec.tensors["scores.p09"])
    assert np.flatnonzero(recorded).tolist() == np.flatnonzero(right).tolist()


# --- inputs, errors and the documents -------------------------------------------


def test_arrays_of_any_kind_and_batches():
    rec = Recording(fixtures_dir() / "edge" / "ties_3221.safetensors")
    logits = rec.tensors["logits"]
    kwargs = {"do_sample": True, "top_k": 2}

    class Wrapped:  # anything with __array__
        def __array__(self, dtype=None, copy=None):
            return logits

    one = sp.dist("hf-rust", logits, kwargs)
    assert np.array_equal(sp.dist("hf-rust", Wrapped(), kwargs), one)
    assert np.array_equal(sp.dist("hf-rust", logits.astype(np.float64), kwargs), one)
    assert np.array_equal(sp.dist("hf-rust", logits[::1].tolist(), kwargs), one)
    batch = sp.dist("hf-rust", np.stack([logits, logits]), kwargs)
    assert batch.shape == (2, logits.size) and np.array_equal(batch[1], one)
    results = sp.check(np.stack([one, one]), np.stack([logits, logits]), kwargs)
    assert [r.same for r in results] == [True, True]
    with pytest.raises(ValueError, match="float32 or float64"):
        sp.dist("hf-rust", np.arange(4), kwargs)


class DLPackOnly:
    """A producer that speaks DLPack and nothing else (no `__array__`):
    the protocol torch, JAX and CuPy tensors are read through."""

    def __init__(self, array):
        self._array = array

    def __dlpack__(self, **kwargs):
        return self._array.__dlpack__(**kwargs)

    def __dlpack_device__(self):
        return self._array.__dlpack_device__()


def test_dlpack_producers_are_read_in_place():
    """The path a torch tensor takes once on the CPU (`np.from_dlpack`),
    with NumPy as the producer: read without a copy, the same answers."""
    rec = Recording(fixtures_dir() / "smollm2" / "hello_k7.safetensors")
    logits = np.ascontiguousarray(rec.tensors["logits"])
    kwargs = {"do_sample": True, "temperature": 0.7, "top_k": 0, "top_p": 0.9}
    assert np.shares_memory(sp._array("logits", DLPackOnly(logits)), logits)
    one = sp.dist("hf-rust", logits, kwargs)
    assert np.array_equal(sp.dist("hf-rust", DLPackOnly(logits), kwargs), one)
    batch = np.stack([logits, logits])
    assert np.array_equal(sp.dist("hf-rust", DLPackOnly(batch), kwargs)[1], one)
    # float16 through DLPack widens exactly.
    half = logits.astype(np.float16)
    assert np.array_equal(sp.dist("hf-rust", DLPackOnly(half), kwargs), sp.dist("hf-rust", half.astype(np.float32), kwargs))
    r = sp.check(DLPackOnly(one), DLPackOnly(logits), kwargs)
    assert r.same and r.kept_semantics == int(np.count_nonzero(one))
    with pytest.raises(ValueError, match="float32 or float64"):
        sp.dist("hf-rust", DLPackOnly(np.arange(4)), kwargs)

    class Refuses(DLPackOnly):  # a producer whose export fails (a GPU array, say)
        def __dlpack__(self, **kwargs):
            raise BufferError("cannot export from device cuda:0")

    with pytest.raises(ValueError, match="`logits` cannot be read through DLPack: cannot export from device"):
        sp.dist("hf-rust", Refuses(logits), kwargs)


def test_torch_tensors_if_torch_is_installed():
    torch = pytest.importorskip("torch", reason="torch is not installed here (numpy only)")
    rec = Recording(fixtures_dir() / "smollm2" / "hello_k7.safetensors")
    logits = np.ascontiguousarray(rec.tensors["logits"])
    kwargs = {"do_sample": True, "temperature": 0.7, "top_k": 0, "top_p": 0.9}
    one = sp.dist("hf-rust", logits, kwargs)
    t = torch.from_numpy(logits.copy())
    # A CPU float32 tensor is read in place (DLPack), not copied.
    assert np.shares_memory(sp._array("logits", t), t.numpy())
    # One that requires grad: detached; the same distribution.
    g = torch.tensor(logits, requires_grad=True)
    assert np.array_equal(sp.dist("hf-rust", g, kwargs), one)
    # A batch, and the user's probabilities as a float64 tensor.
    batch = torch.stack([t, t])
    assert np.array_equal(sp.dist("hf-rust", batch, kwargs)[1], one)
    results = sp.check(torch.from_numpy(np.stack([one, one])), batch, kwargs)
    assert [r.same for r in results] == [True, True]
    # bfloat16 widens exactly: the same as its float32 values.
    b = t.to(torch.bfloat16)
    assert np.array_equal(sp.dist("hf-rust", b, kwargs), sp.dist("hf-rust", b.float().numpy(), kwargs))
    # The wrong sampler's probabilities as a tensor are caught as from NumPy.
    wrong, extra = my_top_p(logits, 0.7, 0.9, one_too_many=True)
    with pytest.raises(AssertionError, match=f"token {extra} "):
        sp.assert_matches(torch.from_numpy(wrong), t, kwargs)
    if torch.cuda.is_available():
        assert np.array_equal(sp.dist("hf-rust", t.cuda(), kwargs), one)


def test_errors_carry_the_command_lines_text():
    logits = np.array([1.0, np.nan, 0.0], dtype=np.float32)
    for params, lg in (({"do_sample": True, "top_k": -3}, np.zeros(3, np.float32)), ({}, logits)):
        record = {"logits": [x if np.isfinite(x) else "nan" for x in lg.tolist()], "params": params}
        out = run_compare("dist", "--semantics", "hf-rust", stdin=json.dumps(record))
        assert out.returncode == 1
        cli = out.stderr.strip().removeprefix("error: line 1: ")
        with pytest.raises(ValueError) as caught:
            sp.dist("hf-rust", lg, params)
        assert str(caught.value) == cli
    with pytest.raises(ValueError, match=r"`probs\[1\]` = -0.5 is not a probability"):
        sp.check(np.array([0.5, -0.5]), np.zeros(2), {})
    with pytest.raises(ValueError, match=r"row 1: `logits\[0\]`"):
        sp.dist("hf-rust", np.array([[0.0, 1.0], [np.nan, 0.0]]), {})


def test_documents_are_the_command_lines():
    out = run_compare("semantics", "--format", "json")
    assert sp.semantics() == json.loads(out.stdout)
    out = run_compare("translate", "--kwargs", '{"do_sample": true, "top_p": 0.9}', "--format", "json")
    assert out.returncode == 0, out.stderr
    assert sp.translate({"do_sample": True, "top_p": 0.9}) == json.loads(out.stdout)
    body = {"temperature": 0.7, "top_p": 0.9}
    out = run_compare("request", json.dumps(body), "--format", "json")
    assert out.returncode == 0, out.stderr
    assert sp.request(body) == json.loads(out.stdout)
    with pytest.raises(ValueError, match="unknown semantics"):
        sp.dist("no-such-engine", np.zeros(2), {})


def test_batches_release_the_gil():
    """While a batch runs, another Python thread keeps running: the longest
    pause it sees is far shorter than the batch (a batch holding the GIL
    would stop it for the whole call)."""
    rec = Recording(fixtures_dir() / "smollm2" / "write_k60.safetensors")
    logits = np.stack([rec.tensors["logits"]] * 64)
    kwargs = {"do_sample": True, "temperature": 0.7, "top_k": 0, "top_p": 0.9}
    took = []
    done = threading.Event()

    def work():
        start = time.perf_counter()
        sp.dist("hf-rust", logits, kwargs)
        took.append(time.perf_counter() - start)
        done.set()

    worker = threading.Thread(target=work)
    last = time.perf_counter()
    longest = 0.0
    worker.start()
    while not done.is_set():
        now = time.perf_counter()
        longest = max(longest, now - last)
        last = now
    worker.join()
    assert took[0] > 0.05, f"the batch took {took[0]:.3f} s: too short to tell"
    assert longest < 0.5 * took[0], f"another thread stopped for {longest:.3f} s of the batch's {took[0]:.3f} s"
