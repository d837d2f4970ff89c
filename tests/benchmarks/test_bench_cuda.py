"""benchmarks/bench_cuda.py without a GPU: every input is uploaded contiguous and the strided case takes its view
on the device (checked through a recording fake of the upload, since a view made on the host would be uploaded
as a contiguous copy and time the packed path), its case computes numpy's result (on the CPU device), and the
JSON is rewritten after every case. On a GPU the quick run itself is checked; elsewhere that test skips."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import tensorsmith as ts

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))

import bench_cuda  # noqa: E402 - from benchmarks/


class DeviceTensor:
    """A tensor on a pretend device: a copy of what was uploaded; indexing makes a view of that copy."""

    def __init__(self, data: np.ndarray, base: DeviceTensor | None = None) -> None:
        self.data, self.base = data, base
        self.shape, self.strides = data.shape, data.strides

    def __getitem__(self, key: Any) -> DeviceTensor:
        return DeviceTensor(self.data[key], base=self)

    def to(self, device: str) -> DeviceTensor:
        return self


class Recorder:
    """Stands in for `ts` and `torch` in bench_cuda._cases: records every upload."""

    def __init__(self) -> None:
        self.uploads: list[np.ndarray] = []

    def asarray(self, array: np.ndarray, device: str) -> DeviceTensor:
        self.uploads.append(array)
        return DeviceTensor(np.array(array, copy=True))  # an upload copies, as a host-to-device copy does

    def from_numpy(self, array: np.ndarray) -> DeviceTensor:
        return self.asarray(array, "cuda")

    def __getattr__(self, name: str) -> Any:  # the ops: referenced, never called while cases are built
        return lambda *args, **kwargs: None


def test_every_input_is_uploaded_contiguous_and_the_strided_view_is_made_on_the_device(monkeypatch: pytest.MonkeyPatch) -> None:
    fake_ts, fake_torch = Recorder(), Recorder()
    monkeypatch.setattr(bench_cuda, "ts", fake_ts)
    cases = bench_cuda._cases(fake_torch, quick=True)
    for recorder in (fake_ts, fake_torch):
        assert recorder.uploads and all(a.flags.c_contiguous for a in recorder.uploads), "a host view was uploaded"
    [strided] = [c for c in cases if c["name"] == "add f32 strided"]
    side = 2048  # quick
    for lib in ("tensorsmith", "torch"):
        x, y = strided["inputs"][lib]
        assert x.base is not None and x.base.shape == (side, side), f"{lib}: the view is not of a device tensor"
        assert x.shape == (side, side // 2) and x.strides == (4 * side, 8)
        assert y.base is None and y.shape == (side, side // 2)
    assert strided["shape"] == f"{side}x{side // 2}" and strided["strides"] == [4 * side, 8]
    # Every other case runs on its inputs as uploaded.
    assert all(t.base is None for c in cases if c is not strided for t in c["inputs"]["tensorsmith"])


def test_the_strided_case_computes_numpys_sum() -> None:
    cases = bench_cuda._cases(None, quick=True, device="cpu")
    [strided] = [c for c in cases if c["name"] == "add f32 strided"]
    x, y = strided["inputs"]["tensorsmith"]
    assert x.strides == (4 * 2048, 8)
    np.testing.assert_array_equal(np.asarray(strided["impls"]["tensorsmith"]()), np.asarray(x) + np.asarray(y))


def test_the_json_is_rewritten_after_every_case(tmp_path: Path) -> None:
    x = ts.asarray(np.ones(1024, dtype=np.float32))

    def broken() -> None:
        raise RuntimeError("the step's timeout, say")

    cases = [{"name": "add", "family": "pointwise", "shape": "1024", "bytes": 12 * 1024, "flops": None,
              "impls": {"tensorsmith": lambda: ts.add(x, x)}, "inputs": {"tensorsmith": [x, x]}},
             {"name": "broken", "family": "pointwise", "shape": "1", "bytes": 4, "flops": None,
              "impls": {"tensorsmith": broken}, "inputs": {}}]  # fmt: skip
    out = tmp_path / "bench.json"
    with pytest.raises(RuntimeError, match="the step's timeout"):
        bench_cuda._measure(cases, lambda: None, 1, copy_gbps=100.0, json_path=str(out))
    report = json.loads(out.read_text())
    assert report["complete"] is False and [r["name"] for r in report["results"]] == ["add"]
    assert report["results"][0]["seconds"]["tensorsmith"] > 0 and "inputs" not in report["results"][0]


def test_quick_run_on_a_gpu(tmp_path: Path) -> None:
    if not ts.cuda.is_available():
        pytest.skip("no CUDA device: ts.cuda.is_available() is False (scripts/device_check.sh runs the benchmark on a GPU)")
    out = tmp_path / "bench-cuda.json"
    assert bench_cuda.main(["--quick", "--repeats", "1", "--json", str(out)]) == 0
    report = json.loads(out.read_text())
    assert report["complete"] is True
    [strided] = [r for r in report["results"] if r["name"] == "add f32 strided"]
    assert strided["strides"] == [4 * 2048, 8] and strided["seconds"]["tensorsmith"] > 0
