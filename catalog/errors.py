"""Spec errors: one line, naming file:line and the field, never a traceback."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Location:
    path: str  # relative to the repository root
    line: int

    def __str__(self) -> str:
        return f"{self.path}:{self.line}"


class SpecError(Exception):
    """A problem in a spec file; str() is the one-line message users see."""

    def __init__(self, location: Location, field: str | None, message: str) -> None:
        self.location = location
        self.field = field
        self.message = message
        where = f"{location}: {field}: " if field else f"{location}: "
        super().__init__(where + message)
