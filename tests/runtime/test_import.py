"""`import tensorsmith` stays light: ml_dtypes (about 0.6 s to import, its numpy loops) and importlib.metadata
load when something needs them (bfloat16 meeting numpy, ts.__version__), not with the package."""

import importlib.metadata
import subprocess
import sys

# Run in a fresh interpreter: this test process has imported both long ago.
PROGRAM = """
import sys
import numpy as np
import tensorsmith as ts

assert "ml_dtypes" not in sys.modules and "importlib.metadata" not in sys.modules, "imported by the package"
ts.finfo(ts.float32), ts.asarray(np.arange(3.0)) + 1, ts.asarray([1.0], dtype=ts.float16).__array__()
assert "ml_dtypes" not in sys.modules, "imported by an op without bfloat16"

# bfloat16 still meets numpy without the program importing ml_dtypes itself
t = ts.asarray([1.5, 2.25, -3.0], dtype="bfloat16")
a = np.asarray(t)
assert a.dtype.name == "bfloat16" and a.astype(np.float32).tolist() == [1.5, 2.25, -3.0], a
assert ts.asarray(a).dtype == ts.bfloat16 and ts.dtype(a.dtype) == ts.bfloat16
assert ts.finfo(ts.bfloat16).eps == 2.0 ** -7 and ts.finfo(ts.bfloat16).bits == 16
print(ts.__version__)
"""


def test_ml_dtypes_and_metadata_load_when_first_needed() -> None:
    result = subprocess.run([sys.executable, "-c", PROGRAM], capture_output=True, text=True, timeout=300, check=False)
    assert result.returncode == 0, result.stdout + result.stderr
    assert result.stdout.strip() == importlib.metadata.version("tensorsmith")
