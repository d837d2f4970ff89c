"""Which GPU the check builds for: CUDA device 0's compute capability, asked of the driver (libcuda) with every
call's return code checked, so a machine whose driver cannot start says why instead of building for a guess.

    python scripts/cuda_probe.py

Prints one JSON line on stdout, e.g. {"arch": "90", "name": "NVIDIA H200", "devices": 1, "driver": 13000}.
On failure, prints which call failed and the driver's own name and text for the error on stderr, exits 1.
"""

from __future__ import annotations

import ctypes
import json
import sys
from typing import Any

COMPUTE_CAPABILITY_MAJOR = 75  # CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR (cuda.h)
COMPUTE_CAPABILITY_MINOR = 76


class ProbeError(RuntimeError):
    """The driver could not tell: the message names the call and the error."""


def probe(library: str = "libcuda.so.1") -> dict[str, Any]:
    try:
        cuda = ctypes.CDLL(library)
    except OSError as exc:
        raise ProbeError(f"no CUDA driver: cannot load {library} ({exc})") from None

    def check(call: str, result: int) -> None:
        if result != 0:
            raise ProbeError(f"{call} failed: {_describe(cuda, result)}")

    check("cuInit(0)", cuda.cuInit(0))
    driver, count, device = ctypes.c_int(), ctypes.c_int(), ctypes.c_int()
    check("cuDriverGetVersion", cuda.cuDriverGetVersion(ctypes.byref(driver)))
    check("cuDeviceGetCount", cuda.cuDeviceGetCount(ctypes.byref(count)))
    if count.value < 1:
        raise ProbeError("cuInit succeeded but the driver reports no CUDA device")
    check("cuDeviceGet(0)", cuda.cuDeviceGet(ctypes.byref(device), 0))
    major, minor = ctypes.c_int(), ctypes.c_int()
    check("cuDeviceGetAttribute(major)", cuda.cuDeviceGetAttribute(ctypes.byref(major), COMPUTE_CAPABILITY_MAJOR, device))
    check("cuDeviceGetAttribute(minor)", cuda.cuDeviceGetAttribute(ctypes.byref(minor), COMPUTE_CAPABILITY_MINOR, device))
    name = ctypes.create_string_buffer(256)
    check("cuDeviceGetName", cuda.cuDeviceGetName(name, len(name), device))
    return {"arch": f"{major.value}{minor.value}", "name": name.value.decode(errors="replace"), "devices": count.value,
            "driver": driver.value}  # fmt: skip


def _describe(cuda: ctypes.CDLL, result: int) -> str:
    """`CUDA_ERROR_NO_DEVICE (100): no CUDA-capable device is detected`, as far as the driver can say."""
    name, text = ctypes.c_char_p(), ctypes.c_char_p()
    named = cuda.cuGetErrorName(result, ctypes.byref(name)) == 0 and name.value
    described = cuda.cuGetErrorString(result, ctypes.byref(text)) == 0 and text.value
    label = name.value.decode() if named else "CUresult"
    return f"{label} ({result})" + (f": {text.value.decode()}" if described else "")


def main() -> int:
    try:
        print(json.dumps(probe()))
    except ProbeError as exc:
        print(f"cuda_probe: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
