"""What a family is: everything the catalog, the generator and the gate need to know about one kind of
kernel, in one object. A family module (pointwise.py, reduction.py, ...) builds one FamilyDef; the
registry (families/__init__.py) is the only way anything else reaches it."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..cases import CaseTemplate
from ..dtypes import Promotion
from ..signature import Argument, parse_signature

# Case-table callables receive the gate's per-(op, dtype) context: `names` (the tensor inputs), `spec`,
# `dtype`, `order_sensitive` (float results depend on the summation order), and `limits` (the engine's
# thresholds, validators/engine_limits.py) for threshold cases.
ShownCases = Callable[[Any], list[CaseTemplate]]
DrawnCases = Callable[[Any, np.random.Generator], list[CaseTemplate]]
ThresholdCases = Callable[[Any, np.random.Generator, Any], list[CaseTemplate]]


@dataclass(frozen=True, eq=False, kw_only=True)
class FamilyDef:
    name: str  # what specs write in `family:`
    doc: str
    # -- what a spec of the family may say
    arity: tuple[int, ...]  # how many leading tensor arguments
    # the canonical signature text after the tensors (the engine takes exactly these); an argument written in
    # brackets (`[ScalarType? dtype=None]`) is one a spec may leave out, and the engine call then gets its default
    arguments: str
    # the spec writes its own float keyword arguments after `arguments` ('/, *'; at most the kernel's
    # kMaxUpdateScalars), which the engine call gets in order as {scalars}
    own_scalars: bool = False
    promotions: tuple[Promotion, ...]  # the promotion kinds it allows
    required_fields: tuple[str, ...]  # the C++ fields a spec must give (expr, combine, ...)
    optional_fields: tuple[str, ...] = ()
    # fields written as a mapping from each state tensor (every tensor but the last) to the C++ expression of its
    # new value, computed in the order written (each sees the new values before it); the templates get them as
    # the assignment statements
    assigned_fields: tuple[str, ...] = ()
    field_defaults: tuple[tuple[str, str], ...] = ()  # what an absent optional field means in a template
    field_pairs: tuple[tuple[str, str], ...] = ()  # optional fields a spec gives both of or neither
    judged_in_ulps: bool = False  # results judged per element in ulps (spec `accuracy`); else rtol/atol
    checks_domain: bool = False  # its engine raises before any kernel runs where inputs break the spec's `domain`
    # -- the runtime and the generated bindings
    cpp_enum: str  # ts::Family in runtime/include/tensorsmith/dispatch.h
    # the binding's call into the core; {tensors} is the converted tensor inputs, {handles} and {labels} the tensor
    # arguments as given and their names, {scalars} the own float arguments (own_scalars)
    engine_call: str
    takes_out: bool = False  # the function takes numpy's out= (as numpy's ufuncs do)
    numpy_method_keywords: bool = False  # the method takes numpy's dtype=None/out=None (np.sum(t) passes them)
    # its function, method and operators get a C-level entry in front of pybind11 (ts::python::fast_function),
    # which runs engine_call itself for positional tensors and Python scalars when no gradient is recorded
    fast_calls: bool = False
    accumulator: tuple[tuple[str, str], ...] = ()  # kernel dtype -> accumulator C++ type, where not the dtype's own
    # -- what an author is told (the prompt contract of `tsgen task` and the Claude proposer), per device
    contract: tuple[tuple[str, str], ...]
    # -- the gate
    tolerances: tuple[tuple[str, tuple[float, float]], ...] = ()  # result dtype -> (rtol, atol) default
    reassociates: bool = False  # float results may differ by rounding from run to run (threads regroup)
    sums: frozenset[Promotion] = frozenset()  # promotions under which the result is a sum of terms
    folds: bool = False  # the result folds an axis away (reductions: keepdims applies to it)
    # per result element, the magnitude of the terms its value is made of, from the case's float64 arrays and
    # keyword arguments: results are judged relative to it where it is larger than the result (as sums are)
    term_magnitudes: Callable[[Sequence[np.ndarray], dict[str, Any]], np.ndarray] | None = None
    shown_cases: ShownCases
    hidden_cases: DrawnCases
    threshold_cases: ThresholdCases

    def __repr__(self) -> str:
        return f"<family {self.name}>"

    @property
    def fields(self) -> tuple[str, ...]:
        return self.required_fields + self.optional_fields

    def argument_forms(self) -> tuple[str, ...]:
        """Every text a spec may write after its tensors: each bracketed argument in or out."""
        forms = [""]
        for part in self.arguments.split(", "):
            optional = part.startswith("[") and part.endswith("]")
            text = part.strip("[]")
            forms = [f"{f}, {text}" if f else text for f in forms] + (forms if optional else [])
        return tuple(forms)

    @property
    def optional_arguments(self) -> tuple[Argument, ...]:
        """The bracketed arguments (`ScalarType? dtype=None`): the engine call names each as `{name}`."""
        texts = [p.strip("[]") for p in self.arguments.split(", ") if p.startswith("[")]
        return parse_signature(f"f(*, {', '.join(texts)}) -> Tensor").arguments if texts else ()

    def contract_for(self, device: str) -> str:
        return dict(self.contract)[device]

    def field_default(self, name: str) -> str | None:
        return dict(self.field_defaults).get(name)

    def accumulator_for(self, dtype: str) -> str | None:
        return dict(self.accumulator).get(dtype)

    def tolerance_for(self, result_dtype: str) -> tuple[float, float] | None:
        return dict(self.tolerances).get(result_dtype)

    def template(self, device: str, suffix: str) -> str:
        """The translation-unit template its kernels are rendered into (relative to templates/)."""
        return f"{device}/{self.name}{suffix}.j2"

    def body_template(self, device: str, suffix: str) -> str:
        """The template proposer's body template (absent: bodies come from an agent)."""
        return f"{device}/bodies/{self.name}{suffix}.j2"
