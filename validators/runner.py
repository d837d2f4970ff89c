"""The sandboxed side of the gate: runs one candidate module on a job of cases.

    python -m validators.runner MODULE JOB.npz OUT.npz [DEVICE [parity]]

Trusts nothing it loads: it only calls the candidate and writes what came out.
References and comparisons happen in the parent process, where the candidate
cannot reach them. Each case runs three times:

  a   value set a in fresh buffers, new allocations filled with 0xA5
  b   value set b written into the SAME buffers (same pointers and shapes), fill 0x5A:
      a result cache keyed on pointer or shape returns a's answer here
  a2  value set a again in fresh buffers, fill 0x5A: must equal run a, so outputs
      the kernel never wrote (canary left) or results that read uninitialised memory show

After each run the operand buffers are saved too, so the parent can check inputs were not written.
On a device other than the CPU, `parity` also runs value set a through the module's CPU kernel (the
candidate's CPU twin) so the parent can check the two devices agree.
"""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path
from typing import Any

import numpy as np

FILLS = {"a": 0xA5, "b": 0x5A, "a2": 0x5A}
# .npy files cannot describe ml_dtypes' bfloat16: such arrays travel as their uint16 bits under KEY + this suffix.
BFLOAT16_SUFFIX = "@bfloat16"


def save_arrays(path: Path, arrays: dict[str, np.ndarray]) -> None:
    """np.savez, with bfloat16 arrays stored as their bits (see load_arrays)."""
    packed = {}
    for key, array in arrays.items():
        if array.dtype.name == "bfloat16":
            packed[key + BFLOAT16_SUFFIX] = array.view(np.uint16)
        else:
            packed[key] = array
    np.savez(path, **packed)


def load_arrays(path: Path) -> dict[str, np.ndarray]:
    """Every array save_arrays wrote, bfloat16 ones viewed as bfloat16 again."""
    arrays = {}
    with np.load(path, allow_pickle=False) as data:
        for key in data.files:
            if key.endswith(BFLOAT16_SUFFIX):
                import ml_dtypes  # noqa: PLC0415 - only jobs with bfloat16 need it

                arrays[key.removesuffix(BFLOAT16_SUFFIX)] = data[key].view(ml_dtypes.bfloat16)
            else:
                arrays[key] = data[key]
    return arrays


def write_job(path: Path, op: str, cases: list[Any]) -> None:
    """Serialises cases (validators.inputs.Case) for the runner: buffers as arrays, layout as JSON."""
    arrays: dict[str, np.ndarray] = {}
    meta = []
    for i, case in enumerate(cases):
        operands = []
        for k, operand in enumerate(case.operands):
            arrays[f"{i}.{k}.a"] = operand.buffer
            arrays[f"{i}.{k}.b"] = operand.buffer_b
            operands.append({"shape": list(operand.shape), "strides": list(operand.strides), "offset": operand.offset})
        meta.append({"id": case.id, "operands": operands, "kwargs": _json_kwargs(case.kwargs)})
    arrays["meta"] = np.array(json.dumps({"op": op, "cases": meta}))
    save_arrays(path, arrays)


def _json_kwargs(kwargs: dict[str, Any]) -> dict[str, Any]:
    return {k: list(v) if isinstance(v, tuple) else v for k, v in kwargs.items()}


def _view(buffer: np.ndarray, operand: dict[str, Any]) -> np.ndarray:
    item = buffer.dtype.itemsize
    return np.ndarray(tuple(operand["shape"]), buffer.dtype, buffer=buffer, offset=operand["offset"] * item,
                      strides=tuple(s * item for s in operand["strides"]))  # fmt: skip


def _axis_arguments(kwargs: dict[str, Any]) -> tuple[list[int] | None, bool, bool]:
    axis = kwargs.get("axis")
    axis_list = None if axis is None else ([axis] if isinstance(axis, int) else list(axis))
    return axis_list, "axis" in kwargs, bool(kwargs.get("keepdims", False))


def run_job(module: Any, job: Any, device: str = "cpu", parity: bool = False) -> tuple[dict[str, np.ndarray], dict[str, dict[str, str]]]:
    meta = json.loads(str(job["meta"]))
    outputs: dict[str, np.ndarray] = {}
    errors: dict[str, dict[str, str]] = {}
    for i, case in enumerate(meta["cases"]):
        axis, axis_given, keepdims = _axis_arguments(case["kwargs"])
        shared: list[np.ndarray] = []
        for run, fill in FILLS.items():
            if run == "b":  # same memory as run a, other values
                for k, buffer in enumerate(shared):
                    np.copyto(buffer, job[f"{i}.{k}.b"])
                buffers = shared
            else:
                buffers = [np.array(job[f"{i}.{k}.a"], copy=True) for k in range(len(case["operands"]))]
                shared = buffers if run == "a" else shared
            views = [_view(b, o) for b, o in zip(buffers, case["operands"])]
            module.set_allocation_fill(fill)
            key = f"{i}.{run}"  # case ids repeat across dtypes; positions do not
            try:
                outputs[f"{key}.out"] = module.invoke(meta["op"], views, axis, axis_given, keepdims, device)
            except Exception as exc:  # noqa: BLE001 - any exception is the candidate's answer for this case
                bases = [c.__name__ for c in type(exc).__mro__[1:]]
                errors[key] = {"type": type(exc).__name__, "message": str(exc)[:500], "bases": bases}
            for k, buffer in enumerate(buffers):
                outputs[f"{key}.in{k}"] = buffer.copy()
            if parity and run == "a":  # the same inputs through the CPU twin (run a left them unchanged, or fails)
                try:
                    outputs[f"{i}.cpu.out"] = module.invoke(meta["op"], views, axis, axis_given, keepdims, "cpu")
                except Exception:  # noqa: BLE001 - a CPU error is the CPU gate's business; parity then has nothing to compare
                    pass
    return outputs, errors


def load_module(path: Path) -> Any:
    spec = importlib.util.spec_from_file_location("_gate", path)
    if spec is None or spec.loader is None:
        raise ImportError(f"cannot load {path}")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def main(argv: list[str]) -> int:
    module_path, job_path, out_path = map(Path, argv[:3])
    device = argv[3] if len(argv) > 3 else "cpu"
    module = load_module(module_path)
    outputs, errors = run_job(module, load_arrays(job_path), device, parity="parity" in argv[4:])
    save_arrays(out_path, outputs)
    out_path.with_suffix(".errors.json").write_text(json.dumps(errors), encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
