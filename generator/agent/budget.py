"""What the whole run may spend (`--budget-usd`, `--budget-tokens`), shared by the ops in flight.

The budget holds with any --jobs because no request is sent before its worst-case cost is reserved,
under one lock: a request the rest of the budget cannot cover waits while other requests hold
reservations (they usually settle for much less) and is refused once none does. When the request
ends, its reservation is replaced by what it really used.

The worst case of a request: at most one input token per byte of the request as sent (tokens are
byte sequences), plus the prompt the API adds for tools, all priced as cache writes (the dearest
input); and `max_tokens` of output, thinking included.
"""

from __future__ import annotations

import json
import threading
from dataclasses import dataclass
from typing import Any

from .config import Price, Usage

# Tokens the API adds to a request of its own (the tool-use system prompt is a few hundred).
API_OVERHEAD_TOKENS = 1024


@dataclass(frozen=True)
class Cost:
    usd: float
    tokens: int


def worst_case(request: dict[str, Any], price: Price) -> Cost:
    input_tokens = len(json.dumps(request, ensure_ascii=False).encode("utf-8")) + API_OVERHEAD_TOKENS
    output_tokens = int(request["max_tokens"])
    usd = (input_tokens * max(price.input, price.cache_write) + output_tokens * price.output) / 1e6
    return Cost(usd, input_tokens + output_tokens)


class OverBudget(Exception):
    """The rest of the run's budget cannot cover the request; the message says by how much."""


class Budget:
    def __init__(self, usd: float | None = None, tokens: int | None = None) -> None:
        self.usd_limit, self.token_limit = usd, tokens
        self.usd, self.tokens = 0.0, 0  # spent: settled requests only
        self._held = Cost(0.0, 0)  # reserved by requests in flight
        self._holders = 0
        self._changed = threading.Condition()

    def reserve(self, cost: Cost, wait: bool = True) -> Cost:
        """Holds `cost` for one request; waits while requests in flight may still free enough.
        Raises OverBudget when nothing is in flight and the rest cannot cover it, or at once with wait=False
        (a request for a batch round: the requests holding the rest wait for that round too)."""
        with self._changed:
            while (short := self._shortfall(cost)) is not None:
                if self._holders == 0 or not wait:
                    raise OverBudget(short)
                self._changed.wait()
            self._held = Cost(self._held.usd + cost.usd, self._held.tokens + cost.tokens)
            self._holders += 1
            return cost

    def settle(self, held: Cost, usage: Usage, price: Price) -> float:
        """Replaces a reservation with what the request used (nothing, when no answer came); returns its cost."""
        cost = usage.cost(price)
        with self._changed:
            self._held = Cost(self._held.usd - held.usd, self._held.tokens - held.tokens)
            self._holders -= 1
            self.usd += cost
            self.tokens += usage.total
            self._changed.notify_all()
        return cost

    def _shortfall(self, cost: Cost) -> str | None:
        if self.usd_limit is not None and self.usd + self._held.usd + cost.usd > self.usd_limit:
            left = max(self.usd_limit - self.usd, 0.0)
            return (f"the run's budget of ${self.usd_limit:g} cannot cover another request "
                    f"(up to ${cost.usd:.4f}; ${left:.4f} left, ${self.usd:.4f} spent)")  # fmt: skip
        if self.token_limit is not None and self.tokens + self._held.tokens + cost.tokens > self.token_limit:
            left = max(self.token_limit - self.tokens, 0)
            return (f"the run's budget of {self.token_limit} tokens cannot cover another request "
                    f"(up to {cost.tokens}; {left} left, {self.tokens} spent)")  # fmt: skip
        return None
