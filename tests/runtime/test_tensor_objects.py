"""Python Tensor objects are made and freed without pybind11's instance registry (runtime/src/python/
tensor_objects.cpp, tensorsmith/tensor_caster.h): every way a tensor reaches Python must still free what it
holds, keep its type's reference count balanced, and behave as any other object (weak references, exceptions)."""

import gc
import sys
import weakref

import numpy as np
import pytest

import tensorsmith as ts


def test_tensors_take_the_direct_path() -> None:
    """tensor_objects.cpp keeps pybind11's own instance code where pybind11 lays the Tensor class out otherwise
    than it assumes (a future pybind11 could): still correct, but each small op pays that cost again."""
    assert ts._C._direct_tensor_objects is True


# Each way a tensor reaches Python: a pointwise fast entry, an operator slot, __getitem__, a fast view property,
# a pybind11-bound method and function (returned by value through the type caster), a reduction, a list's item.
# The views share their input's storage; the others make their own.
VIEWS = {
    "getitem": lambda t: t[1:],
    "view property": lambda t: t.T,
    "bound method": lambda t: t.reshape(2, 4),
    "bound function": lambda t: ts.reshape(t, (4, 2)),
    "list item": lambda t: ts.unstack(t.reshape(2, 4))[1],
}
MAKERS = {
    **VIEWS,
    "fast function": lambda t: ts.exp(t),
    "operator slot": lambda t: t * 2.0,
    "reduction": lambda t: ts.sum(t, axis=0),
    "copy": lambda t: ts.asarray(t, copy=True),
}


@pytest.mark.parametrize("how", sorted(VIEWS))
def test_a_view_of_foreign_memory_keeps_it_alive_and_lets_it_go(how):
    array = np.arange(8.0)
    before = sys.getrefcount(array)
    tensor = ts.asarray(array)  # shares the array's memory, holding one reference to it
    views = [VIEWS[how](tensor) for _ in range(50)]
    del tensor
    assert sys.getrefcount(array) == before + 1  # the views' shared storage holds it
    assert np.array_equal(np.asarray(views[-1]), np.asarray(VIEWS[how](ts.asarray(array.copy()))))
    del views
    assert sys.getrefcount(array) == before


@pytest.mark.parametrize("how", sorted(MAKERS))
def test_the_type_reference_count_balances(how):
    tensor = ts.asarray(np.arange(8.0))
    references = sys.getrefcount  # of the type, outside the asserts (pytest's rewriting keeps their parts)
    gc.collect()  # earlier tests' garbage would otherwise be freed between the counts
    before = references(ts.Tensor)
    made = [MAKERS[how](tensor) for _ in range(100)]
    during = references(ts.Tensor)
    del made
    gc.collect()
    after = references(ts.Tensor)
    assert during >= before + 100  # a heap type's instances each hold a reference to it
    assert after == before


def test_weak_references_die_with_the_tensor():
    made = ts.exp(ts.asarray(np.arange(4.0)))
    ref = weakref.ref(made)
    assert ref() is made
    del made
    assert ref() is None


def test_a_tensor_freed_while_an_exception_propagates():
    source = np.arange(4.0)
    before = sys.getrefcount(source)

    def fails():
        temporary = ts.exp(ts.asarray(source)).T  # freed as the frame unwinds, with the exception set
        raise KeyError(float(temporary[0]))

    with pytest.raises(KeyError) as raised:
        fails()
    assert raised.value.args == (1.0,)
    del raised
    assert sys.getrefcount(source) == before


def test_tensors_in_containers_and_cycles_are_freed():
    source = np.arange(6.0)
    before = sys.getrefcount(source)
    holder = {"t": ts.asarray(source).reshape(2, 3)}
    holder["self"] = holder  # a cycle only the collector frees
    holder["parts"] = list(ts.unstack(holder["t"]))
    del holder
    gc.collect()
    assert sys.getrefcount(source) == before
