"""YAML loading that keeps the line of every mapping key, for spec errors.

PyYAML's composer gives nodes with marks; we turn the node tree into plain
Python values plus a {key: line} table for the top-level mapping.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import yaml

from .errors import Location, SpecError


@dataclass(frozen=True)
class LoadedMapping:
    values: dict[str, Any]
    lines: dict[str, int]  # 1-based line of each key
    line: int  # line of the mapping itself


def load_mapping(text: str, path: str) -> LoadedMapping:
    try:
        node = yaml.compose(text, Loader=yaml.SafeLoader)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None) or getattr(exc, "context_mark", None)
        line = mark.line + 1 if mark else 1
        problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        raise SpecError(Location(path, line), None, f"invalid YAML: {problem}") from None
    if node is None:
        raise SpecError(Location(path, 1), None, "empty spec file")
    if not isinstance(node, yaml.MappingNode):
        raise SpecError(Location(path, node.start_mark.line + 1), None, "a spec must be a YAML mapping of fields")
    values: dict[str, Any] = {}
    lines: dict[str, int] = {}
    constructor = yaml.SafeLoader("")
    for key_node, value_node in node.value:
        line = key_node.start_mark.line + 1
        key = key_node.value if isinstance(key_node, yaml.ScalarNode) else None
        if not isinstance(key, str) or key_node.tag != "tag:yaml.org,2002:str":
            raise SpecError(Location(path, line), None, f"field names must be strings, got {key!r}")
        if key in values:
            raise SpecError(Location(path, line), key, "field given twice")
        try:
            values[key] = constructor.construct_object(value_node, deep=True)
        except yaml.YAMLError as exc:
            raise SpecError(Location(path, line), key, f"invalid value: {str(exc).splitlines()[0]}") from None
        lines[key] = line
    return LoadedMapping(values, lines, node.start_mark.line + 1)
