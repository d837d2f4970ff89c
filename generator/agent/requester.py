"""One question to the model, as the session asks it: within the run's budget, and with a stream
that broke sent again, a bounded number of times.

A question sends at most 1 + sdk_max_retries + stream_retries HTTP requests in all (models.toml):
the SDK repeats a request that fails before its stream starts, this module repeats a stream that
broke (at most stream_retries times, after a doubling pause), and each repetition leaves the SDK
only the requests still allowed. Every stream is sent only once its worst-case cost is reserved
from the budget, and is settled with the usage it reported, a broken one's included.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from .budget import Budget, worst_case
from .client import ApiError, MessagesClient, Reply, StreamFault
from .config import Limits, Price, Usage

MAX_BACKOFF_S = 30.0

# on_fault(what broke and what happens next, the usage the broken stream reported, its cost)
OnFault = Callable[[str, Usage, float], None]


def max_http_requests(limits: Limits) -> int:
    return 1 + limits.sdk_max_retries + limits.stream_retries


class Requester:
    def __init__(self, client: MessagesClient, budget: Budget, price: Price, limits: Limits,
                 sleep: Callable[[float], None] = time.sleep) -> None:  # fmt: skip
        self.client, self.budget, self.price, self.limits, self.sleep = client, budget, price, limits, sleep

    def ask(self, request: dict[str, Any], on_fault: OnFault) -> tuple[Reply, float]:
        """The reply and its cost. Raises ApiError (failed for good) or budget.OverBudget."""
        estimate = worst_case(request, self.price)
        allowed = max_http_requests(self.limits)
        sent = 0
        for retry in range(self.limits.stream_retries + 1):
            held = self.budget.reserve(estimate)
            try:
                reply = self.client.send(request, max_retries=min(self.limits.sdk_max_retries, allowed - sent - 1))
            except StreamFault as fault:
                cost = self.budget.settle(held, fault.usage, self.price)
                sent += fault.http_requests
                if retry == self.limits.stream_retries or sent >= allowed:
                    on_fault(str(fault), fault.usage, cost)
                    raise ApiError(f"{fault}; gave up after {sent} HTTP requests") from None
                delay = min(self.limits.stream_backoff_s * 2**retry, MAX_BACKOFF_S)
                on_fault(f"{fault}; asking again in {delay:g} s", fault.usage, cost)
                self.sleep(delay)
                continue
            except BaseException:
                self.budget.settle(held, Usage(), self.price)  # no answer came: nothing known to be billed
                raise
            return reply, self.budget.settle(held, reply.usage, self.price)
        raise AssertionError("unreachable")  # the last retry returns or raises
