"""No Python code can get a bound object whose C++ object was never constructed.

pybind11 lets `Cls.__new__(Cls)` allocate an instance without running a constructor, and any method of it
then read uninitialised memory (repr() of such a Tensor, DType or Device crashed the interpreter). Every
class in tensorsmith._C is found by walking the module, so a class added later is covered without editing
this file; the probes run in a fresh interpreter so that a crash fails the test instead of the worker.
"""

from __future__ import annotations

import pickle
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import tensorsmith as ts

# One instance of each bound class, made the public way.
INSTANCES = {
    "Tensor": "ts.asarray([1.0, 2.0])",
    "DType": "ts.float32",
    "Device": "ts.Device('cpu')",
    "_TensorIterator": "iter(ts.asarray([1.0, 2.0]))",
    "GradFn": "ts.exp(ts.asarray([1.0]).requires_grad_()).grad_fn",
}


def bound_classes() -> list[type]:
    return [v for v in vars(ts._C).values() if isinstance(v, type) and not issubclass(v, BaseException)]


def test_every_bound_class_has_an_instance_to_probe() -> None:
    assert sorted(c.__name__ for c in bound_classes()) == sorted(INSTANCES)


PROBE = textwrap.dedent(
    """
    import copy, pickle, sys
    import tensorsmith as ts

    name, make = sys.argv[1], sys.argv[2]
    cls = getattr(ts._C, name)
    base_new = cls.__mro__[1].__new__  # pybind11_object.__new__, which allocates without constructing

    def refused(label, call):
        try:
            obj = call()
        except TypeError as e:
            print(label, "TypeError", str(e).splitlines()[0], flush=True)
            return
        repr(obj)  # what crashed on an uninitialised object
        print(label, "ACCEPTED", type(obj).__name__, flush=True)

    refused("new", lambda: cls.__new__(cls))
    refused("base-new", lambda: base_new(cls))
    refused("call", lambda: cls())
    refused("subclass", lambda: type("Sub", (cls,), {}))
    # copy and pickle either round-trip (tested below) or refuse; they must not build an empty object.
    obj = eval(make)
    for label, call in (("copy", lambda: copy.copy(obj)), ("pickle", lambda: pickle.loads(pickle.dumps(obj)))):
        try:
            out = call()
            repr(out)
            print(label, "ok", flush=True)
        except TypeError as e:
            print(label, "TypeError", e, flush=True)
    print("survived", flush=True)
    """
)


@pytest.mark.parametrize("name", sorted(INSTANCES))
def test_uninitialised_instances_cannot_be_made(name: str) -> None:
    run = subprocess.run([sys.executable, "-c", PROBE, name, INSTANCES[name]], capture_output=True, text=True, timeout=120, check=False)
    assert run.returncode == 0 and run.stdout.endswith("survived\n"), f"rc={run.returncode}\n{run.stdout}\n{run.stderr}"
    lines = dict(line.split(" ", 1) for line in run.stdout.splitlines()[:-1])
    for probe in ("new", "base-new", "call", "subclass"):
        assert lines[probe].startswith("TypeError"), f"{name}: {probe}: {lines[probe]}"
    # Classes made only by the runtime say how to get one.
    if name in ("Tensor", "_TensorIterator"):
        assert "cannot be created directly" in lines["new"]
    assert "not an acceptable base type" in lines["subclass"]


def test_tensor_error_says_how_to_make_one() -> None:
    with pytest.raises(TypeError, match=r"Tensor objects cannot be created directly; use ts\.asarray\(\) or an op"):
        ts.Tensor()
    with pytest.raises(TypeError, match=r"Tensor objects cannot be created directly"):
        ts.Tensor.__new__(ts.Tensor)


@pytest.mark.parametrize("spelling", ["float32", np.int8, np.dtype("uint16"), float, "bfloat16", "bool"])
def test_dtype_constructor_is_ts_dtype(spelling) -> None:
    assert ts.DType(spelling) == ts.dtype(spelling)
    assert type(ts.DType(spelling)) is ts.DType


def test_dtype_constructor_rejects_what_ts_dtype_rejects() -> None:
    with pytest.raises(TypeError, match=r"numpy dtype 'complex256' is not supported by tensorsmith"):
        ts.DType(np.clongdouble)
    with pytest.raises(TypeError):
        ts.DType()


@pytest.mark.parametrize("name", ["bool", "int8", "uint64", "float16", "bfloat16", "float64"])
def test_dtypes_pickle_and_copy_as_themselves(name: str) -> None:
    import copy

    d = getattr(ts, name)
    assert pickle.loads(pickle.dumps(d)) == d
    assert copy.copy(d) == d and copy.deepcopy(d) == d
    assert b"eval" not in pickle.dumps(d), "a plain class reference, no code to evaluate on load"


def test_device_constructs_in_one_step_and_pickles() -> None:
    cpu = ts.Device("cpu")
    assert cpu == "cpu" and cpu == ts.asarray([1]).device and cpu.type == "cpu" and cpu.index == 0
    assert ts.Device(device="cpu") == cpu
    assert pickle.loads(pickle.dumps(cpu)) == cpu
    with pytest.raises(ValueError, match=r"expected a device like 'cpu', 'cuda' or 'cuda:1', got 'gpu'"):
        ts.Device("gpu")
