"""Writes generated/: only files whose contents changed, each atomically.

Every file is written to a temporary sibling and renamed into place, so a
killed run leaves each file either old or new, never half-written. The
manifest is written last: files whose manifest entry is stale are redone by
the next run.
"""

from __future__ import annotations

import os
import tempfile
from dataclasses import dataclass
from pathlib import Path

from .manifest import MANIFEST_NAME

# Files under generated/ that regeneration owns; anything else there is reported as stale.
OWNED_SUFFIXES = (".cpp", ".cu", ".cmake", ".pyi", ".json", ".h")


@dataclass(frozen=True)
class Diff:
    changed: list[str]  # would be written (new or different contents)
    stale: list[str]  # exist on disk but are no longer produced


def diff(generated_dir: Path, outputs: dict[str, str]) -> Diff:
    changed = [name for name in sorted(outputs) if _read(generated_dir / name) != outputs[name]]
    produced = set(outputs)
    stale = sorted(
        p.relative_to(generated_dir).as_posix()
        for p in generated_dir.rglob("*")
        if p.is_file() and p.suffix in OWNED_SUFFIXES and p.relative_to(generated_dir).as_posix() not in produced
    )
    return Diff(changed, stale)


def write(generated_dir: Path, outputs: dict[str, str]) -> Diff:
    """Brings generated/ to exactly `outputs`; the manifest entry is written last."""
    result = diff(generated_dir, outputs)
    ordered = [n for n in result.changed if n != MANIFEST_NAME] + [n for n in result.changed if n == MANIFEST_NAME]
    for name in ordered:
        _write_atomic(generated_dir / name, outputs[name])
    for name in result.stale:
        (generated_dir / name).unlink()
    return result


def _read(path: Path) -> str | None:
    try:
        return path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return None


def _write_atomic(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="\n") as f:
            f.write(text)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
