"""The one-line failure the CLI reports (spec errors are catalog.errors.SpecError)."""

from __future__ import annotations


class GeneratorError(Exception):
    """Any other failure the CLI reports as one line (missing tools, a failed build)."""
