"""Content hashes that decide what regeneration must redo."""

from __future__ import annotations

import hashlib


def sha256_text(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def combine(parts: dict[str, str]) -> str:
    """A hash of named hashes, stable under dict order."""
    return sha256_text("\n".join(f"{k}={parts[k]}" for k in sorted(parts)))
