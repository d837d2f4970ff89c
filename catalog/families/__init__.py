"""The registry of op families: one module per family builds its FamilyDef, and everything else (the spec
parser, the generator, the gate) looks a family up here. It is exhaustive: a name that is not registered
is an error, never a default.

Adding a family: a module here, its templates under templates/{cpu,cuda}/, its engine in runtime/, its
tests; nothing else names it."""

from __future__ import annotations

from . import contraction, index_reduction, normalization, pointwise, reduction, scan, sort, standardization, update
from .base import FamilyDef

_MODULES = (pointwise, reduction, index_reduction, normalization, contraction, scan, sort, standardization, update)
FAMILIES: dict[str, FamilyDef] = {module.FAMILY.name: module.FAMILY for module in _MODULES}


class UnknownFamily(KeyError):
    def __init__(self, name: object) -> None:
        super().__init__(name)
        self.message = f"unknown family {name!r} (known: {', '.join(FAMILIES)})"

    def __str__(self) -> str:
        return self.message


def family(name: str) -> FamilyDef:
    """The family registered under `name`; UnknownFamily otherwise."""
    try:
        return FAMILIES[name]
    except (KeyError, TypeError):
        raise UnknownFamily(name) from None


__all__ = ["FAMILIES", "FamilyDef", "UnknownFamily", "family"]
