"""`tsgen build`: an incremental in-place (editable) build of the extension.

pip drives scikit-build-core, which keeps its CMake build tree under build/,
so only translation units whose files changed are recompiled. We show ninja's
[n/N] progress on one line and the tail of the log when the build fails.
"""

from __future__ import annotations

import re
import subprocess
import sys
from collections import deque

from .errors import GeneratorError
from .project import Project

_NINJA_STEP = re.compile(r"^\[(\d+)/(\d+)\]\s+(.*)")


def build(project: Project, progress=print) -> None:
    command = [sys.executable, "-m", "pip", "install", "--no-build-isolation", "--no-deps", "-v", "-e", str(project.root)]
    progress("building the extension (incremental): " + " ".join(command[2:]))
    tail: deque[str] = deque(maxlen=40)
    with subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, cwd=project.root) as proc:
        assert proc.stdout is not None
        for line in proc.stdout:
            tail.append(line.rstrip())
            step = _NINJA_STEP.match(line.strip())
            if step:
                progress(f"  [{step[1]}/{step[2]}] {_short(step[3])}")
        code = proc.wait()
    if code != 0:
        raise GeneratorError("the build failed; last lines of its log:\n" + "\n".join(tail))
    progress("build finished")


def _short(action: str) -> str:
    """'Building CXX object CMakeFiles/_C.dir/generated/cpu/add.cpp.o' -> 'generated/cpu/add.cpp'."""
    match = re.search(r"\.dir/(.+?)\.o\b", action)
    return match[1] if match else action[:100]
