"""File writes the generator and the gate share."""

from __future__ import annotations

import os
import secrets
from pathlib import Path


def write_atomic(path: Path, text: str, mode: int = 0o666) -> None:
    """Writes `path` so that readers see the old file or the new one, never a part. The temporary file is
    created like any other file (open mode 0666, less the umask: 0644 with umask 022); tempfile.mkstemp
    would make it, and so the final file, 0600. A secret passes mode=0o600."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.{secrets.token_hex(6)}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, mode)
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="\n") as f:
            f.write(text)
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
