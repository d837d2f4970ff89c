"""Downloads the GPU check's wheelhouse: the wheels listed in scripts/device-wheels.txt, for the GPU machine's
python3 (CPython 3.12, manylinux x86_64), into build/wheelhouse/, which travels to the device with the working
tree (the `run` tool's `carry`). Also the image's numpy for the same Python into build/wheelhouse-image/, which
never travels: the preflight resolves and installs against it where the device has its image's numpy.

    python scripts/build_wheelhouse.py [--dest DIR] [--image-dest DIR]

Wheels already present are not downloaded again; any wheel not in the list is removed, so the folder holds
exactly the list. Prints what it holds and its size. scripts/device_check.py imports the constants and
helpers below (one description of the device for both).
"""

from __future__ import annotations

import argparse
import re
import subprocess
import sys
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
LOCK = ROOT / "scripts" / "device-wheels.txt"
WHEELHOUSE = ROOT / "build" / "wheelhouse"
IMAGE_STANDIN = ROOT / "build" / "wheelhouse-image"

# The GPU machine's python3, as read there (KINDS.md: Python 3.12.3 in /opt/torch/.venv, x86-64). Wheels for
# glibc 2.28 and older: every wheel in the list has one, and pip matches these tags one by one.
DEVICE_PYTHON = "3.12"
DEVICE_ABI = "cp312"
DEVICE_PLATFORMS = ("manylinux_2_28_x86_64", "manylinux_2_27_x86_64", "manylinux_2_17_x86_64", "manylinux2014_x86_64")
# What the image has that the check relies on, with the version read there (KINDS.md's pip list): left out of
# the wheelhouse (numpy's wheel alone is 16 MiB). CMake is the image's too: it is no pip requirement here.
IMAGE = ("numpy==2.5.2",)
IMAGE_TOOLS = ("cmake",)  # requirements-build.txt entries the image provides as programs
TEST_TOOLS = ("pytest", "pytest-xdist")  # from the dev extra: what the CUDA tests need (pyproject's addopts use -n)
WHEELHOUSE_LIMIT_MIB = 40  # "tens of MiB": it travels with the tree, which may be 64 MiB in all


def canonical(name: str) -> str:
    """PEP 503's normalised project name: `ML_Dtypes` and `ml-dtypes` are one project."""
    return re.sub(r"[-_.]+", "-", name).lower()


def requirement_name(requirement: str) -> str:
    match = re.match(r"\s*([A-Za-z0-9][A-Za-z0-9._-]*)", requirement)
    if not match:
        raise ValueError(f"not a requirement: {requirement!r}")
    return canonical(match.group(1))


def target_args() -> list[str]:
    """pip's options that select wheels for the device's Python and platform instead of this machine's."""
    platforms = [arg for platform in DEVICE_PLATFORMS for arg in ("--platform", platform)]
    return ["--only-binary=:all:", "--python-version", DEVICE_PYTHON, "--implementation", "cp", "--abi", DEVICE_ABI, *platforms]


def read_lock(path: Path = LOCK) -> dict[str, str]:
    """{canonical name: version} of scripts/device-wheels.txt; each line `name==version`, one per project."""
    pins: dict[str, str] = {}
    for number, raw in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        line = raw.split("#", 1)[0].strip()
        if not line:
            continue
        match = re.fullmatch(r"([A-Za-z0-9][A-Za-z0-9._-]*)==([A-Za-z0-9.+!-]+)", line)
        if not match:
            raise ValueError(f"{path}:{number}: expected name==version, got {line!r}")
        name = canonical(match.group(1))
        if name in pins:
            raise ValueError(f"{path}:{number}: {name} is listed twice (one version each: two stop pip's install)")
        pins[name] = match.group(2)
    return pins


def wheel_name_version(filename: str) -> tuple[str, str]:
    """(canonical name, version) from a wheel's file name (PEP 427: name-version-...-platform.whl)."""
    parts = filename.split("-")
    if not filename.endswith(".whl") or len(parts) < 5:
        raise ValueError(f"not a wheel file name: {filename}")
    return canonical(parts[0]), parts[1]


def requirements(root: Path = ROOT) -> list[str]:
    """What the check installs on the device, read from pyproject.toml and requirements-build.txt so the two
    cannot drift apart: the build system's, the runtime's, the gen extra's and the test tools' requirements
    (not the agent extra: the check asks no model), less the programs the image provides."""
    pyproject = tomllib.loads((root / "pyproject.toml").read_text(encoding="utf-8"))
    extras = pyproject["project"]["optional-dependencies"]
    build_file = [line.split("#", 1)[0].strip() for line in (root / "requirements-build.txt").read_text(encoding="utf-8").splitlines()]
    wanted = [
        *pyproject["build-system"]["requires"],
        *[line for line in build_file if line and requirement_name(line) not in IMAGE_TOOLS],
        *pyproject["project"]["dependencies"],
        *extras["gen"],
        *[r for r in extras["dev"] if requirement_name(r) in TEST_TOOLS],
    ]
    unique: list[str] = []
    for requirement in wanted:
        if requirement.replace(" ", "") not in [u.replace(" ", "") for u in unique]:
            unique.append(requirement)
    return unique


def wheels(folder: Path) -> list[Path]:
    return sorted(folder.glob("*.whl")) if folder.is_dir() else []


def size_mib(paths: list[Path]) -> float:
    return sum(p.stat().st_size for p in paths) / 2**20


def download(dest: Path, image_dest: Path) -> None:
    pins = read_lock()
    dest.mkdir(parents=True, exist_ok=True)
    pip = [sys.executable, "-m", "pip", "download", "--disable-pip-version-check", "--no-deps", *target_args()]
    subprocess.run([*pip, "--dest", str(dest), *[f"{name}=={version}" for name, version in pins.items()]], check=True)
    for wheel in wheels(dest):  # a wheel of an older list: two versions of one project would stop the install
        name, version = wheel_name_version(wheel.name)
        if pins.get(name) != version:
            print(f"removing {wheel.name}: not in {LOCK.relative_to(ROOT)}")
            wheel.unlink()
    image_dest.mkdir(parents=True, exist_ok=True)
    subprocess.run([*pip, "--dest", str(image_dest), *IMAGE], check=True)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dest", type=Path, default=WHEELHOUSE, help=f"the wheelhouse (default {WHEELHOUSE.relative_to(ROOT)})")
    parser.add_argument("--image-dest", type=Path, default=IMAGE_STANDIN,
                        help=f"the image's packages, for the preflight only (default {IMAGE_STANDIN.relative_to(ROOT)})")  # fmt: skip
    args = parser.parse_args(argv)
    try:
        download(args.dest, args.image_dest)
    except subprocess.CalledProcessError as exc:
        print(f"build_wheelhouse: pip download failed (exit {exc.returncode}); see pip's message above", file=sys.stderr)
        return 1
    held = wheels(args.dest)
    for wheel in held:
        print(f"  {wheel.stat().st_size / 2**20:6.1f} MiB  {wheel.name}")
    print(f"{args.dest}: {len(held)} wheels, {size_mib(held):.1f} MiB, for CPython {DEVICE_PYTHON} on manylinux x86_64")
    if size_mib(held) > WHEELHOUSE_LIMIT_MIB:
        print(f"build_wheelhouse: over {WHEELHOUSE_LIMIT_MIB} MiB: it travels with the working tree (64 MiB in all)", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
