"""A numpy-style script that runs unchanged with tensorsmith in numpy's place: creation, arithmetic, masks,
sorting, unique values, reductions and complex numbers. Run it to see both libraries' answers side by side:

    python examples/numpy_style.py

`script(np)` is the whole program, written against the namespace it is given (the Array API functions both
libraries have); tests/runtime/test_numpy_style_script.py checks that tensorsmith's answers are numpy's.
"""

from __future__ import annotations

from typing import Any


def script(np: Any) -> dict[str, Any]:
    """The program, with `np` either numpy or tensorsmith; returns what it computed, by name."""
    out: dict[str, Any] = {}
    # creation
    x = np.reshape(np.arange(12, dtype=np.float64), (3, 4)) / 2 - 2.5
    out["linspace"] = np.linspace(0.0, 1.0, num=5)
    out["eye + ones"] = np.eye(3) + np.ones((3, 3), dtype=np.float32)
    # arithmetic and broadcasting, Python scalars included
    out["x * row + 1"] = x * np.asarray([1.0, -1.0, 2.0, 0.5]) + 1
    out["integer division"] = np.asarray([7, -7, 9]) // 2
    out["exp(-x**2)"] = np.exp(-(x**2))
    # masks
    positive = x > 0
    out["x[x > 0]"] = x[positive]
    out["where"] = np.where(positive, x, 0.0)
    out["count"] = np.sum(positive)
    # sorting and unique values (sorted, as np.unique gives them)
    data = np.asarray([3, 1, 4, 1, 5, 9, 2, 6, 5, 3, 5])
    out["sort"] = np.sort(data)
    out["argsort"] = np.argsort(data, stable=True)
    out["unique"] = np.sort(np.unique_values(data))
    out["counts"] = np.unique_counts(data).counts[np.argsort(np.unique_counts(data).values, stable=True)]
    # reductions
    out["sum(axis=0)"] = np.sum(x, axis=0)
    out["mean"] = np.mean(x)
    out["std(axis=1)"] = np.std(x, axis=1)
    out["max, argmax"] = (np.max(x), np.argmax(x))
    out["cumulative_sum"] = np.cumulative_sum(data)
    out["matmul"] = x @ np.matrix_transpose(x)
    # complex numbers
    z = np.asarray([1 + 2j, -3j, 0.5 + 0.5j])
    out["|z|"] = np.abs(z)
    out["z * conj(z)"] = z * np.conj(z)
    out["sqrt(z)"] = np.sqrt(z)
    out["exp(1j * pi)"] = np.exp(1j * np.asarray(np.pi))
    out["z @ z"] = z @ z
    return out


if __name__ == "__main__":
    import numpy

    import tensorsmith

    theirs, ours = script(numpy), script(tensorsmith)
    for name, value in theirs.items():
        print(f"{name}:\n  numpy:       {value!r}\n  tensorsmith: {ours[name]!r}")
