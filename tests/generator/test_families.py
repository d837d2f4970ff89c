"""The family registry: every family is one complete object, and nothing falls back to a default."""

from __future__ import annotations

import itertools
import re
import types
from pathlib import Path

import numpy as np
import pytest

from tensorsmith_forge.catalog import cases
from tensorsmith_forge.catalog.families import FAMILIES, FamilyDef, UnknownFamily, family
from tensorsmith_forge.catalog.model import load_catalog
from tensorsmith_forge.catalog.signature import parse_signature
from tensorsmith_forge.generator import api

ROOT = Path(__file__).resolve().parents[2]
DISPATCH = (ROOT / "runtime" / "include" / "tensorsmith" / "dispatch.h").read_text(encoding="utf-8")
CATALOG = load_catalog(ROOT)


def test_unknown_family_is_an_error_naming_the_known_ones() -> None:
    with pytest.raises(UnknownFamily, match=r"unknown family 'stencil' \(known: pointwise, reduction,"):
        family("stencil")
    with pytest.raises(UnknownFamily):
        family(None)  # type: ignore[arg-type]


def test_every_spec_family_is_the_registered_object() -> None:
    catalog = load_catalog(ROOT)
    for spec in catalog.ops:
        assert spec.family is FAMILIES[spec.family.name], spec.name
    assert {spec.family.name for spec in catalog.ops} == set(FAMILIES)  # every family has an op to prove it


@pytest.mark.parametrize("fam", FAMILIES.values(), ids=list(FAMILIES))
def test_family_is_complete(fam: FamilyDef) -> None:
    # its C++ enumerator exists, its templates exist on every device, its author contract covers every device
    enumerator = fam.cpp_enum.removeprefix("ts::Family::")
    assert re.search(rf"^\s*{enumerator},", DISPATCH, re.M), fam.cpp_enum
    for device in api.DEVICES:
        suffix = api.SOURCE_SUFFIX[device]
        assert (ROOT / "templates" / fam.template(device, suffix)).is_file()
        if not (ROOT / "templates" / fam.body_template(device, suffix)).is_file():
            # no template proposer: each op's body comes from an author, and generated/ holds an accepted one
            for spec in (s for s in CATALOG.ops if s.family is fam):
                kernel = (ROOT / "generated" / api.kernel_path(spec, device)).read_text(encoding="utf-8")
                assert re.search(r"kernel body \(proposer: (external|claude)\)", kernel), (spec.name, device)
        assert len(fam.contract_for(device)) > 40
    # its canonical arguments parse in the signature language, after a tensor, with and without each optional one
    for form in fam.argument_forms():  # (the update family's ops write their own float arguments after it)
        parse_signature(f"f(Tensor x, {form}{', float lr' if fam.own_scalars else ''}) -> Tensor")
    assert fam.promotions and set(fam.sums) <= set(fam.promotions)
    assert set(dict(fam.field_defaults)) <= set(fam.optional_fields)
    # the engine call names the tensors and each optional argument (which gets its default where a spec leaves it out)
    assert ("{handles}" if fam.own_scalars else "{tensors}") in fam.engine_call  # update: the Tensors themselves, written
    assert ("{scalars}" in fam.engine_call) == fam.own_scalars
    assert all(f"{{{a.name}}}" in fam.engine_call and a.default is not None for a in fam.optional_arguments)


def test_optional_family_arguments_may_be_left_out_and_reach_the_engine_with_their_default() -> None:
    reduction = FAMILIES["reduction"]
    assert reduction.argument_forms() == (
        "/, *, int[]? axis=None, ScalarType? dtype=None, bool keepdims=False", "/, *, int[]? axis=None, bool keepdims=False")
    assert [a.name for a in reduction.optional_arguments] == ["dtype"]
    bindings = " ".join((ROOT / "generated" / "bindings.cpp").read_text(encoding="utf-8").split())  # as one line
    assert "ts::python::reduce(*op, ts::python::tensor_operands(*op, {x}, {\"x\"})[0], ts::python::axes_arg(axis), keepdims, dtype);" in bindings
    assert "ts::python::reduce(*op, ts::python::tensor_operands(*op, {x}, {\"x\"})[0], ts::python::axes_arg(axis), keepdims, pybind11::none());" in bindings


@pytest.mark.parametrize("fam", FAMILIES.values(), ids=list(FAMILIES))
def test_family_case_tables_give_templates_for_every_arity(fam: FamilyDef) -> None:
    class Limits:  # the engine_limits fields threshold tables read
        pointwise_grain, split_chunk, split_max_rows, row_grain = 1 << 15, 1 << 14, 16, 1 << 15
        scan_grain, scan_tile, sort_grain = 1 << 15, 2048, 1 << 14

    for arity, promotion in itertools.product(fam.arity, fam.promotions):  # tables may depend on the spec's promotion
        tensors = ", ".join(f"Tensor x{i}" for i in range(arity))
        signature = parse_signature(f"f({tensors}, /, *, float lr, float beta) -> Tensor")  # own floats: update's
        spec = types.SimpleNamespace(promotion=promotion, signature=signature)
        ctx = types.SimpleNamespace(names=tuple(f"x{i}" for i in range(arity)), order_sensitive=bool(fam.sums), spec=spec)
        for templates in (fam.shown_cases(ctx), fam.hidden_cases(ctx, np.random.default_rng(1)),
                          fam.threshold_cases(ctx, np.random.default_rng(2), Limits())):  # fmt: skip
            assert templates and all(isinstance(t, cases.CaseTemplate) for t in templates)
            assert all(len(t.shapes) == arity == len(t.layouts) for t in templates)
