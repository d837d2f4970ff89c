"""The README's numpy-style script (examples/numpy_style.py) gives numpy's answers with tensorsmith in numpy's place."""

from __future__ import annotations

import importlib.util

import numpy as np
import pytest

import tensorsmith as ts
from tests.helpers import ROOT

_spec = importlib.util.spec_from_file_location("numpy_style", ROOT / "examples" / "numpy_style.py")
numpy_style = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(numpy_style)

NUMPY = numpy_style.script(np)
TENSORSMITH = numpy_style.script(ts)


@pytest.mark.parametrize("name", list(NUMPY))
def test_script_gives_numpy_answers(name: str) -> None:
    expected, got = NUMPY[name], TENSORSMITH[name]
    pairs = zip(expected, got) if isinstance(expected, tuple) else [(expected, got)]
    for want, have in pairs:
        assert isinstance(have, ts.Tensor), f"{name}: {type(have).__name__}"
        have, want = np.asarray(have), np.asarray(want)
        assert have.dtype == want.dtype and have.shape == want.shape, (name, have.dtype, want.dtype, have.shape, want.shape)
        np.testing.assert_allclose(have, want, rtol=1e-12, atol=1e-15, err_msg=name)
