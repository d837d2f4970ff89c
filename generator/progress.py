"""A live status board for work on many ops at once.

On a terminal, one line per op in flight is redrawn in place below the lines of
finished ops, with the running cost; elsewhere (CI logs, pipes) every change is
one printed line, so the log reads in order.
"""

from __future__ import annotations

import sys
import threading
from typing import TextIO

FINAL_STATES = ("accepted", "gave up", "rejected", "up to date", "ended")  # "ended": a Message Batch


class Board:
    def __init__(self, stream: TextIO | None = None, live: bool | None = None) -> None:
        self.stream = stream or sys.stdout
        self.live = self.stream.isatty() if live is None else live
        self.active: dict[str, str] = {}
        self.cost_usd: float | None = None
        self._drawn = 0
        self._lock = threading.Lock()

    def update(self, label: str, state: str) -> None:
        with self._lock:
            final = state.startswith(FINAL_STATES)
            if not final and self.active.get(label) == state:
                return  # e.g. several gate stages that all read "compiling"
            if final:
                self.active.pop(label, None)
            else:
                self.active[label] = state
            if not self.live:
                self.stream.write(f"{label}: {state}{self._cost()}\n")
            else:
                self._erase()
                if final:
                    self.stream.write(f"{label}: {state}\n")
                self._draw()
            self.stream.flush()

    def set_cost(self, usd: float) -> None:
        with self._lock:
            self.cost_usd = usd

    def close(self) -> None:
        with self._lock:
            if self.live:
                self._erase()
                self.stream.flush()

    def _cost(self) -> str:
        return f"  [${self.cost_usd:.4f} spent]" if self.cost_usd is not None else ""

    def _erase(self) -> None:
        if self._drawn:
            self.stream.write(f"\x1b[{self._drawn}F\x1b[J")  # up to the block's first line, clear to the end
        self._drawn = 0

    def _draw(self) -> None:
        lines = [f"  {label}: {state}" for label, state in sorted(self.active.items())]
        lines.append(f"  {len(self.active)} in flight{self._cost()}")
        self.stream.write("".join(line + "\n" for line in lines))
        self._drawn = len(lines)
