"""The CPU allocator's cache of freed medium and large blocks (runtime/src/core/storage.cpp), seen from Python
by the addresses new tensors get."""

from __future__ import annotations

import gc
from collections.abc import Iterator

import numpy as np
import pytest

import tensorsmith as ts

MEDIUM = (128 << 10) // 4  # float32 elements of the smallest cached block (kMediumBlock)


@pytest.fixture(autouse=True)
def no_collection() -> Iterator[None]:
    """No garbage collection inside a test: a cycle it freed could put a block of the same size in the cache
    between a test's frees and its allocations."""
    gc.collect()
    gc.disable()
    try:
        yield
    finally:
        gc.enable()


def address(t: ts.Tensor) -> int:
    return int(np.asarray(t).ctypes.data)  # the numpy view goes with the expression


def test_the_block_freed_last_comes_back_first() -> None:
    """A block of a size the cache holds several of: the one freed last, whose lines are likeliest still in
    cache (handing out the oldest made a GPT step's activations come back from memory)."""
    first, second = ts.empty(MEDIUM, dtype=ts.float32), ts.empty(MEDIUM, dtype=ts.float32)
    at_first, at_second = address(first), address(second)
    assert at_first != at_second
    del first
    del second
    assert address(again := ts.empty(MEDIUM, dtype=ts.float32)) == at_second
    assert address(ts.empty(MEDIUM, dtype=ts.float32)) == at_first
    del again


def test_blocks_of_another_size_are_not_handed_out() -> None:
    big = ts.empty(2 * MEDIUM, dtype=ts.float32)
    at_big = address(big)
    del big
    small = ts.empty(MEDIUM, dtype=ts.float32)
    assert address(small) != at_big
    assert address(ts.empty(2 * MEDIUM, dtype=ts.float32)) == at_big
