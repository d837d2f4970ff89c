"""The sandboxed side of the gate: runs one candidate module on a job of cases.

    python -m tensorsmith_forge.validators.runner MODULE JOB OUT PLAN     (array files, see save_arrays; PLAN is JSON)

Trusts nothing it loads: it only calls the candidate and writes what came out. References and comparisons
happen in the parent process, where the candidate cannot reach them. Each case lists its runs; a run is a
value set in some memory, with new allocations filled (or not) as the plan says:

  a    value set a in fresh buffers
  b    value set b written into the SAME buffers as run a (same pointers and shapes): a result cached on
       pointer or shape returns a's answer here
  c    value set a up to a point of each buffer and b after it, in fresh buffers: a result memoised on the
       first inputs of run a returns a's answer here
  a2   value set a again in fresh buffers, other fill bytes: must equal run a, so outputs the kernel never
       wrote or results that read memory before writing it show
  raw  value set a in fresh buffers with new memory left as the allocator hands it out (production)
  g    value set a in buffers that end (odd cases: start) at a no-access page, outputs placed the same way

Every fill is a stream of bytes from a seed the parent draws per run, so no fixed canary exists; before
every run the dead part of every kernel thread's stack is wiped (testing.h: scrub_stacks). After each run
every operand buffer is compared with the value set it held, and one that changed is sent back, so the
parent can say the candidate wrote its inputs. On a device other than
the CPU, the plan's `parity` also runs value set a through the module's CPU kernel (the candidate's CPU
twin) so the parent can check the two devices agree. Before each call the runner writes the case and run
to PROGRESS, so a run that kills the process is named.
"""

from __future__ import annotations

import ctypes
import faulthandler
import importlib.util
import json
import os
import sys
from pathlib import Path
from typing import Any

import numpy as np

RUNS = ("a", "b", "c", "a2", "raw", "g")
VALUE_SET = {"a": "a", "b": "b", "c": "c", "a2": "a", "raw": "a", "g": "a"}
PROGRESS = "progress"
# Array files: an 8-byte little-endian length, a JSON index {key: [dtype, shape, offset]}, then the raw bytes.
# One read and one frombuffer per array (an .npz of thousands of small arrays takes seconds to load), no
# pickles, and every entry checked on load: the runner's output is written next to a hostile candidate.
# Only plain numbers travel: bool, integers, floats, complex (numpy's kinds b, i, u, f, c) and bfloat16.


def save_arrays(path: Path, arrays: dict[str, np.ndarray]) -> None:
    """Writes `arrays` (plain numbers only, see _dtype) to one array file (see load_arrays)."""
    index, chunks, offset = {}, [], 0
    for key, value in arrays.items():
        array = np.asarray(value)
        if _dtype(array.dtype.name) is None:
            raise ValueError(f"{key}: arrays of {array.dtype} do not travel (not a tensorsmith dtype)")
        data = np.ascontiguousarray(array).reshape(-1).view(np.uint8)  # no copy when already contiguous
        index[key] = [array.dtype.name, list(array.shape), offset]
        chunks.append(data)
        offset += data.size
    header = json.dumps(index).encode()
    with open(path, "wb") as out:
        out.write(len(header).to_bytes(8, "little"))
        out.write(header)
        for chunk in chunks:
            out.write(memoryview(chunk))


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


def guards_start(position: int) -> bool:
    """Whether run g places the case at `position` after a no-access page (odd cases) or before one (even)."""
    return position % 2 == 1


def value_set_c(a: np.ndarray, b: np.ndarray, split: int) -> np.ndarray:
    """Value set c of one buffer: value set a's elements before `split`, value set b's from it on."""
    return np.concatenate([a[:split], b[split:]])


def _dtype(name: str) -> np.dtype | None:
    """The dtype `name` if plain numbers of it may travel, else None."""
    if name == "bfloat16":
        import ml_dtypes  # noqa: PLC0415 - only jobs with bfloat16 need it

        return np.dtype(ml_dtypes.bfloat16)
    try:
        dtype = np.dtype(name)
    except (TypeError, ValueError):
        return None
    return dtype if dtype.kind in "biufc" and dtype.name == name else None


def write_job(path: Path, op: str, cases: list[Any], runs: list[tuple[str, ...]]) -> None:
    """Serialises cases (validators.inputs.Case) for the runner, with the runs each gets (RUNS):
    buffers as arrays (value sets a and b; c is made from them), layout as JSON."""
    arrays: dict[str, np.ndarray] = {}
    meta = []
    for i, (case, case_runs) in enumerate(zip(cases, runs)):
        operands = []
        for k, operand in enumerate(case.operands):
            arrays[f"{i}.{k}.a"] = operand.buffer
            if {"b", "c"} & set(case_runs):
                arrays[f"{i}.{k}.b"] = operand.buffer_b
            operands.append({"shape": list(operand.shape), "strides": list(operand.strides), "offset": operand.offset,
                             "split": operand.split})  # fmt: skip
        meta.append({"id": case.id, "operands": operands, "kwargs": _json_kwargs(case.kwargs), "runs": list(case_runs)})
    arrays["meta"] = np.frombuffer(json.dumps({"op": op, "cases": meta}).encode(), dtype=np.uint8)
    save_arrays(path, arrays)


def _json_kwargs(kwargs: dict[str, Any]) -> dict[str, Any]:
    return {k: list(v) if isinstance(v, tuple) else v for k, v in kwargs.items()}


def _view(buffer: np.ndarray, operand: dict[str, Any]) -> np.ndarray:
    item = buffer.dtype.itemsize
    return np.ndarray(tuple(operand["shape"]), buffer.dtype, buffer=buffer, offset=operand["offset"] * item,
                      strides=tuple(s * item for s in operand["strides"]))  # fmt: skip


def _axis_arguments(kwargs: dict[str, Any]) -> tuple[list[int] | None, bool, dict[str, bool], dict[str, float]]:
    """The case's axis as a list (or None), whether it gave one, its boolean options (keepdims, ...) and its
    float ones (eps)."""
    axis = kwargs.get("axis")
    axis_list = None if axis is None else ([axis] if isinstance(axis, int) else list(axis))
    flags = {k: v for k, v in kwargs.items() if isinstance(v, bool)}
    return axis_list, "axis" in kwargs, flags, {k: v for k, v in kwargs.items() if isinstance(v, float)}


class _Buffers:
    """The operand buffers of one case for each run: fresh copies, run a's own memory, or guarded copies."""

    def __init__(self, module: Any, job: Any, index: int, operands: list[dict[str, Any]]) -> None:
        self.module, self.job, self.index, self.operands = module, job, index, operands
        self.first: list[np.ndarray] = []  # run a's buffers, which run b writes into
        self._c: dict[int, np.ndarray] = {}

    def values(self, which: str, k: int) -> np.ndarray:
        """The pristine buffer of value set `which` for operand k (what a run's buffer must still hold after it)."""
        a = self.job[f"{self.index}.{k}.a"]
        if which == "a":
            return a
        b = self.job[f"{self.index}.{k}.b"]
        if which == "b":
            return b
        if k not in self._c:
            self._c[k] = value_set_c(a, b, self.operands[k]["split"])
        return self._c[k]

    def for_run(self, run: str) -> list[np.ndarray]:
        which = VALUE_SET[run]
        count = len(self.operands)
        if run == "b" and self.first:
            for k, buffer in enumerate(self.first):
                np.copyto(buffer, self.values("b", k))
            return self.first
        if run == "g":
            before = guards_start(self.index)
            return [self.module.guarded_copy(np.ascontiguousarray(self.values(which, k)), before) for k in range(count)]
        buffers = [np.array(self.values(which, k), copy=True) for k in range(count)]
        if run == "a":
            self.first = buffers
        return buffers


def _same_bytes(a: np.ndarray, b: np.ndarray) -> bool:
    return a.shape == b.shape and bool(np.array_equal(a.reshape(-1).view(np.uint8), b.reshape(-1).view(np.uint8)))


def run_job(module: Any, job: Any, plan: dict[str, Any], progress: int | None = None) -> tuple[dict[str, np.ndarray], dict[str, Any]]:
    """Every case's runs: the outputs (and any input buffer a run changed, as `{case}.{run}.in{k}`), and a
    record of the errors raised. `plan`: device, parity, placement ("pooled", "exact" or "guard": guard_after
    and guard_before by case), fills (run -> seed or None), scrub (the stacks are wiped before each run).
    `progress`: a file descriptor that holds the case and run in progress."""
    meta = json.loads(job["meta"].tobytes().decode())
    device = plan.get("device", "cpu")
    outputs: dict[str, np.ndarray] = {}
    errors: dict[str, dict[str, Any]] = {}
    scrub = int(plan["scrub"])
    for i, case in enumerate(meta["cases"]):
        axis, axis_given, flags, scalars = _axis_arguments(case["kwargs"])
        buffers = _Buffers(module, job, i, case["operands"])
        placement = plan.get("placement", "pooled")
        if placement == "guard":
            placement = "guard_before" if guards_start(i) else "guard_after"
        for run in case["runs"]:
            held = buffers.for_run(run)
            views = [_view(b, o) for b, o in zip(held, case["operands"])]
            key = f"{i}.{run}"  # case ids repeat across dtypes; positions do not
            if progress is not None:
                os.pwrite(progress, f"{i} {run}".ljust(32).encode(), 0)
            module.scrub_stacks((scrub + 7919 * i + RUNS.index(run)) & (2**64 - 1))
            module.set_allocation_placement(placement)
            module.set_allocation_fill(plan["fills"].get(run))
            try:
                outputs[f"{key}.out"] = module.invoke(meta["op"], views, axis, axis_given, flags, scalars, device)
            except Exception as exc:  # noqa: BLE001 - any exception is the candidate's answer for this case
                bases = [c.__name__ for c in type(exc).__mro__[1:]]
                errors[key] = {"type": type(exc).__name__, "message": str(exc)[:500], "bases": bases}
            finally:
                module.set_allocation_fill(None)
                module.set_allocation_placement("pooled")
            for k, buffer in enumerate(held):
                if not _same_bytes(buffer, buffers.values(VALUE_SET[run], k)):
                    outputs[f"{key}.in{k}"] = np.array(buffer, copy=True)
            if plan.get("parity") and run == "a":  # the same inputs through the CPU twin (run a left them unchanged, or fails)
                try:
                    outputs[f"{i}.cpu.out"] = module.invoke(meta["op"], views, axis, axis_given, flags, scalars, "cpu")
                except Exception:  # noqa: BLE001 - a CPU error is the CPU gate's business; parity then has nothing to compare
                    pass
    return outputs, {"errors": errors}


def load_module(path: Path) -> Any:
    spec = importlib.util.spec_from_file_location("_gate", path)
    if spec is None or spec.loader is None:
        raise ImportError(f"cannot load {path}")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def main(argv: list[str]) -> int:
    faulthandler.enable()  # a crash prints the Python stack on stderr, which the gate's verdict quotes
    module_path, job_path, out_path, plan_path = map(Path, argv[:4])
    plan = json.loads(plan_path.read_text(encoding="utf-8"))
    for library in plan.get("preload", []):  # before the module: its runtime finds them by soname (cuBLAS)
        ctypes.CDLL(library, mode=ctypes.RTLD_LOCAL)
    module = load_module(module_path)
    progress = os.open(out_path.parent / PROGRESS, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    outputs, record = run_job(module, load_arrays(job_path), plan, progress=progress)
    save_arrays(out_path, outputs)
    out_path.with_suffix(".record.json").write_text(json.dumps(record), encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
