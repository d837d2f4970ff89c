"""Writes generated/: only files whose contents changed, and the whole tree at once.

Changes are made in a staging copy (generated.new/, unchanged files copied with
their timestamps, so incremental builds stay incremental), which then replaces
generated/ by two renames. A run killed at any moment leaves either the old
tree or the new one: `recover` (run first by every write) finishes or undoes an
interrupted swap.
"""

from __future__ import annotations

import os
import shutil
from dataclasses import dataclass
from pathlib import Path

from tensorsmith_forge.catalog.files import write_atomic

# Files under generated/ that regeneration owns; anything else there is reported as stale.
OWNED_SUFFIXES = (".cpp", ".cu", ".cmake", ".pyi", ".json", ".jsonl", ".h")


@dataclass(frozen=True)
class Diff:
    changed: list[str]  # would be written (new or different contents)
    stale: list[str]  # exist on disk but are no longer produced


def diff(generated_dir: Path, outputs: dict[str, str]) -> Diff:
    changed = [name for name in sorted(outputs) if read_text(generated_dir / name) != outputs[name]]
    produced = set(outputs)
    stale = sorted(
        p.relative_to(generated_dir).as_posix()
        for p in generated_dir.rglob("*")
        if p.is_file() and p.suffix in OWNED_SUFFIXES and p.relative_to(generated_dir).as_posix() not in produced
    )
    return Diff(changed, stale)


def write(generated_dir: Path, outputs: dict[str, str]) -> Diff:
    """Brings generated/ to exactly `outputs`, atomically as a tree."""
    recover(generated_dir)
    result = diff(generated_dir, outputs)
    if not result.changed and not result.stale:
        return result
    staging, old = _staging(generated_dir), _old(generated_dir)
    shutil.rmtree(staging, ignore_errors=True)
    generated_dir.mkdir(exist_ok=True)  # so a staging tree without generated/ beside it is always complete
    shutil.copytree(generated_dir, staging, copy_function=shutil.copy2)
    for name in result.changed:
        write_atomic(staging / name, outputs[name])
    for name in result.stale:
        (staging / name).unlink()
    os.rename(generated_dir, old)
    os.rename(staging, generated_dir)  # the commit point
    shutil.rmtree(old, ignore_errors=True)
    return result


def recover(generated_dir: Path) -> None:
    """Finishes or undoes a swap a killed run left behind."""
    staging, old = _staging(generated_dir), _old(generated_dir)
    if generated_dir.exists():
        shutil.rmtree(staging, ignore_errors=True)  # killed before the commit point: the old tree stands
        shutil.rmtree(old, ignore_errors=True)  # killed after it: the new tree stands
    elif staging.exists():
        os.rename(staging, generated_dir)  # killed between the two renames: the staging tree is complete
        shutil.rmtree(old, ignore_errors=True)
    elif old.exists():
        os.rename(old, generated_dir)


def _staging(generated_dir: Path) -> Path:
    return generated_dir.with_name(generated_dir.name + ".new")


def _old(generated_dir: Path) -> Path:
    return generated_dir.with_name(generated_dir.name + ".old")


def read_text(path: Path) -> str | None:
    """A file's text, or None when it does not exist."""
    try:
        return path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return None


