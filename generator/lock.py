"""One writer of generated/ at a time.

Two regenerations at once each plan from the tree they started with and write the whole tree at the end
(writer.write): whichever finishes last lands, older inputs and all, and `recover` run by one can meet the
other between its two renames. Every command that writes generated/ holds an exclusive lock on the checkout's
root directory for its whole run (not on generated/, which a write replaces, nor on a file of its own, which
would change the tree); a second one stops at once. The lock is the operating system's (flock): a killed run
holds it no longer.
"""

from __future__ import annotations

import fcntl
import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from .errors import GeneratorError


@contextmanager
def writing_generated(root: Path, command: str) -> Iterator[None]:
    """Holds the lock while the block runs `command`; GeneratorError when another run holds it."""
    descriptor = os.open(root, os.O_RDONLY | os.O_DIRECTORY)
    try:
        try:
            fcntl.flock(descriptor, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise GeneratorError(f"{command}: another run is writing generated/ in {root} (a tsgen regen or submit): "
                                 "wait for it to end, or stop it") from None  # fmt: skip
        yield
    finally:
        os.close(descriptor)  # and the lock with it
