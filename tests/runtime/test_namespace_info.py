"""The Array API namespace's constants and inspection utilities (__array_namespace_info__)."""

from __future__ import annotations

import math

import numpy as np
import pytest

import tensorsmith as ts


def test_constants_are_the_standards() -> None:
    assert (ts.e, ts.pi, ts.inf) == (math.e, math.pi, math.inf) and math.isnan(ts.nan)
    x = ts.asarray(np.arange(6.0).reshape(2, 3))
    assert ts.newaxis is None and x[:, ts.newaxis].shape == (2, 1, 3)
    assert {"e", "pi", "inf", "nan", "newaxis", "__array_namespace_info__"} <= set(ts.__all__)


def test_info_says_what_this_build_supports() -> None:
    info = ts.__array_namespace_info__()
    caps = info.capabilities()
    assert caps["max dimensions"] == 64 and caps["boolean indexing"] is True and caps["data-dependent shapes"] is True
    x = ts.asarray([3.0, 0.0, 5.0])
    assert x[x > 1.0].shape == (2,) and ts.nonzero(x)[0].shape == (2,)  # what the two capabilities promise
    with pytest.raises(ValueError, match="maximum supported dimension"):  # the limit it reports is the runtime's
        ts.zeros((1,) * 65)
    assert info.default_device() == ts.zeros(1).device and info.default_device() in info.devices()
    cuda = ts.cuda.device_count() if ts.cuda.is_available() else 0
    assert len(info.devices()) == 1 + cuda and [d.type for d in info.devices()[1:]] == ["cuda"] * cuda
    defaults = info.default_dtypes()
    assert defaults == {"real floating": ts.float64, "complex floating": ts.complex128, "integral": ts.int64, "indexing": ts.int64}
    assert ts.zeros(1).dtype == defaults["real floating"] and ts.full(1, 3).dtype == defaults["integral"]


def test_info_dtypes_by_kind() -> None:
    info = ts.__array_namespace_info__()
    everything = info.dtypes()
    assert list(everything) == ["bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
                                "float32", "float64", "complex64", "complex128"]  # fmt: skip
    assert all(everything[name] == ts.dtype(name) for name in everything)
    assert list(info.dtypes(kind="signed integer")) == ["int8", "int16", "int32", "int64"]
    assert list(info.dtypes(kind=("bool", "real floating"))) == ["bool", "float32", "float64"]
    assert info.dtypes(kind="complex floating") == {"complex64": ts.complex64, "complex128": ts.complex128}
    assert info.dtypes(device=info.default_device()) == everything
    with pytest.raises(ValueError, match="unknown dtype kind"):
        info.dtypes(kind="floating")
    with pytest.raises(ValueError, match="not one of this build's devices"):
        info.dtypes(device="tpu")
