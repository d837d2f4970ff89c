"""Numpy references: the safe subset compiles and computes; everything else is rejected statically.

None of the rejected sources is ever compiled or run: the tests only call parse_reference on them.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from tensorsmith_forge.catalog.model import load_catalog
from tensorsmith_forge.catalog.reference import SAFE_BUILTINS, ReferenceError_, parse_reference

ROOT = Path(__file__).resolve().parents[2]
RNG = np.random.default_rng(0)


def compiled(source: str, params: list[str]):
    return parse_reference(source, params).compile(params)


# ---- safe references compute the right thing ---------------------------------------------------


def test_expression_over_the_arguments() -> None:
    a, b = RNG.normal(size=(3, 4)), RNG.normal(size=(3, 4))
    fn = compiled("np.add(x1, x2)", ["x1", "x2"])
    np.testing.assert_array_equal(fn(a, b), a + b)


def test_keyword_arguments_are_not_taken_for_variables() -> None:
    x = RNG.normal(size=(2, 3, 4))
    fn = compiled("np.sum(x, axis=axis, keepdims=keepdims)", ["x", "axis", "keepdims"])
    np.testing.assert_allclose(fn(x, 1, True), x.sum(axis=1, keepdims=True))
    assert fn(x, (0, 2), False).shape == (3,)


def test_operators_conditionals_and_comparisons() -> None:
    x = np.array([-2.0, -0.5, 0.0, 3.0])
    fn = compiled("np.where(x > 0, x, -x) * 2 + 1 if x.ndim == 1 else x", ["x"])
    np.testing.assert_array_equal(fn(x), np.abs(x) * 2 + 1)


def test_attributes_methods_subscripts_and_builtins() -> None:
    x = np.arange(12, dtype=np.int32).reshape(3, 4)
    fn = compiled("x.astype(np.float64).T[..., ::2] + max(len(x), abs(-1))", ["x"])
    expected = x.astype(np.float64).T[..., ::2] + 3
    result = fn(x)
    assert result.dtype == np.float64
    np.testing.assert_array_equal(result, expected)


def test_function_with_locals_tuple_assignment_and_if() -> None:
    source = """
def clamp(x, low, high):
    lo, hi = (low, high) if low <= high else (high, low)
    if x.ndim == 0:
        return np.clip(x, lo, hi)
    y = np.minimum(x, hi)
    return np.maximum(y, lo)
"""
    reference = parse_reference(source, ["x", "low", "high"])
    assert reference.is_function
    assert reference.source == source.strip()
    fn = reference.compile(["x", "low", "high"])
    x = np.linspace(-3, 3, 13)
    np.testing.assert_array_equal(fn(x, 1.0, -1.0), np.clip(x, -1.0, 1.0))
    assert fn(np.float64(5.0), -1.0, 1.0) == 1.0


def test_softmax_function_matches_a_direct_computation() -> None:
    source = """def softmax(x, axis):
    xf = x.astype(np.result_type(x.dtype, np.float16))
    shifted = xf - np.max(xf, axis=axis, keepdims=True)
    e = np.exp(shifted)
    return e / np.sum(e, axis=axis, keepdims=True)"""
    fn = compiled(source, ["x", "axis"])
    x = RNG.normal(size=(4, 5)) * 50  # large enough that the naive formula would overflow for some rows
    e = np.exp(x - x.max(axis=-1, keepdims=True))
    np.testing.assert_allclose(fn(x, -1), e / e.sum(axis=-1, keepdims=True), rtol=1e-12)
    np.testing.assert_allclose(fn(x, 0).sum(axis=0), np.ones(5), rtol=1e-12)
    # integer inputs are computed in the float dtype numpy picks for them
    assert fn(np.arange(6, dtype=np.uint8).reshape(2, 3), -1).dtype == np.float16


def test_expression_reference_is_not_a_function() -> None:
    reference = parse_reference("  np.negative(x)  \n", ["x"])
    assert not reference.is_function
    assert reference.source == "np.negative(x)"


def test_compiled_references_only_see_the_safe_builtins() -> None:
    fn = compiled("x", ["x"])
    assert fn.__globals__["__builtins__"] is SAFE_BUILTINS
    assert "open" not in SAFE_BUILTINS and "__import__" not in SAFE_BUILTINS
    assert fn.__globals__["np"] is np


def _arguments_for(spec, shape=(3, 3)):
    args = []
    for i, arg in enumerate(spec.signature.arguments):
        if arg.type.is_tensor:
            if spec.promotion.value == "where" and i == 0:
                args.append(RNG.normal(size=shape) > 0)
            elif "float64" in spec.dtypes:
                args.append(RNG.uniform(0.5, 2.0, size=shape))  # inside every op's domain (log, sqrt, pow)
            else:  # integer ops (bitwise_and): small counts, inside every shift's width
                args.append(RNG.integers(1, 3, size=shape).astype(spec.dtypes[-1]))
        elif arg.default is None:  # an update op's own float arguments (learning rate, betas): all required
            args.append(0.5)
        else:
            args.append(arg.default_value)
    return args


def test_every_catalog_reference_runs_and_fits_its_family() -> None:
    catalog = load_catalog(ROOT)
    assert len(catalog.ops) >= 40
    for spec in catalog.ops:
        params = [a.name for a in spec.signature.arguments]
        fn = spec.reference.compile(params)
        # scans take no axis only on 1-D inputs (as numpy's cumulative_sum)
        result = np.asarray(fn(*_arguments_for(spec, (9,) if spec.family.name == "scan" else (3, 3))))
        expected_shape = {
            "pointwise": (3, 3),
            "normalization": (3, 3),
            "standardization": (3, 3),
            "contraction": (3, 3),
            "reduction": (),  # axis=None reduces everything
            "index_reduction": (),
            "scan": (9,),
            "sort": (3, 3),
            "update": (spec.arity - 1, 3, 3),  # the new state tensors, stacked
        }[spec.family.name]
        assert result.shape == expected_shape, spec.name
        if spec.promotion.value == "reduce_index":  # argmax, argmin, argsort
            assert result.dtype == np.intp, spec.name


# ---- unsafe references are rejected ---------------------------------------------------------------

UNSAFE_EXPRESSIONS = [
    ("__import__('os').system('true')", "unknown name '__import__'"),
    ("open('/etc/passwd').read()", "unknown name 'open'"),
    ("x.__class__", "private attribute '__class__'"),
    ("x.T.__class__.__mro__", "private attribute"),
    ("np._core", "private attribute '_core'"),
    ("x._private_thing()", "private attribute '_private_thing'"),
    ("(lambda: x)()", "'Lambda' is not allowed"),
    ("eval('x')", "unknown name 'eval'"),
    ("exec('x = 1')", "unknown name 'exec'"),
    ("getattr(x, 'T')", "unknown name 'getattr'"),
    ("globals()", "unknown name 'globals'"),
    ("vars(np)", "unknown name 'vars'"),
    ("type(x)", "unknown name 'type'"),
    ("print(x)", "unknown name 'print'"),
    ("np.add(x, y)", "unknown name 'y'"),
    ("os.getcwd()", "unknown name 'os'"),
    ("(z := x)", "'NamedExpr' is not allowed"),
    ("np.sum(v for v in x)", "'GeneratorExp' is not allowed"),
    ("[v for v in x]", "unknown name 'v'"),
    ("np.add(x,", "not a Python expression"),
    ("x = 1", "not a Python expression"),
    ("import os", "not a Python expression"),
    ("", "empty reference"),
]


@pytest.mark.parametrize(("source", "message"), UNSAFE_EXPRESSIONS, ids=[s or "<empty>" for s, _ in UNSAFE_EXPRESSIONS])
def test_unsafe_expression_is_rejected(source: str, message: str) -> None:
    with pytest.raises(ReferenceError_) as info:
        parse_reference(source, ["x"])
    assert message in str(info.value)


UNSAFE_FUNCTIONS = [
    ("def f(x):\n    import os\n    return x", "'Import' statements are not allowed", 2),
    ("def f(x):\n    y = x\n    from os import path\n    return y", "'ImportFrom' statements are not allowed", 3),
    ("def f(x):\n    while True:\n        pass\n    return x", "'While' statements are not allowed", 2),
    ("def f(x):\n    for i in range(3):\n        x = x + i\n    return x", "'For' statements are not allowed", 2),
    ("def f(x):\n    with open('f') as h:\n        return x", "'With' statements are not allowed", 2),
    ("def f(x):\n    try:\n        return x\n    except Exception:\n        return x", "'Try' statements are not allowed", 2),
    ("def f(x):\n    global np\n    return x", "'Global' statements are not allowed", 2),
    ("def f(x):\n    del x\n    return 1", "'Del' statements are not allowed", 2),
    ("def f(x):\n    class C:\n        pass\n    return x", "'ClassDef' statements are not allowed", 2),
    ("def f(x):\n    return __import__('os')", "unknown name '__import__'", 2),
    ("def f(x):\n    y = x.__dict__\n    return y", "private attribute '__dict__'", 2),
    ("def f(x):\n    return x + z", "unknown name 'z'", 2),
    ("def f(x):\n    g = lambda: x\n    return g()", "'Lambda' is not allowed", 2),
    ("def f(x):\n    return open('/etc/passwd')", "unknown name 'open'", 2),
    ("def f(x):\n    return np.load('f.npy', allow_pickle=True)", "attribute 'load' is not allowed", 2),
    ("@np.vectorize\ndef f(x):\n    return x", "not a Python expression", None),  # does not start with 'def'
    ("def f(x):\n    return x\nx = 1", "a single 'def' and nothing else", 1),
    ("async def f(x):\n    return x", "not a Python expression", None),
    ("def f(y):\n    return y", "parameters must be the op's arguments ['x']", 1),
    ("def f(x, extra):\n    return x", "parameters must be the op's arguments ['x']", 1),
    ("def f(x):\n    return (x", "not a Python function", 2),
]


@pytest.mark.parametrize(("source", "message", "line"), UNSAFE_FUNCTIONS, ids=[f"{i}-{m}" for i, (_, m, _) in enumerate(UNSAFE_FUNCTIONS)])
def test_unsafe_function_is_rejected_at_its_line(source: str, message: str, line: int | None) -> None:
    with pytest.raises(ReferenceError_) as info:
        parse_reference(source, ["x"])
    assert message in str(info.value)
    if line is not None:
        assert info.value.line == line


def test_function_parameters_must_be_in_the_ops_order() -> None:
    with pytest.raises(ReferenceError_, match=r"\['x1', 'x2'\], got \['x2', 'x1'\]"):
        parse_reference("def f(x2, x1):\n    return x1", ["x1", "x2"])
    assert parse_reference("def f(x1, x2):\n    return x1", ["x1", "x2"]).is_function


# ---- known holes (generator bugs; see the report) ------------------------------------------------


def test_nested_def_cannot_smuggle_a_dunder_chain_in_a_default() -> None:
    source = "def f(x):\n    def g(a=x.__class__.__mro__[-1].__subclasses__()):\n        return 1\n    return x"
    with pytest.raises(ReferenceError_):
        parse_reference(source, ["x"])


def test_syntax_error_line_inside_a_function() -> None:
    with pytest.raises(ReferenceError_) as info:
        parse_reference("def f(x):\n    y = 1 2\n    return y", ["x"])
    assert info.value.line == 2


def test_numpy_ctypes_is_not_reachable() -> None:
    with pytest.raises(ReferenceError_):
        parse_reference("np.ctypeslib.ctypes.CDLL(None).system(b'true')", ["x"])


@pytest.mark.parametrize("source", ["np.save('leak.npy', x)", "x.tofile('leak.bin')", "np.load('leak.npy', allow_pickle=True)"])
def test_numpy_file_io_is_not_reachable(source: str) -> None:
    with pytest.raises(ReferenceError_):
        parse_reference(source, ["x"])


def test_reference_cannot_monkeypatch_numpy() -> None:
    with pytest.raises(ReferenceError_):
        parse_reference("def f(x):\n    np.add = np.subtract\n    return x", ["x"])
