"""The CMake build tree of this checkout, and the kernel objects it linked into tensorsmith._C.

CPU kernels are compiled there with the gate's release flags and without LTO (test_release_objects.py holds the
two objects equal), so a test that inspects a kernel's machine code or symbols can read what ships instead of
compiling the catalog again."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


def build_tree() -> Path:
    """The CMake build tree (pyproject.toml: build/{wheel_tag}) configured for this checkout, built last; skips
    (saying why) where there is none."""
    home = f"CMAKE_HOME_DIRECTORY:INTERNAL={ROOT}\n"
    trees = [cache.parent for cache in (ROOT / "build").glob("*/CMakeCache.txt")
             if home in cache.read_text(encoding="utf-8", errors="replace")]  # fmt: skip
    if not trees:
        pytest.skip(f"no CMake build tree of this checkout under {ROOT / 'build'} (built elsewhere, e.g. from a wheel)")
    return max(trees, key=lambda tree: (tree / ".ninja_log").stat().st_mtime if (tree / ".ninja_log").exists() else 0)


def shipped_object(tree: Path, op: str) -> Path:
    """The kernel's object in the build tree, failing when a file it was compiled from changed since (ninja's
    dry run cannot tell: a tree with CONFIGURE_DEPENDS globs always shows a CMake re-run first)."""
    target = f"CMakeFiles/_C.dir/generated/cpu/{op}.cpp.o"
    cache = (tree / "CMakeCache.txt").read_text(encoding="utf-8", errors="replace")
    ninja = re.search(r"^CMAKE_MAKE_PROGRAM:[A-Z]+=(.+)$", cache, re.MULTILINE)
    assert ninja, f"{tree}: CMakeCache.txt names no build program"
    deps = subprocess.run([ninja[1], "-C", str(tree), "-t", "deps", target], check=False, capture_output=True,
                          text=True)  # fmt: skip
    assert deps.returncode == 0 and "(VALID)" in deps.stdout, f"ninja has no record of {target}: `tsgen build`"
    built = (tree / target).stat().st_mtime_ns
    newer = [line.strip() for line in deps.stdout.splitlines()[1:]
             if line.strip() and (tree / line.strip()).stat().st_mtime_ns > built]  # fmt: skip
    assert not newer, f"{tree / target} is older than {newer[:3]}: rebuild (`tsgen build`) before reading it"
    return tree / target
