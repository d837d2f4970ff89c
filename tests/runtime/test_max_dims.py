"""At most 64 dims, as numpy (NPY_MAXDIMS): every way a shape comes from user input is checked, with numpy's
exception type; and basic indexing builds its view in one pass, so a huge key fails at once.

Indexing is also compared with numpy over many random keys, since it was rewritten as one pass.
"""

from __future__ import annotations

import random
import time

import numpy as np
import pytest

import tensorsmith as ts

def numpy_error(fn) -> type[BaseException]:
    with pytest.raises(Exception) as info:
        fn()
    return info.type


@pytest.mark.parametrize("ndim", [0, 1, 3])
def test_indexing_result_of_64_dims_and_no_more(ndim: int) -> None:
    a = np.zeros((1,) * ndim)
    t = ts.asarray(a)
    fits = (None,) * (64 - ndim)
    assert t[fits].shape == a[fits].shape == (1,) * 64
    over = fits + (None,)
    expected = numpy_error(lambda: a[over])
    with pytest.raises(expected, match=r"number of dimensions must be within \[0, 64\], indexing result would have 65"):
        t[over]
    with pytest.raises(expected, match=r"number of dimensions must be within \[0, 64\]"):
        t[over] = 1.0


def test_ints_make_room_for_new_axes() -> None:
    t = ts.asarray(np.zeros((2,) * 4))
    key = (0, 0, None) + (None,) * 61 + (Ellipsis,)
    assert t[key].shape == np.zeros((2,) * 4)[key].shape  # 4 - 2 + 62 = 64


def test_a_huge_key_fails_at_once() -> None:
    # Each None used to copy the whole shape: 100000 of them took over a minute.
    t = ts.asarray(np.zeros(3))
    start = time.perf_counter()
    with pytest.raises(IndexError, match=r"indexing result would have 100001"):
        t[(None,) * 100_000]
    with pytest.raises(IndexError, match=r"too many indices"):
        t[(slice(None),) * 100_000]
    assert time.perf_counter() - start < 5.0


@pytest.mark.parametrize(
    "ts_call, np_call",
    [
        (lambda: ts.asarray([1.0]).reshape((1,) * 65), lambda: np.asarray([1.0]).reshape((1,) * 65)),
        (lambda: ts.asarray([1.0]).reshape(*(1,) * 65), lambda: np.asarray([1.0]).reshape(*(1,) * 65)),
        (lambda: ts.reshape(ts.asarray([1.0]), (1,) * 65), lambda: np.reshape(np.asarray([1.0]), (1,) * 65)),
        (lambda: ts.asarray([1.0]).reshape((2,) * 65), lambda: np.asarray([1.0]).reshape((2,) * 65)),
        (lambda: ts.asarray([1.0]).reshape([1] * 100_000), lambda: np.asarray([1.0]).reshape([1] * 100_000)),
        (lambda: ts.broadcast_to(ts.asarray(1.0), (1,) * 65), lambda: np.broadcast_to(np.asarray(1.0), (1,) * 65)),
        (lambda: ts.broadcast_to(ts.asarray(1.0), (2,) * 65), lambda: np.broadcast_to(np.asarray(1.0), (2,) * 65)),
        (lambda: ts.expand_dims(ts.asarray(np.zeros((1,) * 64)), 0), lambda: np.expand_dims(np.zeros((1,) * 64), 0)),
        (lambda: ts.asarray(np.zeros((1,) * 64)).expand_dims(0), lambda: np.expand_dims(np.zeros((1,) * 64), 0)),
    ],
    ids=["reshape", "reshape-args", "ts.reshape", "reshape-wrong-size", "reshape-huge", "broadcast_to",
         "broadcast_to-big", "expand_dims", "expand_dims-method"],
)  # fmt: skip
def test_shapes_from_user_input_have_at_most_64_dims(ts_call, np_call) -> None:
    expected = numpy_error(np_call)
    assert expected is ValueError
    with pytest.raises(expected, match=r"maximum supported dimension for a tensor is currently 64, found \d+"):
        ts_call()


def test_asarray_of_a_65_deep_list_raises_as_numpy() -> None:
    nested = [1.0]
    for _ in range(64):
        nested = [nested]
    with pytest.raises(numpy_error(lambda: np.asarray(nested))):
        ts.asarray(nested)


def test_64_dims_work_end_to_end() -> None:
    a = np.arange(2.0).reshape((1,) * 63 + (2,))
    t = ts.asarray(a)
    assert t.ndim == 64
    np.testing.assert_array_equal(np.asarray(t + 1), a + 1)
    np.testing.assert_array_equal(np.asarray(ts.sum(t, axis=63)), np.sum(a, axis=63))
    np.testing.assert_array_equal(np.asarray(t.reshape(-1)), a.reshape(-1))
    assert t[(0,) * 63].tolist() == a[(0,) * 63].tolist()


# ---- basic indexing against numpy ---------------------------------------------------------


def random_key(rng: random.Random, ndim: int):
    def bound():
        return rng.choice([None, rng.randint(-8, 8), rng.choice([-(10**30), 10**30])])

    items = []
    for _ in range(rng.randint(0, ndim)):
        kind = rng.choice(["int", "slice", "slice", "none"])
        if kind == "int":
            items.append(rng.randint(-2, 1))
        elif kind == "slice":
            items.append(slice(bound(), bound(), rng.choice([None, 1, 2, 3, -1, -2, 10**30, -(10**30)])))
        else:
            items.append(None)
    if rng.random() < 0.4:
        items.insert(rng.randint(0, len(items)), Ellipsis)
    for _ in range(rng.randint(0, 2)):
        items.insert(rng.randint(0, len(items)), None)
    return tuple(items) if len(items) != 1 or rng.random() < 0.5 else items[0]


def test_random_basic_keys_match_numpy() -> None:
    rng = random.Random(19)
    a = np.arange(2 * 5 * 4 * 3, dtype=np.float64).reshape(2, 5, 4, 3)
    checked = 0
    for _ in range(3000):
        key = random_key(rng, a.ndim)
        try:
            expected = a[key]
        except IndexError:
            with pytest.raises(IndexError):
                ts.asarray(a)[key]
            continue
        t = ts.asarray(a.copy())
        view = t[key]
        assert view.shape == expected.shape, key
        np.testing.assert_array_equal(np.asarray(view), expected, err_msg=str(key))
        # A write through the view lands where numpy's does.
        b = a.copy()
        b[key] = -1.0
        t[key] = -1.0
        np.testing.assert_array_equal(np.asarray(t), b, err_msg=str(key))
        checked += 1
    assert checked > 2000
