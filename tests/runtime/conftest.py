"""Runtime tests need the built extension; say so clearly when it is missing."""

from __future__ import annotations

import pytest

try:
    import tensorsmith  # noqa: F401
except ImportError as exc:  # pragma: no cover - a setup problem, not a test result
    raise pytest.UsageError(
        f"cannot import tensorsmith ({exc}); build it first: python -m pip install --no-build-isolation -e '.[dev]'"
    ) from exc
