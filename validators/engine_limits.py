"""The CPU engines' thresholds, read from the runtime's own header (tensorsmith/engine_limits.h).

The gate's large cases are sized from these (inputs.threshold_cases): where the engine splits a row into
chunks, which rows reach the kernel whole, how long a streamed piece is. They are read by compiling a tiny
program against the header, so they are the values the engine is built with, whatever expression defines
them; the answer is cached by the header's content and the compiler.
"""

from __future__ import annotations

import hashlib
import json
import re
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path

from tensorsmith_forge.catalog.files import write_atomic

HEADER = Path("runtime") / "include" / "tensorsmith" / "engine_limits.h"
_CONSTANT = re.compile(r"^\s*constexpr\s+int64_t\s+(k\w+)\s*=", re.MULTILINE)


@dataclass(frozen=True)
class EngineLimits:
    pointwise_grain: int  # elements per thread below which a pointwise op runs on one thread
    stream_scratch_bytes: int  # a streamed output reaches the kernel in pieces this long
    stream_floor_bytes: int  # the smallest output that streams by default
    reduce_grain: int
    split_chunk: int  # a long row of a split reduction reaches the kernel in chunks this long
    split_max_rows: int  # with more rows than this, every row reaches the kernel whole
    row_grain: int  # normalization: elements per thread below which rows stay on one thread
    scan_grain: int  # scans: elements per thread below which lines stay on one thread
    scan_tile: int  # scans: adjacent lines one call scans side by side, at most
    sort_grain: int  # sorts: elements per thread below which rows stay on one thread

    @staticmethod
    def from_constants(constants: dict[str, int]) -> EngineLimits:
        names = {"kPointwiseGrain": "pointwise_grain", "kStreamScratchBytes": "stream_scratch_bytes",
                 "kStreamFloorBytes": "stream_floor_bytes", "kReduceGrain": "reduce_grain", "kSplitChunk": "split_chunk",
                 "kSplitMaxRows": "split_max_rows", "kRowGrain": "row_grain", "kScanGrain": "scan_grain",
                 "kScanTile": "scan_tile", "kSortGrain": "sort_grain"}  # fmt: skip
        missing = sorted(set(names) - set(constants))
        if missing:
            raise RuntimeError(f"{HEADER} lacks {', '.join(missing)}, which the gate sizes its cases from")
        return EngineLimits(**{field: int(constants[name]) for name, field in names.items()})


def read_limits(root: Path, compiler: str, cache_dir: Path) -> EngineLimits:
    """The header's constants as the engine is built with them (compiled once per header and compiler)."""
    header = (root / HEADER).read_text(encoding="utf-8")
    names = _CONSTANT.findall(header)
    version = subprocess.run([compiler, "--version"], capture_output=True, text=True).stdout
    key = hashlib.sha256((header + "\0" + version).encode()).hexdigest()[:16]
    cached = cache_dir / f"engine-limits-{key}.json"
    if cached.exists():
        return EngineLimits.from_constants(json.loads(cached.read_text(encoding="utf-8")))
    constants = _evaluate(root, compiler, names)
    write_atomic(cached, json.dumps(constants))
    return EngineLimits.from_constants(constants)


def _evaluate(root: Path, compiler: str, names: list[str]) -> dict[str, int]:
    prints = "\n".join(f'  std::printf("\\"{n}\\": %lld,\\n", static_cast<long long>(ts::limits::{n}));' for n in names)
    program = f'#include <cstdio>\n#include "tensorsmith/engine_limits.h"\nint main() {{\n  std::printf("{{\\n");\n{prints}\n  std::printf("\\"\\": 0}}\\n");\n}}\n'
    with tempfile.TemporaryDirectory(prefix="engine-limits-") as scratch:
        source, binary = Path(scratch) / "probe.cpp", Path(scratch) / "probe"
        source.write_text(program, encoding="utf-8")
        build = subprocess.run([compiler, "-std=c++17", f"-I{root / 'runtime' / 'include'}", str(source), "-o", str(binary)],
                               capture_output=True, text=True, timeout=120)  # fmt: skip
        if build.returncode != 0:
            raise RuntimeError(f"could not read the engine's limits from {HEADER}:\n{build.stderr[-2000:]}")
        out = subprocess.run([str(binary)], capture_output=True, text=True, timeout=30, check=True).stdout
    values = json.loads(out)
    values.pop("")
    return values
