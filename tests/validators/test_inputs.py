"""validators.inputs: the gate's cases are deterministic per salt, hidden ones unpredictable without it,
layouts are what they claim, gaps are poisoned, and values respect each spec's domain."""

from __future__ import annotations

import functools
import math
from pathlib import Path

import ml_dtypes
import numpy as np
import pytest

from tensorsmith_forge.catalog import cases as case_tables
from tensorsmith_forge.catalog.dtypes import COMPLEX, FLOATING
from tensorsmith_forge.catalog.families import FAMILIES
from tensorsmith_forge.catalog.model import load_catalog
from tensorsmith_forge.validators import inputs

ROOT = Path(__file__).resolve().parents[2]
CATALOG = load_catalog(ROOT)
SALT = b"unit-test-salt"

# One op per family and pointwise arity, plus ops with a domain or a float result of int inputs.
SAMPLE_OPS = ["negative", "add", "where", "pow", "sum", "mean", "max", "argmax", "softmax", "matmul", "sin", "cumulative_prod", "argsort",
              "_standardize_grad", "_adamw_update"]
SAMPLE_DTYPES = ("bool", "int8", "int16", "uint64", "float32", "float64")
SAMPLE = [(name, dtype) for name in SAMPLE_OPS for dtype in CATALOG.op(name).dtypes if dtype in SAMPLE_DTYPES]


@functools.lru_cache(maxsize=None)
def _cached(name: str, dtype: str, salt: bytes, hidden: bool) -> tuple[inputs.Case, ...]:
    return tuple(inputs.generate_cases(CATALOG.op(name), dtype, salt=salt, hidden=hidden))


def cases_for(name: str, dtype: str, salt: bytes = SALT, hidden: bool = True) -> list[inputs.Case]:
    """Cached: the tests only read cases."""
    return list(_cached(name, dtype, salt, hidden))


@pytest.fixture(scope="module")
def sample_cases() -> dict[tuple[str, str], list[inputs.Case]]:
    return {(name, dtype): cases_for(name, dtype) for name, dtype in SAMPLE}


def c_strides(shape: tuple[int, ...]) -> tuple[int, ...]:
    strides, step = [], 1
    for n in reversed(shape):
        strides.append(step)
        step *= max(n, 1)
    return tuple(reversed(strides))


def same_bits(a: np.ndarray, b: np.ndarray) -> bool:
    return a.dtype == b.dtype and a.shape == b.shape and a.tobytes() == b.tobytes()


# ---- seeds and salt -------------------------------------------------------------------------------------


@pytest.mark.parametrize(("name", "dtype"), [("add", "float32"), ("sum", "int64"), ("where", "uint8"), ("matmul", "bool")])
def test_same_salt_gives_identical_cases(name: str, dtype: str) -> None:
    spec = CATALOG.op(name)
    first, second = (inputs.generate_cases(spec, dtype, salt=SALT, hidden=True) for _ in range(2))
    assert [c.id for c in first] == [c.id for c in second]
    for a, b in zip(first, second):
        assert a.description == b.description and a.kwargs == b.kwargs
        for x, y in zip(a.operands, b.operands):
            assert same_bits(x.buffer, y.buffer) and same_bits(x.buffer_b, y.buffer_b)
            assert (x.offset, x.strides, x.shape) == (y.offset, y.strides, y.shape)


@pytest.mark.parametrize(("name", "dtype"), [("add", "float64"), ("sum", "int32"), ("softmax", "float32")])
def test_other_salt_changes_values_but_not_shown_shapes(name: str, dtype: str) -> None:
    one, two = cases_for(name, dtype, b"salt one", hidden=False), cases_for(name, dtype, b"salt two", hidden=False)
    assert [(c.id, [o.shape for o in c.operands], c.kwargs) for c in one] == [
        (c.id, [o.shape for o in c.operands], c.kwargs) for c in two
    ]
    differing = sum(
        not same_bits(x.view(), y.view()) for a, b in zip(one, two) for x, y in zip(a.operands, b.operands) if x.view().size > 4
    )
    assert differing >= 0.9 * sum(1 for c in one for o in c.operands if o.view().size > 4)


def test_hidden_cases_extend_the_shown_ones() -> None:
    shown, everything = cases_for("add", "float32", hidden=False), cases_for("add", "float32")
    assert [c.id for c in everything[: len(shown)]] == [c.id for c in shown]
    for a, b in zip(shown, everything):
        assert all(same_bits(x.buffer, y.buffer) for x, y in zip(a.operands, b.operands))
    hidden = everything[len(shown) :]
    assert hidden and all(c.hidden and c.id.startswith("h") for c in hidden)
    assert not any(c.hidden for c in shown)


@pytest.mark.parametrize("name", ["add", "where", "negative", "sum", "argmax", "softmax", "matmul"])
def test_hidden_cases_depend_on_the_salt(name: str) -> None:
    """Shapes, axes and layouts of hidden cases come from the salt: other salts, other hidden sets,
    and none of them is the shown set."""
    dtype = CATALOG.op(name).dtypes[-1]
    shown = {_structure(c) for c in cases_for(name, dtype, hidden=False)}
    hidden_sets = []
    for salt in (b"a", b"b", b"c", b"d"):
        hidden = [c for c in cases_for(name, dtype, salt) if c.hidden]
        structures = [_structure(c) for c in hidden]
        assert sum(s not in shown for s in structures) >= len(structures) - 2
        hidden_sets.append(tuple(structures))
    assert len(set(hidden_sets)) == len(hidden_sets)


def _structure(case: inputs.Case) -> tuple:
    return tuple((o.shape, o.strides, o.offset) for o in case.operands) + (tuple(sorted(case.kwargs.items())),)


def test_cases_do_not_depend_on_the_device() -> None:
    a = inputs.generate_cases(CATALOG.op("add"), "int8", salt=SALT, hidden=True, device="cpu")
    b = inputs.generate_cases(CATALOG.op("add"), "int8", salt=SALT, hidden=True, device="cuda")
    assert all(same_bits(x.buffer, y.buffer) for c, d in zip(a, b) for x, y in zip(c.operands, d.operands))


def test_bad_arguments_are_refused() -> None:
    with pytest.raises(TypeError):
        inputs.generate_cases(CATALOG.op("add"), "int8", salt="text")  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        inputs.generate_cases(CATALOG.op("add"), "int8", salt=b"")
    with pytest.raises(ValueError, match="does not declare"):
        inputs.generate_cases(CATALOG.op("negative"), "bool", salt=SALT)


# ---- case sets ------------------------------------------------------------------------------------------


def test_ids_are_stable_and_sequential(sample_cases) -> None:
    for cases in sample_cases.values():
        shown = [c.id for c in cases if not c.hidden]
        hidden = [c.id for c in cases if c.hidden]
        assert shown == [f"c{i:02d}" for i in range(len(shown))]
        assert hidden == [f"h{i:02d}" for i in range(len(hidden))]


def test_case_counts_and_sizes_stay_sane(sample_cases) -> None:
    for (name, dtype), cases in sample_cases.items():
        assert 20 <= len(cases) <= 45, (name, dtype, len(cases))
        threshold = 15_000 if CATALOG.op(name).family.name == "contraction" else 200_000
        large = [c for c in cases if c.size > threshold]
        assert 1 <= len(large) <= 2, (name, dtype, [c.id for c in large])
        assert sum(c.size for c in cases) < 3_500_000, (name, dtype)


@pytest.mark.parametrize("name", ["negative", "add", "where"])
def test_pointwise_shapes_cover_the_edge_paths(name: str) -> None:
    cases = cases_for(name, "float64", hidden=False)
    shapes = {o.shape for c in cases for o in c.operands}
    for wanted in [(), (0,), (1, 0, 3), (7,), (20,), (812,), (4099,), (1029, 917)]:
        assert wanted in shapes, wanted
    assert any(len(s) >= 4 for s in shapes)
    if len(cases[0].operands) > 1:  # broadcasting in both directions
        ranks = [tuple(len(o.shape) for o in c.operands) for c in cases]
        assert any(r[0] > r[1] for r in ranks) and any(r[0] < r[1] for r in ranks)
        assert any(any(1 in o.shape for o in c.operands) and len({o.shape for o in c.operands}) > 1 for c in cases)


def test_reduction_kwargs_cover_axis_forms() -> None:
    cases = cases_for("sum", "float32", hidden=False)
    axes = [c.kwargs["axis"] for c in cases]
    assert None in axes and () in axes
    assert any(isinstance(a, int) and a >= 0 for a in axes) and any(isinstance(a, int) and a < 0 for a in axes)
    assert any(isinstance(a, tuple) and len(a) > 1 for a in axes)
    assert any(isinstance(a, tuple) and any(x < 0 for x in a) for a in axes)
    assert {c.kwargs["keepdims"] for c in cases} == {False, True}
    collapsible = any(c.kwargs["axis"] == (1, 2) and c.operands[0].shape == (2, 3, 4) for c in cases)
    gapped = any(c.kwargs["axis"] == (0, 2) and c.operands[0].shape == (2, 3, 4) for c in cases)
    assert collapsible and gapped
    empty_axis = [c for c in cases if isinstance(c.kwargs["axis"], int) and c.operands[0].shape[c.kwargs["axis"]] == 0]
    assert empty_axis


def test_index_reductions_take_one_axis_only() -> None:
    for case in cases_for("argmax", "int16"):
        axis = case.kwargs["axis"]
        assert axis is None or isinstance(axis, int), (case.id, axis)


def test_normalization_uses_several_axes() -> None:
    axes = {c.kwargs["axis"] for c in cases_for("softmax", "float64", hidden=False)}
    assert {-1, 0, 1}.issubset(axes) and any(a < -1 for a in axes)


def test_contraction_shapes() -> None:
    shapes = [tuple(o.shape for o in c.operands) for c in cases_for("matmul", "float32", hidden=False)]
    assert ((3,), (3,)) in shapes and ((2, 3), (3, 4)) in shapes and ((67, 129), (129, 65)) in shapes
    assert any(len(a) > 2 and len(b) > 2 and a[:-2] != b[:-2] for a, b in shapes)  # broadcast batch
    assert any(len(a) >= 2 and a[-1] == 0 for a, b in shapes)  # k = 0


def test_where_condition_is_bool_and_others_the_dtype() -> None:
    for case in cases_for("where", "int16"):
        assert [o.dtype for o in case.operands] == ["bool", "int16", "int16"]
        assert [o.view().dtype for o in case.operands] == [np.dtype(bool), np.dtype("int16"), np.dtype("int16")]
    assert inputs.operand_dtypes(CATALOG.op("add"), "uint8") == ["uint8", "uint8"]


# ---- layouts ----------------------------------------------------------------------------------------------


def test_every_view_is_exactly_its_raw_layout(sample_cases) -> None:
    """view() honours offset, negative and zero strides; every other buffer element is poison."""
    for cases in sample_cases.values():
        for case in cases:
            for o in case.operands:
                for buffer in (o.buffer, o.buffer_b):
                    assert buffer.ndim == 1 and buffer.flags.c_contiguous and buffer.dtype == np.dtype(o.dtype)
                    view = o.view(buffer)
                    assert view.shape == o.shape
                    assert view.strides == tuple(s * buffer.itemsize for s in o.strides)
                    assert np.shares_memory(view, buffer) or view.size == 0
                    for index in _some_indices(o.shape):
                        flat = o.offset + sum(i * s for i, s in zip(index, o.strides))
                        assert same_bits(np.asarray(view[index]), np.asarray(buffer[flat])), (case.id, index)
                    gaps = buffer[~o.addressed()]
                    assert _all_poison(gaps, o.dtype), (case.id, o.name)


def _some_indices(shape: tuple[int, ...]) -> list[tuple[int, ...]]:
    if 0 in shape:
        return []
    corners = [tuple(0 for _ in shape), tuple(n - 1 for n in shape), tuple(n // 2 for n in shape)]
    return list(dict.fromkeys(corners))


def _all_poison(values: np.ndarray, dtype: str) -> bool:
    if dtype in FLOATING:
        return bool(np.isnan(values).all())
    if dtype == "bool":
        return bool(values.all())
    return bool((values == np.iinfo(dtype).max).all())


def test_layouts_are_what_they_claim(sample_cases) -> None:
    seen = set()
    for cases in sample_cases.values():
        for case in cases:
            for o in case.operands:
                seen.add(o.layout)
                big = [d for d, n in enumerate(o.shape) if n > 1]
                extra = len(o.buffer) - math.prod(o.shape)
                if o.layout == "contiguous":
                    assert o.offset == 0 and o.strides == c_strides(o.shape), case.id
                elif o.layout == "offset":
                    assert o.offset > 0 and extra > 0, case.id
                elif o.layout in ("transposed", "permuted"):
                    assert len(o.shape) >= 2 and o.strides != c_strides(o.shape), case.id
                    if o.view().size:  # a dense permutation of the elements
                        assert o.addressed().sum() == math.prod(o.shape) == len(o.buffer), case.id
                    if len(big) >= 2 and o.view().size:
                        assert not o.view().flags.c_contiguous, case.id
                elif o.layout == "strided":
                    if big and o.view().size:
                        assert not o.view().flags.c_contiguous and (~o.addressed()).sum() > 0, case.id
                elif o.layout == "negative":
                    assert any(s < 0 for s in o.strides), case.id
                elif o.layout == "padded":
                    assert extra > 0, case.id
                elif o.layout == "expanded":
                    assert any(o.strides[d] == 0 for d in big), case.id
    assert seen == set(inputs.LAYOUTS)


def test_noncontiguous_float_views_have_nan_gaps_to_read() -> None:
    for case in cases_for("add", "float32"):
        for o in case.operands:
            if o.layout in ("strided", "padded", "offset") and o.view().size:
                gaps = o.buffer[~o.addressed()]
                assert len(gaps) > 0 and np.isnan(gaps).all(), case.id


def test_buffer_b_has_the_same_layout_and_other_values(sample_cases) -> None:
    changed = total = 0
    for cases in sample_cases.values():
        for case in cases:
            for o in case.operands:
                assert o.buffer_b.shape == o.buffer.shape
                assert _all_poison(o.buffer_b[~o.addressed()], o.dtype)
                if o.view().size >= 8 and o.values not in ("all-pairs booleans",):
                    total += 1
                    changed += not same_bits(o.view(o.buffer), o.view(o.buffer_b))
    assert changed >= 0.95 * total


def test_view_refuses_a_wrong_buffer() -> None:
    o = cases_for("add", "float32", hidden=False)[5].operands[0]
    with pytest.raises(ValueError):
        o.view(o.buffer[:-1])
    with pytest.raises(ValueError):
        o.view(o.buffer.astype(np.float64))


# ---- values -------------------------------------------------------------------------------------------------


def test_cases_respect_the_domain_where_it_holds_and_one_case_breaks_it() -> None:
    """pow's exponent bound holds for integer kernels only: integer cases keep their exponents non-negative but
    for one shown case that breaks the bound (numpy raises there, and the engine must); float cases range freely."""
    spec = CATALOG.op("pow")
    (bound,) = spec.domain
    assert (bound.argument, bound.low, bound.high) == ("x2", 0, None) and "int8" in bound.dtypes and "float32" not in bound.dtypes
    for dtype in spec.dtypes:
        breaking = []
        for case in inputs.generate_cases(spec, dtype, salt=SALT, hidden=True):
            for which in ("a", "b", "c"):
                with np.errstate(invalid="ignore"):
                    if (case.operands[1].array(which) < 0).any():
                        breaking.append(case.id)
        if dtype in ("int8", "int16", "int32", "int64"):
            assert breaking and set(breaking) == {breaking[0]} and not breaking[0].startswith("h"), (dtype, breaking)
        elif dtype in FLOATING or dtype in COMPLEX:
            assert len(set(breaking)) > 3, dtype  # negative exponents are tested for floats (and complex real parts)
        else:
            assert not breaking, dtype  # unsigned: nothing to break


def test_value_set_c_starts_as_a_and_ends_as_b(sample_cases) -> None:
    for cases in sample_cases.values():
        for case in cases:
            for op in case.operands:
                c = op.buffer_for("c")
                assert c.dtype == op.buffer.dtype and len(c) == len(op.buffer)
                assert c[: op.split].tobytes() == op.buffer[: op.split].tobytes()
                assert c[op.split :].tobytes() == op.buffer_b[op.split :].tobytes()
                if len(op.buffer) > 1:
                    assert 0 < op.split < len(op.buffer), (case.id, op.split)


def test_float_specials_include_nans_other_than_the_canonical_one() -> None:
    for dtype in FLOATING:
        pool = inputs.special_values(CATALOG.op("exp"), dtype)
        bits = pool.view(f"u{pool.dtype.itemsize}")
        with np.errstate(invalid="ignore"):
            nan_bits = set(bits[np.isnan(pool.astype(np.float64))].tolist())
        assert len(nan_bits) >= 4, dtype  # canonical, signalling, negative, with a payload
        seen = set()
        for case in cases_for("exp", dtype, hidden=False):
            data = case.operands[0].view()
            with np.errstate(invalid="ignore"):
                seen |= set(data.view(f"u{data.dtype.itemsize}")[np.isnan(data.astype(np.float64))].tolist())
        assert nan_bits <= seen | {int(bits[np.isnan(pool.astype(np.float64))][0])}, dtype


class _Limits:
    """Engine limits far from the real ones: the threshold cases must follow them."""

    pointwise_grain = 1 << 22
    stream_scratch_bytes = 512
    stream_floor_bytes = 1 << 24
    reduce_grain = 1 << 15
    split_chunk = 1 << 18
    split_max_rows = 5
    row_grain = 1 << 20
    scan_grain = 1 << 12
    scan_tile = 300
    sort_grain = 1 << 11


def test_threshold_cases_are_sized_from_the_engine_limits() -> None:
    from tensorsmith_forge.validators.engine_limits import EngineLimits

    limits = EngineLimits(**{k: v for k, v in vars(_Limits).items() if not k.startswith("_")})
    (run,) = inputs.threshold_cases(CATALOG.op("add"), "float32", salt=SALT, limits=limits)
    assert run.hidden and run.id == "t00"
    assert run.operands[0].shape[0] > max(case_tables.LARGE_RUN, 2 * limits.pointwise_grain) and run.operands[0].shape[0] % 2 == 1
    whole, split, full, outer, few = inputs.threshold_cases(CATALOG.op("sum"), "float64", salt=SALT, limits=limits)
    assert whole.operands[0].shape[0] == limits.split_max_rows + 1 and whole.operands[0].shape[1] > 2 * limits.split_chunk
    assert split.operands[0].shape[0] <= limits.split_max_rows and split.operands[0].shape[1] > 3 * limits.split_chunk
    assert full.kwargs["axis"] is None and outer.kwargs["axis"] == 0 == few.kwargs["axis"] and few.operands[0].shape[1] < 40
    long_rows, _ = inputs.threshold_cases(CATALOG.op("softmax"), "float32", salt=SALT, limits=limits)
    assert long_rows.operands[0].shape[1] > case_tables.LONG_SOFTMAX_ROW
    deep, _ = inputs.threshold_cases(CATALOG.op("matmul"), "int32", salt=SALT, limits=limits)
    assert deep.operands[0].shape[1] > case_tables.LONG_K and deep.operands[1].shape[0] == deep.operands[0].shape[1]
    assert inputs.threshold_cases(CATALOG.op("add"), "float32", salt=b"other", limits=limits)[0].operands[0].shape != run.operands[0].shape


def test_products_of_long_rows_are_exact_in_any_order() -> None:
    """prod over millions of elements: every partial product is a power of two in range, so any order of
    multiplying gives numpy's bits (0 * inf in one order and inf in another made honest kernels fail)."""
    for case in cases_for("prod", "float32"):
        x = case.operands[0].view().astype(np.float64)
        finite = x[np.isfinite(x)]
        if "special" not in case.operands[0].values:
            assert set(np.unique(np.abs(finite))) <= {0.5, 1.0, 2.0}, case.description


def test_float_specials_are_all_there() -> None:
    for dtype in FLOATING:
        values = np.concatenate([o.view().ravel() for c in cases_for("add", dtype, hidden=False) for o in c.operands])
        values = values.astype(np.float64)  # exact; bfloat16 has no numpy finfo of its own
        finite = values[np.isfinite(values)]
        assert np.isnan(values).any() and np.isposinf(values).any() and np.isneginf(values).any()
        assert ((finite == 0) & np.signbit(finite)).any() and ((finite == 0) & ~np.signbit(finite)).any()
        info = ml_dtypes.finfo(dtype)
        assert ((finite != 0) & (np.abs(finite) < float(info.tiny))).any()  # subnormals
        large = 1e4 if dtype == "float16" else 1e20  # float16 ends at 65504
        pi = float(np.array(np.pi, dtype=dtype).astype(np.float64))
        assert (np.abs(finite) == pi).any() and (np.abs(finite) >= large).any()
        assert (np.abs(finite) > float(info.max) / 10).any()


def test_binary_specials_form_the_full_cross_product() -> None:
    specials = inputs.special_values(CATALOG.op("multiply"), "float64")
    case = next(c for c in cases_for("multiply", "float64", hidden=False) if c.operands[0].shape == (len(specials), 1))
    b1, b2 = np.broadcast_arrays(*(o.view() for o in case.operands))
    pairs = {(p.tobytes(), q.tobytes()) for p, q in zip(b1.ravel(), b2.ravel())}
    assert len(pairs) == len(specials) ** 2


def test_integer_limits_are_used() -> None:
    for dtype in ("int8", "uint16", "int64", "uint64"):
        values = np.concatenate([o.view().ravel() for c in cases_for("add", dtype) for o in c.operands])
        info = np.iinfo(dtype)
        assert (values == info.min).any() and (values == info.max).any(), dtype


def test_float_results_of_summed_64_bit_ints_avoid_order_dependent_limits() -> None:
    """mean sums int64 in float64: min/max next to small values would make the answer depend on the order."""
    values = np.concatenate([o.view().ravel() for c in cases_for("mean", "int64") for o in c.operands])
    info = np.iinfo("int64")
    extreme = (values < -(2**40)) | (values > 2**40)
    assert set(values[extreme].tolist()) <= {info.min, info.min + 1, info.max - 1, info.max}
    assert set(inputs.special_values(CATALOG.op("sum"), "int64").tolist()) > {info.min, info.max, 0, 1, -1}


def test_order_sensitive_ops_get_no_huge_or_tiny_specials() -> None:
    sums = inputs.special_values(CATALOG.op("sum"), "float64")
    finite = np.abs(sums[np.isfinite(sums)])
    assert finite.max() < 1e3 and finite[finite > 0].min() >= 1e-3
    assert np.abs(inputs.special_values(CATALOG.op("add"), "float64")[np.isfinite(inputs.special_values(CATALOG.op("add"), "float64"))]).max() > 1e300


def test_several_distributions_per_op() -> None:
    for name in ("add", "sum", "matmul"):
        dists = {o.values for c in cases_for(name, "float32") for o in c.operands}
        assert {"normal", "uniform", "heavy-tailed (t, df=2)"} <= dists, (name, dists)


def test_every_family_generates(sample_cases) -> None:
    families = {CATALOG.op(name).family.name for name, _ in sample_cases}
    assert families == set(FAMILIES)


# ---- files ----------------------------------------------------------------------------------------------------


def test_case_file_round_trip(tmp_path: Path) -> None:
    cases = cases_for("sum", "int16") + cases_for("where", "float32")
    path = tmp_path / "cases.arrays"
    inputs.save_cases(cases, path)
    loaded = inputs.load_cases(path)
    assert len(loaded) == len(cases)
    for a, b in zip(cases, loaded):
        assert (a.op, a.dtype, a.id, a.description, a.kwargs, a.hidden) == (b.op, b.dtype, b.id, b.description, b.kwargs, b.hidden)
        assert type(a.kwargs.get("axis")) is type(b.kwargs.get("axis"))
        for x, y in zip(a.operands, b.operands):
            assert x.meta() == y.meta()
            assert same_bits(x.buffer, y.buffer) and same_bits(x.buffer_b, y.buffer_b)
            assert same_bits(np.ascontiguousarray(x.view()), np.ascontiguousarray(y.view()))


def test_case_from_arrays() -> None:
    spec = CATALOG.op("where")
    arrays = [np.array([[True], [False]]), np.arange(6, dtype=np.int8).reshape(2, 3), np.float32(2.5)]
    case = inputs.Case.from_arrays(spec, arrays)
    assert case.dtype == "int8" and [o.dtype for o in case.operands] == ["bool", "int8", "float32"]
    for o, a in zip(case.operands, arrays):
        assert same_bits(o.view(), np.asarray(a)) and same_bits(o.view(o.buffer_b), np.asarray(a))
