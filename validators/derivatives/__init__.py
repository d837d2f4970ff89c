"""The gate's derivative check: every spec formula against finite differences of the spec's float64 numpy
reference (validators/derivatives/check.py).

A package of its own, outside the files a kernel verdict is keyed on (validators/*.py): derivative formulas
change no kernel, and checking them re-judges none."""
