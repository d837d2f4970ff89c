"""The files cases and results travel in between the gate and its sandboxed runner: every dtype round-trips
exactly, and a file the runner could not have written (the candidate shares its process) is refused."""

from __future__ import annotations

import json
from pathlib import Path

import ml_dtypes
import numpy as np
import pytest

from tensorsmith_forge.validators.runner import load_arrays, save_arrays


def test_every_dtype_and_shape_round_trips(tmp_path: Path) -> None:
    rng = np.random.default_rng(0)
    arrays = {
        "f32": rng.standard_normal((3, 4)).astype(np.float32),
        "bf16": rng.standard_normal(5).astype(ml_dtypes.bfloat16),
        "f16-strided": rng.standard_normal((4, 6)).astype(np.float16)[:, ::2],
        "scalar": np.array(7, dtype=np.int64),
        "empty": np.zeros((0, 3), dtype=np.uint8),
        "bool": np.array([True, False, True]),
    }
    save_arrays(tmp_path / "x.arrays", arrays)
    loaded = load_arrays(tmp_path / "x.arrays")
    assert list(loaded) == list(arrays)
    for key, array in arrays.items():
        assert loaded[key].dtype == array.dtype and loaded[key].shape == array.shape, key
        assert loaded[key].tobytes() == np.ascontiguousarray(array).tobytes(), key


def test_object_arrays_do_not_travel(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="do not travel"):
        save_arrays(tmp_path / "x.arrays", {"o": np.array([object()])})


def _forged(path: Path, index: dict, body: bytes) -> Path:
    header = json.dumps(index).encode()
    path.write_bytes(len(header).to_bytes(8, "little") + header + body)
    return path


@pytest.mark.parametrize(
    ("index", "body", "message"),
    [
        ({"x": ["object", [1], 0]}, b"\0" * 8, "dtype 'object'"),
        ({"x": ["float64", [4], 0]}, b"\0" * 16, "outside the file"),
        ({"x": ["uint8", [2], -1]}, b"\0" * 8, "outside the file"),
        ({"x": ["uint8", [-2, -3], 0]}, b"\0" * 8, "outside the file"),
        ({"x": ["uint8", "oops"]}, b"\0" * 8, "malformed index entry"),
    ],
    ids=["pickle-dtype", "past-the-end", "negative-offset", "negative-shape", "malformed"],
)
def test_forged_files_are_refused(tmp_path: Path, index: dict, body: bytes, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        load_arrays(_forged(tmp_path / "x.arrays", index, body))


def test_truncated_and_garbled_files_are_refused(tmp_path: Path) -> None:
    save_arrays(tmp_path / "x.arrays", {"x": np.arange(10.0)})
    whole = (tmp_path / "x.arrays").read_bytes()
    (tmp_path / "cut.arrays").write_bytes(whole[:12])
    with pytest.raises(ValueError, match="truncated"):
        load_arrays(tmp_path / "cut.arrays")
    (tmp_path / "garbled.arrays").write_bytes(whole[:8] + b"\xff" * (len(whole) - 8))
    with pytest.raises(ValueError, match="unreadable array index"):
        load_arrays(tmp_path / "garbled.arrays")
