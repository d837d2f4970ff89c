"""Content hashes that decide what regeneration must redo."""

from __future__ import annotations

import hashlib
from collections.abc import Iterable
from pathlib import Path


def sha256_text(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def sha256_files(paths: Iterable[Path], root: Path) -> str:
    """One hash over several files, their root-relative names included (so a rename counts)."""
    digest = hashlib.sha256()
    for path in sorted(paths):
        digest.update(path.relative_to(root).as_posix().encode())
        digest.update(b"\0")
        digest.update(path.read_bytes())
        digest.update(b"\0")
    return digest.hexdigest()


def combine(parts: dict[str, str]) -> str:
    """A hash of named hashes, stable under dict order."""
    return sha256_text("\n".join(f"{k}={parts[k]}" for k in sorted(parts)))
