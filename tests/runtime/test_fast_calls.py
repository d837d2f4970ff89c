"""The C-level entries in front of the pointwise bindings, the Tensor operators and __getitem__
(runtime/src/python/fast_calls.cpp): a call they take gives exactly what pybind11's path gives.

A keyword argument other than out=<a Tensor> (out=None among them) always sends a call down pybind11's path,
so each op is called both ways on the same operands and the results (dtype, shape, every bit) or errors (type
and message) compared; out=<a Tensor> is taken, and compared the same way against out=(tensor,), which is not.
"""

from __future__ import annotations

import operator
import pickle
import re
import sys
import threading
from pathlib import Path

import numpy as np
import pytest
import tensorsmith as ts
from tensorsmith_forge.catalog.model import load_catalog

from tests.helpers import op_function

ROOT = Path(__file__).resolve().parents[2]
CATALOG = load_catalog(ROOT)
FAST_OPS = [spec for spec in CATALOG.ops if spec.family.fast_calls]
SCALARS = [True, 3, -2, 0.5, -0.0, 1.5 + 2j, 2**70]
DUNDERS = {
    "__add__": operator.add, "__sub__": operator.sub, "__mul__": operator.mul, "__truediv__": operator.truediv,
    "__floordiv__": operator.floordiv, "__mod__": operator.mod, "__pow__": operator.pow, "__and__": operator.and_,
    "__or__": operator.or_, "__xor__": operator.xor, "__lshift__": operator.lshift, "__rshift__": operator.rshift,
    "__lt__": operator.lt, "__le__": operator.le, "__eq__": operator.eq, "__ne__": operator.ne,
    "__gt__": operator.gt, "__ge__": operator.ge, "__neg__": operator.neg, "__pos__": operator.pos,
    "__abs__": operator.abs, "__invert__": operator.invert,
}  # fmt: skip


def sample(dtype: str, seed: int, n: int = 6) -> ts.Tensor:
    values = np.random.default_rng(seed).integers(-3, 4, n)
    if dtype == "bool":
        return ts.asarray(values > 0)
    if dtype.startswith("uint"):
        values = np.abs(values)
    return ts.asarray(values.astype(np.float64)).astype(ts.dtype(dtype)) if dtype == "bfloat16" else ts.asarray(values.astype(dtype))


def outcome(fn, *args, **kwargs):
    """fn(*args, **kwargs)'s result as (dtype, shape, bytes), or its error as (type, message)."""
    try:
        result = fn(*args, **kwargs)
    except Exception as e:  # noqa: BLE001 - every error must match, whatever its type
        return ("error", type(e), str(e))
    if not isinstance(result, ts.Tensor):
        return ("value", result)
    host = np.asarray(result.astype(ts.float32) if result.dtype == ts.bfloat16 else result)
    return (result.dtype, result.shape, host.tobytes())


def operand_sets(spec, dtype: str):
    tensors = [sample(dtype, seed) for seed in range(spec.arity)]
    yield tensors
    if spec.arity > 1:
        for scalar in SCALARS:
            for i in range(spec.arity):
                yield [scalar if k == i else t for k, t in enumerate(tensors)]
        yield [tensors[0][1:2], *tensors[1:]]  # a broadcast one-element view
        yield [tensors[0][::2], *(t[1::2] for t in tensors[1:])]  # strided views


@pytest.mark.parametrize("spec", FAST_OPS, ids=lambda s: s.name)
def test_functions_give_what_pybind11_gives(spec) -> None:
    function = op_function(spec.name)
    assert type(function.__self__).__name__ == "_FastEntry" and function.__doc__, "no fast entry in front of pybind11's"
    for dtype in spec.dtypes:
        for operands in operand_sets(spec, dtype):
            fast = outcome(function, *operands)
            general = outcome(function, *operands, out=None)
            assert fast == general, f"{spec.name}({', '.join(map(repr, operands))}) [{dtype}]"


@pytest.mark.parametrize("spec", FAST_OPS, ids=lambda s: s.name)
def test_out_tensors_give_what_pybind11_gives(spec) -> None:
    """out= a tensor of the result's shape in every dtype (castable or not: numpy's same_kind rule refuses some,
    with the same error either way), a tensor of another shape, a broadcast (read-only) view; the tensor given
    is returned, written as pybind11's path writes it (out=(tensor,) takes that path)."""
    function = op_function(spec.name)
    for dtype in spec.dtypes:
        operands = [sample(dtype, seed) for seed in range(spec.arity)]
        shape = operands[0].shape  # every operand has the one shape
        makers = [lambda d=d: ts.zeros(shape, dtype=ts.dtype(d)) for d in ("bool", "int8", "int64", "float32", "float64", "complex64")]
        makers += [lambda: ts.zeros((2,)), lambda: ts.broadcast_to(ts.zeros((1,)), shape)]
        for make in makers:
            fast_target, general_target = make(), make()
            fast = outcome(function, *operands, out=fast_target)
            general = outcome(function, *operands, out=(general_target,))
            assert fast == general, f"{spec.name}{tuple(operands)!r} out={fast_target.dtype} {fast_target.shape} [{dtype}]"
            if fast[0] != "error":
                assert function(*operands, out=fast_target) is fast_target


@pytest.mark.parametrize("spec", [s for s in FAST_OPS if s.operators], ids=lambda s: s.name)
def test_operators_give_what_their_op_gives(spec) -> None:
    function = op_function(spec.name)
    for dtype in spec.dtypes:
        # A tensor on the left: with a scalar there, Python asks the tensor's reflected operator (2 > t is t < 2).
        for operands in (o for o in operand_sets(spec, dtype) if isinstance(o[0], ts.Tensor)):
            for dunder in spec.operators:
                if dunder in DUNDERS:  # the forward operators (the reflected ones: the test below)
                    got = outcome(DUNDERS[dunder], *operands)
                    assert got == outcome(function, *operands, out=None), f"{dunder} {operands!r} [{dtype}]"


def test_every_operator_and_method_has_its_entry() -> None:
    for spec in FAST_OPS:
        names = [d for d in spec.operators if not d.startswith("__i")] + ([spec.name] if any(v.value == "method" for v in spec.variants) else [])
        for name in names:
            function = ts.Tensor.__dict__[name].__func__
            assert type(function.__self__).__name__ == "_FastEntry", f"Tensor.{name}"
            assert function.__doc__.startswith(f"{name}(self"), f"Tensor.{name} lost pybind11's docstring"


def test_functions_pickle_by_name() -> None:
    for name in ("exp", "add", "power", "absolute"):
        assert pickle.loads(pickle.dumps(getattr(ts, name))) is getattr(ts, name)
    with pytest.raises(TypeError, match="cannot pickle"):
        pickle.dumps(ts.Tensor.__dict__["__mul__"].__func__)


def test_reflected_operators_and_comparisons_put_the_scalar_on_the_left() -> None:
    t = ts.asarray([1.0, 2.0, 4.0], dtype=ts.float32)
    for op, fn in [(operator.sub, ts.subtract), (operator.truediv, ts.divide), (operator.pow, ts.pow),
                   (operator.mod, ts.remainder), (operator.lt, ts.less), (operator.ge, ts.greater_equal)]:  # fmt: skip
        assert outcome(op, 3, t) == outcome(fn, 3, t, out=None)
        assert outcome(op, t, 3) == outcome(fn, t, 3, out=None)


def test_other_operands_keep_pythons_protocol() -> None:
    t = ts.asarray([1, 2, 3])

    class Left:  # Python asks the tensor first: it answers NotImplemented for what no op takes
        def __radd__(self, other):
            return "radd"

        def __eq__(self, other):
            return "eq"

    assert t + Left() == "radd"
    assert (t == Left()) == "eq"  # Python then asks the other object's reflected comparison
    assert (t == None) is False and (t != None) is True and (None == t) is False  # identity, as for any object
    assert (t == "abc") is False
    for op, symbol in [(operator.add, "+"), (operator.mul, "*"), (operator.and_, "&")]:
        with pytest.raises(TypeError, match=rf"unsupported operand type\(s\) for {re.escape(symbol)}: '.*Tensor' and 'NoneType'"):
            op(t, None)
    with pytest.raises(TypeError, match="'<' not supported between instances of '.*Tensor' and 'str'"):
        _ = t < "abc"
    np.testing.assert_array_equal(np.asarray(t == [1, 0, 3]), [True, False, True])  # array-likes stay operands

    class Right:
        def __add__(self, other):
            return "add"

        def __lt__(self, other):
            return "lt"

    assert Right() + t == "add"  # the left operand's own method first
    assert (Right() < t) == "lt"
    np.testing.assert_array_equal(np.asarray(np.arange(3) + t), np.arange(3) + np.array([1, 2, 3]))
    np.testing.assert_array_equal(np.asarray([1, 2, 3] * t), np.array([1, 4, 9]))
    assert outcome(operator.mul, np.float32(2), t) == outcome(ts.multiply, np.float32(2), t, out=None)


def test_keywords_and_gradients_take_the_general_path() -> None:
    x = ts.asarray([1.0, 2.0, 3.0])
    x.requires_grad = True
    y = (x * 2.0 + ts.exp(x))[1:]  # operators, a function and __getitem__ while x requires grad
    y.sum().backward()
    np.testing.assert_allclose(np.asarray(x.grad), [0.0, 2 + np.exp(2), 2 + np.exp(3)], rtol=1e-6)
    out = ts.empty(3)
    assert ts.exp(ts.asarray([0.0, 1.0, 2.0]), out=out) is out
    with pytest.raises(TypeError):
        ts.exp(ts.asarray([1.0]), ts.asarray([1.0]))  # too many positional arguments: pybind11's error


@pytest.mark.parametrize(
    "key",
    [slice(1, 3), 1, -1, (Ellipsis, None), (slice(None, None, -2),), (1, slice(None)), [0, 2], (0, [1, 0])],
    ids=repr,
)
def test_subscript_gives_what_getitem_gives(key) -> None:
    a = np.arange(12.0).reshape(3, 4)
    t = ts.asarray(a)
    got = t[key]
    np.testing.assert_array_equal(np.asarray(got), a[key])
    assert outcome(operator.getitem, t, key) == outcome(t.__getitem__, key)
    with pytest.raises(IndexError):
        t[5]


@pytest.mark.parametrize("shape", [(), (3,), (2, 3), (2, 3, 4), (1, 0, 5)])
def test_T_and_mT_give_numpys_views_and_errors(shape) -> None:
    """t.T and t.mT come from a C getter while nothing records gradients: the same views (strides, shared
    memory), the same refusal of mT below two axes, read-only, with the properties' docs."""
    a = np.arange(int(np.prod(shape)), dtype=np.float32).reshape(shape)
    t = ts.asarray(a)
    assert np.asarray(t.T).tolist() == a.T.tolist() and t.T.strides == a.T.strides
    if len(shape) >= 2:
        assert t.mT.strides == np.swapaxes(a, -1, -2).strides
        np.testing.assert_array_equal(np.asarray(t.mT), np.swapaxes(a, -1, -2))
        if a.size:
            t.mT[..., 0, 0] = -1.0  # a view of a's memory
            assert (a[..., 0, 0] == -1.0).all()
    else:
        with pytest.raises(ValueError, match="ndim < 2"):
            t.mT
    with pytest.raises(AttributeError):
        t.T = t
    assert ts.Tensor.T.__doc__ == "The tensor with all axes reversed."
    assert ts.Tensor.mT.__doc__ == "The tensor with its last two axes swapped."


def test_T_and_mT_record_gradients_through_the_property() -> None:
    w = ts.asarray(np.arange(6.0).reshape(2, 3))
    w.requires_grad = True
    (w.T * ts.asarray([[1.0, 2.0]])).sum().backward()  # grad of T: the seed transposed back
    np.testing.assert_array_equal(np.asarray(w.grad), [[1.0, 1.0, 1.0], [2.0, 2.0, 2.0]])
    w.grad = None
    (w.mT * ts.asarray([[1.0, 2.0]])).sum().backward()
    np.testing.assert_array_equal(np.asarray(w.grad), [[1.0, 1.0, 1.0], [2.0, 2.0, 2.0]])
    assert w.mT.grad_fn is not None and w.T.grad_fn is not None



RESHAPES = [(6,), ((6,),), (2, 3), ((3, 2),), ([1, 6],), (-1,), (3, -1), ((),), (np.int64(2), 3), (2, 2), (-1, -1),
            (2.0, 3), ("23",), ((2, "3"),), (2, None)]  # fmt: skip


@pytest.mark.parametrize("shape", RESHAPES, ids=repr)
def test_reshape_gives_what_the_binding_gives(shape) -> None:
    """t.reshape(*shape) comes from a C entry while nothing records gradients; with a tensor that requires grad
    alive, every call takes pybind11's binding: the same views (strides, shared memory) and the same errors."""
    a = np.arange(6.0)
    t = ts.asarray(a)
    taken = outcome(t.reshape, *shape)
    strides = t.reshape(*shape).strides if taken[0] != "error" else None
    witness = ts.asarray([1.0])
    witness.requires_grad = True  # grad mode on and a tensor requiring grad alive: the general path
    assert outcome(t.reshape, *shape) == taken
    if strides is not None:
        assert t.reshape(*shape).strides == strides
    del witness
    if taken[0] != "error":
        view = t.reshape(*shape)
        view[(0,) * view.ndim] = -1.0  # a view of a's memory
        assert a[0] == -1.0
    with pytest.raises(TypeError):
        t.reshape()

ASTYPE_TARGETS = [ts.float64, ts.float32, ts.int8, ts.bool, ts.complex64, ts.bfloat16, "float16", np.float64, None, 3]


@pytest.mark.parametrize("dtype", ASTYPE_TARGETS, ids=repr)
@pytest.mark.parametrize("source", ["float32", "int16", "bool", "complex128"])
def test_astype_gives_what_the_binding_gives(source, dtype) -> None:
    """t.astype(dtype) and ts.astype(t, dtype) come from a C entry while nothing records gradients; copy=True
    (a keyword: the general path) and a tensor requiring grad alive take pybind11's binding and the Python
    function: the same values, dtypes and errors, and always a new tensor."""
    t = sample(source, 5)
    taken = [outcome(t.astype, dtype), outcome(ts.astype, t, dtype)]
    assert taken[0] == taken[1]
    assert outcome(t.astype, dtype, copy=True) == taken[0]
    witness = ts.asarray([1.0])
    witness.requires_grad = True  # grad mode on and a tensor requiring grad alive: the general path
    assert [outcome(t.astype, dtype), outcome(ts.astype, t, dtype)] == taken
    del witness
    if taken[0][0] != "error":
        copy = ts.astype(t, dtype)
        assert copy is not t and np.shares_memory(np.asarray(copy), np.asarray(t)) is False


@pytest.mark.parametrize("source", ["float32", "int16", "bool", "complex128", "bfloat16"])
def test_copy_gives_what_the_binding_gives(source) -> None:
    """t.copy() comes from a C entry while nothing records gradients, pybind11's binding otherwise: the same
    values and dtype, contiguous, in new memory, from a strided view too; extra arguments are the binding's
    TypeError."""
    t = sample(source, 7)
    view = t[::2]
    taken = [outcome(t.copy), outcome(view.copy)]
    witness = ts.asarray([1.0])
    witness.requires_grad = True  # the general path
    assert [outcome(t.copy), outcome(view.copy)] == taken
    del witness
    for original in (t, view):
        copy = original.copy()
        assert copy is not original and copy.strides == ts.empty(original.shape, dtype=original.dtype).strides
        before = np.asarray(original.astype(ts.complex128))
        copy[...] = 0  # new memory: the original keeps its values
        np.testing.assert_array_equal(np.asarray(original.astype(ts.complex128)), before)
        assert not np.asarray(copy.astype(ts.complex128)).any()
    assert type(ts.Tensor.__dict__["copy"].__func__.__self__).__name__ == "_FastEntry"
    with pytest.raises(TypeError):
        t.copy(1)


def test_astype_entries_keep_the_functions_errors_keywords_and_name() -> None:
    t = ts.asarray([1.5, -2.0])
    assert type(ts.astype.__self__).__name__ == "_FastEntry"
    assert type(ts.Tensor.__dict__["astype"].__func__.__self__).__name__ == "_FastEntry"
    assert ts.astype.__doc__.startswith("x converted to `dtype`")
    with pytest.raises(TypeError, match="astype: x must be a tensorsmith tensor, not list"):
        ts.astype([1.0], ts.float32)
    assert ts.astype(t, ts.float64, copy=False) is t  # keywords: the Python function's path
    assert ts.astype(t, t.dtype, copy=False) is t
    assert pickle.loads(pickle.dumps(ts.astype)) is ts.astype
    with pytest.raises(TypeError):
        ts.astype(t)


def test_python_scalar_operands_are_never_shared_between_results() -> None:
    t = ts.asarray([1.0, 2.0])
    results = [t * float(k) for k in range(50)]
    for k, r in enumerate(results):
        np.testing.assert_array_equal(np.asarray(r), [k, 2.0 * k])
    np.testing.assert_array_equal(np.asarray(ts.where(t > 1.5, 7.0, 9.0)), [9.0, 7.0])  # two scalars of one dtype

    errors: list[str] = []

    def work(k: float) -> None:
        for _ in range(2000):
            r = ts.add(t, k)
            if np.asarray(r).tolist() != [1.0 + k, 2.0 + k]:
                errors.append(f"{k}: {np.asarray(r)}")

    threads = [threading.Thread(target=work, args=(float(k),)) for k in (10, 20)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    assert errors == []


def test_fast_calls_leak_no_references() -> None:
    t = ts.asarray([1.0, 2.0, 3.0])
    before = sys.getrefcount(t)
    for _ in range(1000):
        ts.exp(t)
        t * 2.0
        t[1:]
        ts.exp(t, out=None)
        t.T
    assert sys.getrefcount(t) == before


# ---- keyword calls: every other op's function and method --------------------------------------------------
# pybind11 makes a string of each argument's name on every keyword call; the entry in front places keywords
# itself and runs the binding's own code. Each call below goes both ways (the entry, and the binding it is in
# front of) and must give the same result or the same error.

KEYWORD_VALUES = [None, 0, -1, 1, 7, True, False, np.bool_(True), np.int64(1), 1.5, np.float32(0.5), (0, 1), "left", "sum", ts.float64]


def keyword_entry(function):
    """The binding behind `function`'s keyword entry, or None where it has none."""
    entry = getattr(function, "__self__", None)
    if type(entry).__name__ != "_FastEntry" or any(spec.name == function.__name__ for spec in FAST_OPS):
        return None
    return entry.binding


def tensor_arguments(spec) -> list:
    """Operands for the op's tensor arguments: integer ones where the argument takes integers only."""
    operands = []
    for argument in spec.signature.arguments:
        if argument.type.base.value != "Tensor" or argument.kind == "keyword":
            continue
        integers = bool(argument.type.dtype_constraint) and not {"real", "floating", "numeric"} & set(argument.type.dtype_constraint)
        make = (lambda seed: ts.asarray(np.random.default_rng(seed).integers(0, 3, (3, 4)))) if integers else (lambda seed: sample("float64", seed, 12).reshape((3, 4)))
        operands.append([make(0), make(1)] if argument.type.is_list or argument.kind == "variadic" else make(len(operands)))
    return operands


def keyword_calls(spec):
    """(positional operands, keywords) pairs: each keyword alone with each value, all at their defaults, one
    unknown, and one naming a positional argument."""
    operands = tensor_arguments(spec)
    keywords = [a for a in spec.signature.arguments if a.kind in ("keyword", "either") and a.type.base.value != "Tensor"]
    yield operands, {a.name: a.default_value for a in keywords if a.default is not None}
    for argument in keywords:
        for value in KEYWORD_VALUES:
            yield operands, {argument.name: value}
    yield operands, {"no_such_argument": 1}
    first = spec.signature.arguments[0].name
    yield operands[1:], {first: operands[0]} if operands else {}
    yield operands, {first: operands[0]} if operands else {}


KEYWORD_SPECS = [spec for spec in (*CATALOG.ops, *CATALOG.composites) if keyword_entry(op_function(spec.name)) is not None]


def test_every_function_pybind11_binds_with_keywords_has_an_entry() -> None:
    """Pointwise ops have their own entries; every other op and composite whose binding takes a keyword has a
    keyword entry for its function and method (matmul(x1, x2, /) takes none; a variadic one, meshgrid's
    *arrays, is bound with *args, which the entry leaves to pybind11), and so has every other function of the
    module with a keyword (asarray(obj, dtype=...))."""
    specs = [*CATALOG.ops, *CATALOG.composites]
    with_keywords = {s.name for s in specs if any(a.kind != "positional" for a in s.signature.arguments)
                     and not any(a.kind == "variadic" for a in s.signature.arguments)}  # fmt: skip
    assert {s.name for s in KEYWORD_SPECS} == with_keywords - {s.name for s in FAST_OPS}
    for spec in KEYWORD_SPECS:
        if any(v.value == "method" for v in getattr(spec, "variants", ())):
            assert keyword_entry(ts.Tensor.__dict__[spec.name].__func__) is not None, f"Tensor.{spec.name}"
    for name in ("asarray", "from_dlpack"):  # hand-written bindings, not in the catalog
        assert keyword_entry(getattr(ts._C, name)) is not None, name


def described(result):
    """A result as comparable values: tensors as (dtype, shape, bytes), tuples item by item."""
    if isinstance(result, tuple | list):
        return type(result).__name__, [described(item) for item in result]
    if isinstance(result, ts.Tensor):
        return outcome(lambda: result)
    return result


def both_ways(function, binding, *args, **kwargs):
    got, expected = outcome(function, *args, **kwargs), outcome(binding, *args, **kwargs)
    if function.__name__.startswith("empty") and isinstance(got[0], ts.DType):
        got, expected = got[:2], expected[:2]  # uninitialised memory: its dtype and shape alone are the result
    return (got[0], described(got[1])) if got[0] == "value" else got, (expected[0], described(expected[1])) if expected[0] == "value" else expected


@pytest.mark.parametrize("spec", KEYWORD_SPECS, ids=lambda s: s.name)
def test_keyword_calls_give_what_pybind11_gives(spec) -> None:
    function = op_function(spec.name)
    binding = keyword_entry(function)
    assert function.__doc__ == binding.__doc__ and function.__name__ == spec.name
    method = ts.Tensor.__dict__[spec.name].__func__ if any(v.value == "method" for v in getattr(spec, "variants", ())) else None
    for operands, keywords in keyword_calls(spec):
        got, expected = both_ways(function, binding, *operands, **keywords)
        assert got == expected, f"{spec.name}(*{operands!r}, **{keywords!r})"
        if method is not None and operands and isinstance(operands[0], ts.Tensor):
            got, expected = both_ways(method, keyword_entry(method), *operands, **keywords)
            assert got == expected, f"Tensor.{spec.name}(*{operands!r}, **{keywords!r})"


def test_keyword_calls_record_gradients_and_leak_no_references() -> None:
    grads = []
    for sort, maximum in ((ts.sort, ts.max), (keyword_entry(ts.sort), keyword_entry(ts.max))):
        x = ts.asarray([[1.0, 5.0], [3.0, 2.0]])
        x.requires_grad = True
        ts.sum(sort(x, axis=1, descending=True)[:, :1] * maximum(x, axis=0, keepdims=True)).backward()
        grads.append(np.asarray(x.grad))
    np.testing.assert_array_equal(grads[0], grads[1])
    assert np.count_nonzero(grads[0]) == 2  # the sort's first column and the maxima: the 5 and the 3
    t = ts.asarray([[1.0, 2.0], [3.0, 4.0]])
    before = sys.getrefcount(t)
    for _ in range(1000):
        ts.sum(t, axis=1)
        t.max(axis=0, keepdims=True)
        with pytest.raises(ts.AxisError):
            ts.sum(t, axis=5)  # an error the binding's code raises, translated by the entry
    assert sys.getrefcount(t) == before
    assert pickle.loads(pickle.dumps(ts.sum)) is ts.sum
