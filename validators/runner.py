"""The sandboxed side of the gate: runs one candidate module on a job of cases.

    python -m validators.runner MODULE JOB OUT [DEVICE [parity]]   (array files, see save_arrays)

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
# Array files: an 8-byte little-endian length, a JSON index {key: [dtype, shape, offset]}, then the raw bytes.
# One read and one frombuffer per array (an .npz of thousands of small arrays takes seconds to load), no
# pickles, and every entry checked on load: the runner's output is written next to a hostile candidate.
# Only plain numbers travel: bool, integers, floats (numpy's kinds b, i, u, f) and bfloat16.


def save_arrays(path: Path, arrays: dict[str, np.ndarray]) -> None:
    """Writes `arrays` (plain numbers only, see _dtype) to one array file (see load_arrays)."""
    index, chunks, offset = {}, [], 0
    for key, value in arrays.items():
        array = np.asarray(value)
        if _dtype(array.dtype.name) is None:
            raise ValueError(f"{key}: arrays of {array.dtype} do not travel (not a tensorsmith dtype)")
        data = np.ascontiguousarray(array).tobytes()
        index[key] = [array.dtype.name, list(array.shape), offset]
        chunks.append(data)
        offset += len(data)
    header = json.dumps(index).encode()
    with open(path, "wb") as out:
        out.write(len(header).to_bytes(8, "little"))
        out.write(header)
        for chunk in chunks:
            out.write(chunk)


def load_arrays(path: Path) -> dict[str, np.ndarray]:
    """Every array save_arrays wrote; ValueError when the file is not one it could have written."""
    blob = Path(path).read_bytes()
    size = int.from_bytes(blob[:8], "little")
    if len(blob) < 8 + size:
        raise ValueError(f"{path}: truncated array file")
    try:
        index = json.loads(blob[8 : 8 + size])
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ValueError(f"{path}: unreadable array index ({exc})") from exc
    body = memoryview(blob)[8 + size :]
    arrays = {}
    for key, entry in index.items():
        try:
            dtype_name, shape, offset = str(entry[0]), [int(n) for n in entry[1]], int(entry[2])
        except (TypeError, ValueError, IndexError, KeyError) as exc:
            raise ValueError(f"{path}: {key} has a malformed index entry") from exc
        dtype = _dtype(dtype_name)
        if dtype is None:
            raise ValueError(f"{path}: {key} has dtype {dtype_name!r}")
        count = int(np.prod(shape, dtype=np.int64))
        if offset < 0 or min(shape, default=0) < 0 or offset + count * dtype.itemsize > len(body):
            raise ValueError(f"{path}: {key} lies outside the file")
        arrays[key] = np.frombuffer(body, dtype=dtype, count=count, offset=offset).reshape(shape)
    return arrays


def _dtype(name: str) -> np.dtype | None:
    """The dtype `name` if plain numbers of it may travel, else None."""
    if name == "bfloat16":
        import ml_dtypes  # noqa: PLC0415 - only jobs with bfloat16 need it

        return np.dtype(ml_dtypes.bfloat16)
    try:
        dtype = np.dtype(name)
    except (TypeError, ValueError):
        return None
    return dtype if dtype.kind in "biuf" and dtype.name == name else None


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
    arrays["meta"] = np.frombuffer(json.dumps({"op": op, "cases": meta}).encode(), dtype=np.uint8)
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
    meta = json.loads(job["meta"].tobytes().decode())
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
