"""Where things are in a Tensorsmith checkout."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from .errors import GeneratorError


@dataclass(frozen=True)
class Project:
    root: Path

    @property
    def specs_dir(self) -> Path:
        return self.root / "specs"

    @property
    def templates_dir(self) -> Path:
        return self.root / "templates"

    @property
    def generated_dir(self) -> Path:
        return self.root / "generated"

    @property
    def include_dir(self) -> Path:
        return self.root / "runtime" / "include"

    @property
    def generator_dir(self) -> Path:
        return self.root / "generator"

    @staticmethod
    def locate(start: Path | None = None) -> Project:
        """The checkout: $TSGEN_ROOT, else the nearest parent of `start` (default: cwd) with
        specs/ and generator/, else the checkout this generator package lives in."""
        if "TSGEN_ROOT" in os.environ:
            return Project._checked(Path(os.environ["TSGEN_ROOT"]).resolve())
        here = (start or Path.cwd()).resolve()
        for candidate in (here, *here.parents):
            if (candidate / "specs").is_dir() and (candidate / "generator").is_dir():
                return Project(candidate)
        return Project._checked(Path(__file__).resolve().parent.parent)

    @staticmethod
    def _checked(root: Path) -> Project:
        if not (root / "specs").is_dir():
            raise GeneratorError(f"{root} is not a Tensorsmith checkout (no specs/ directory)")
        return Project(root)
