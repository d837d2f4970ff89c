"""The run's budget holds with any --jobs: a request's worst case is reserved before it is sent, and a
request the rest of the budget cannot cover is never sent."""

from __future__ import annotations

import random
import re
import threading
from pathlib import Path

import pytest

from tensorsmith_forge.generator.agent.budget import Budget, Cost, OverBudget, worst_case
from tensorsmith_forge.generator.agent.config import Price, Usage
from tests.agent.conftest import GOOD
from tests.agent.fake_api import Answer, Stall, cpp
from tests.agent.fake_api import Usage as Billed
from tests.agent.test_agent_http import manifest

PRICE = Price(input=1.0, output=1.0, cache_write=1.0, cache_read=1.0)  # $1 per million tokens of any kind


def usd(amount: float) -> Usage:
    return Usage(output=round(amount * 1e6))  # what costs `amount` at PRICE


def in_thread(target) -> tuple[threading.Thread, list]:
    outcome: list = []
    thread = threading.Thread(target=lambda: outcome.append(_run(target)), daemon=True)
    thread.start()
    return thread, outcome


def _run(target):
    try:
        return target()
    except OverBudget as exc:
        return exc


def test_a_request_waits_for_the_requests_in_flight_and_is_refused_once_none_can_free_enough() -> None:
    budget = Budget(usd=1.0)
    first = budget.reserve(Cost(0.6, 0))
    second, outcome = in_thread(lambda: budget.reserve(Cost(0.6, 0)))
    second.join(0.3)
    assert second.is_alive() and outcome == []  # 0.6 held + 0.6 > 1.0: it waits, it is not sent
    budget.settle(first, usd(0.1), PRICE)  # the first used less than its worst case: now there is room
    second.join(5)
    assert outcome == [Cost(0.6, 0)]
    third, refused = in_thread(lambda: budget.reserve(Cost(0.6, 0)))
    third.join(0.3)
    assert third.is_alive()
    budget.settle(outcome[0], usd(0.5), PRICE)  # spent 0.6; 0.4 left, nothing in flight
    third.join(5)
    assert isinstance(refused[0], OverBudget) and "cannot cover another request" in str(refused[0])
    assert budget.usd == pytest.approx(0.6)


def test_concurrent_requests_never_spend_more_than_the_budget() -> None:
    dear = Price(input=50.0, output=50.0, cache_write=50.0, cache_read=50.0)
    budget = Budget(usd=1.0, tokens=60_000)
    sent, lock = [], threading.Lock()

    def op(seed: int) -> None:
        rng = random.Random(seed)
        while True:
            used = Usage(output=rng.randint(0, 3000))  # what the request will turn out to use; its worst case is more
            worst = Cost(used.cost(dear) * rng.uniform(1, 3) + 1e-6, round(used.total * rng.uniform(1, 3)) + 1)
            try:
                held = budget.reserve(worst)
            except OverBudget:
                return
            with lock:
                sent.append(used)
            budget.settle(held, used, dear)

    threads = [threading.Thread(target=op, args=(seed,), daemon=True) for seed in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(30)
    assert not any(thread.is_alive() for thread in threads)  # every op ended: none waits forever
    assert len(sent) > 8
    assert budget.usd == pytest.approx(sum(u.cost(dear) for u in sent)) and budget.usd <= 1.0
    assert budget.tokens == sum(u.total for u in sent) and budget.tokens <= 60_000


def test_the_worst_case_covers_the_whole_output_and_every_character_sent() -> None:
    text = "float x = 1.0f;\n" * 500
    request = {"model": "m", "max_tokens": 4000, "messages": [{"role": "user", "content": [{"type": "text", "text": text}]}]}
    price = Price(input=3.0, output=15.0, cache_write=3.75, cache_read=0.30)
    # A token is at least one byte: the input cannot be more tokens than characters sent; output stops at max_tokens.
    dearest = Usage(cache_write=len(text), output=4000)
    assert worst_case(request, price).usd >= dearest.cost(price)
    assert worst_case(request, price).tokens >= dearest.total
    assert worst_case({**request, "max_tokens": 8000}, price).usd > worst_case(request, price).usd


# ---- the whole run: `tsgen regen --proposer claude --jobs 2`

# Every answer bills its whole output budget (2000 tokens, conftest's max_tokens) with the test model whose input
# costs next to nothing: a request costs about $0.03 and may cost at most about that.
FULL_OUTPUT = Billed(input=1200, output=2000)
OUTPUT_PRICED = "claude-test-output-priced"


def run_cost(stdout: str) -> float:
    return float(re.search(r"API cost of this run: \$(\d+\.\d+)", stdout)[1])


def test_parallel_ops_stay_within_the_budget(claude, fake_api, agent_checkout: Path) -> None:
    # Each answer is held 1.5 s, so both ops would be in flight at once; there is room for one answer only.
    for op in ("twice", "thrice"):
        fake_api.script(op, Stall(1.5, Answer(text=f"```cpp\n{GOOD[op]}```\n", usage=FULL_OUTPUT)))
    result = claude("--jobs", "2", "--model", OUTPUT_PRICED, "--budget-usd", "0.05")
    assert result.returncode == 1 and "Traceback" not in result.stderr
    sent = {op: len(fake_api.requests_for(op)) for op in ("twice", "thrice")}
    assert sorted(sent.values()) == [0, 1]  # the second was never sent
    assert 0.03 <= run_cost(result.stdout) <= 0.05
    accepted, refused = sorted(sent, key=sent.get, reverse=True)
    assert f"cpu/{accepted}.cpp" in manifest(agent_checkout)  # and the one that was paid for is written
    assert re.search(rf"rejected {refused}\.cpu: .*the run's budget of \$0\.05 cannot cover another request", result.stdout)


def test_a_budget_too_small_for_any_request_sends_none(claude, fake_api, agent_checkout: Path) -> None:
    for op in ("twice", "thrice"):
        fake_api.script(op, cpp(GOOD[op]))
    result = claude("--jobs", "2", "--budget-usd", "0.0001")
    assert result.returncode == 1 and "Traceback" not in result.stderr
    assert fake_api.requests == []
    for op in ("twice", "thrice"):
        assert re.search(rf"rejected {op}\.cpu: .*the run's budget of \$0\.0001 cannot cover another request", result.stdout)
