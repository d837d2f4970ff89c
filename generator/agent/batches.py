"""Message Batches (`tsgen regen --proposer claude --batch`): each round of questions sent as one batch,
at the batch price.

The loop runs every op of the run at once (judging at most --jobs of them at a time), and each op's
session asks through `BatchRounds.ask`, which blocks. A round closes when every op still in the run is
waiting for an answer: the first round holds the first attempt of every op, the next one the follow-ups
of the ops the gate rejected, and so on. A dispatcher thread sends the round, polls the batch until it
has ended, and hands each result to the op that asked as the results stream in, so judging starts at once.

A killed run loses nothing it paid for: each batch is recorded under build/agent/batches/ (its id, when
it was sent, and the hash of every request in it) as soon as the API has created it, and a question that
a recorded batch already holds is answered from that batch instead of being sent again.
"""

from __future__ import annotations

import hashlib
import json
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tensorsmith_forge.catalog.files import write_atomic

from ..progress import Board
from .budget import Budget, worst_case
from .client import TRANSIENT_STREAM_ERRORS, ApiError, BatchApi, BatchResult, Reply
from .config import Limits, Price, Usage
from .requester import OnFault


def request_key(request: dict[str, Any]) -> str:
    """The request's hash: its custom_id in a batch (64 hex digits, within the API's limit) and its
    key in the ledger."""
    return hashlib.sha256(json.dumps(request, sort_keys=True, ensure_ascii=False).encode("utf-8")).hexdigest()


class Ledger:
    """The batches this checkout has sent, one JSON file each: which batch holds a request."""

    def __init__(self, directory: Path) -> None:
        self.directory = directory
        self._batches: dict[str, tuple[float, set[str]]] = {}  # id -> (sent at, request keys)
        for path in sorted(directory.glob("*.json")) if directory.is_dir() else ():
            try:
                data = json.loads(path.read_text(encoding="utf-8"))
                self._batches[str(data["id"])] = (float(data["sent_at"]), set(data["requests"]))
            except (OSError, ValueError, KeyError, TypeError):
                continue  # a record that cannot be read: its requests are sent again, nothing else is lost

    def record(self, batch_id: str, keys: list[str], sent_at: float) -> None:
        write_atomic(self.directory / f"{batch_id}.json", json.dumps({"id": batch_id, "sent_at": sent_at, "requests": sorted(keys)}))
        self._batches[batch_id] = (sent_at, set(keys))

    def forget(self, batch_id: str) -> None:
        (self.directory / f"{batch_id}.json").unlink(missing_ok=True)
        self._batches.pop(batch_id, None)

    def batch_of(self, key: str, spent: set[tuple[str, str]]) -> str | None:
        """The newest recorded batch holding `key` whose result for it has not been used up."""
        holding = [(sent, batch_id) for batch_id, (sent, keys) in self._batches.items() if key in keys and (key, batch_id) not in spent]
        return max(holding)[1] if holding else None

    def sent_at(self, batch_id: str) -> float:
        return self._batches[batch_id][0]


@dataclass
class _Question:
    request: dict[str, Any]
    key: str
    answered: threading.Event = field(default_factory=threading.Event)
    result: BatchResult | None = None
    error: ApiError | None = None

    def answer(self, result: BatchResult | None = None, error: ApiError | None = None) -> None:
        if not self.answered.is_set():
            self.result, self.error = result, error
            self.answered.set()


class BatchRounds:
    def __init__(self, api: BatchApi, directory: Path, limits: Limits, board: Board,
                 clock: Callable[[], float] = time.time) -> None:  # fmt: skip
        self.api, self.limits, self.board, self.clock = api, limits, board, clock
        self.ledger = Ledger(directory)
        self._spent: set[tuple[str, str]] = set()  # (request key, batch id) whose result was not an answer
        self._changed = threading.Condition()
        self._live = 0  # ops of the run that have not ended
        self._waiting: dict[str, _Question] = {}  # asked for the next round
        self._in_flight: list[_Question] = []
        self._closed = False
        self._stop = threading.Event()
        self._dispatcher: threading.Thread | None = None

    # ---- the loop's side

    def open(self, ops: int) -> None:
        """The run has `ops` more ops, each of which will ask or leave."""
        with self._changed:
            self._live += ops
            if self._dispatcher is None:
                self._dispatcher = threading.Thread(target=self._dispatch, name="batch-rounds", daemon=True)
                self._dispatcher.start()

    def leave(self) -> None:
        """One op has ended (accepted, given up, or failed): the rounds no longer wait for it."""
        with self._changed:
            self._live -= 1
            self._changed.notify_all()

    def close(self) -> None:
        """The run is over or stopped: every question still open fails, and no round is sent any more. A batch
        in progress is not canceled: a rerun picks it up from the ledger."""
        with self._changed:
            self._closed = True
            open_questions = [*self._waiting.values(), *self._in_flight]
            self._waiting.clear()
            self._changed.notify_all()
        self._stop.set()
        for question in open_questions:
            question.answer(error=ApiError("the run stopped before its batch ended (a rerun takes the batch up again)"))

    # ---- the sessions' side

    def ask(self, request: dict[str, Any]) -> BatchResult:
        """The result for `request` in the next round's batch (or in a batch sent before). Blocks until the
        batch has ended. Raises ApiError."""
        question = _Question(request, request_key(request))
        with self._changed:
            if self._closed:
                raise ApiError("the run has stopped")
            assert question.key not in self._waiting, "two ops asked the same question"
            self._waiting[question.key] = question
            self._changed.notify_all()
        question.answered.wait()
        if question.error is not None:
            raise question.error
        assert question.result is not None
        if question.result.kind != "succeeded":  # asked again, it goes into a new batch
            with self._changed:
                self._spent.add((question.key, question.result.batch_id))
        return question.result

    # ---- the dispatcher

    def _dispatch(self) -> None:
        while True:
            with self._changed:
                self._changed.wait_for(lambda: self._closed or (self._waiting and len(self._waiting) >= self._live))
                if self._closed:
                    return
                self._in_flight = list(self._waiting.values())
                self._waiting.clear()
            try:
                self._send(self._in_flight)
            except ApiError as exc:
                for question in self._in_flight:
                    question.answer(error=exc)
            except BaseException as exc:  # noqa: BLE001 - a bug here must fail the questions, not hang the run
                for question in self._in_flight:
                    question.answer(error=ApiError(f"the batch dispatcher failed: {type(exc).__name__}: {exc}"))
            finally:
                with self._changed:
                    self._in_flight = []

    def _send(self, questions: list[_Question]) -> None:
        """Sends what no recorded batch holds as one new batch, then polls every batch of the round until it
        has ended and hands out its results."""
        by_batch: dict[str, list[_Question]] = {}
        fresh: list[_Question] = []
        for question in questions:
            with self._changed:
                known = self.ledger.batch_of(question.key, self._spent)
            (by_batch.setdefault(known, []) if known is not None else fresh).append(question)
        for batch_id in list(by_batch):
            if self.api.retrieve(batch_id) is None:  # expired from the API's store (29 days) or deleted
                self.ledger.forget(batch_id)
                fresh += by_batch.pop(batch_id)
            else:
                self.board.update(f"batch {batch_id}", f"taken up again from an earlier run ({len(by_batch[batch_id])} of this round's questions)")
        if fresh:
            status = self.api.create([{"custom_id": q.key, "params": q.request} for q in fresh])
            self.ledger.record(status.id, [q.key for q in fresh], self.clock())
            by_batch[status.id] = fresh
            self.board.update(f"batch {status.id}", f"sent: {len(fresh)} questions")
        pending = dict(by_batch)
        canceled: set[str] = set()
        while pending and not self._stop.is_set():
            for batch_id in list(pending):
                status = self.api.retrieve(batch_id)
                if status is None:
                    raise ApiError(f"batch {batch_id} is gone from the API before it ended")
                if status.processing_status == "ended":
                    self._hand_out(batch_id, pending.pop(batch_id))
                    continue
                waited = self.clock() - self.ledger.sent_at(batch_id)
                if waited >= self.limits.batch_wait_s and batch_id not in canceled:
                    self.api.cancel(batch_id)
                    canceled.add(batch_id)
                    self.board.update(f"batch {batch_id}", f"canceled: still in progress after {waited:.0f} s (batch_wait_s)")
                else:
                    counts = status.counts
                    self.board.update(f"batch {batch_id}", f"{status.processing_status}: {counts.get('processing', 0)} of "
                                                           f"{sum(counts.values())} requests processing")  # fmt: skip
            if pending:
                self._stop.wait(self.limits.batch_poll_s)

    def _hand_out(self, batch_id: str, questions: list[_Question]) -> None:
        by_key = {q.key: q for q in questions}
        counts: dict[str, int] = {}
        for result in self.api.results(batch_id):
            counts[result.kind] = counts.get(result.kind, 0) + 1
            question = by_key.pop(result.custom_id, None)
            if question is not None:  # a recorded batch may hold questions this run no longer asks
                question.answer(result)
        for question in by_key.values():
            question.answer(error=ApiError(f"batch {batch_id} ended without a result for this request"))
        self.board.update(f"batch {batch_id}", "ended: " + ", ".join(f"{n} {kind}" for kind, n in sorted(counts.items())))


class BatchRequester:
    """The interactive Requester's counterpart: one question, answered in a batch round, within the run's
    budget at the batch price. A request that expired in its batch or met a transient error there is asked
    again in the next round, at most stream_retries times, like a broken stream."""

    def __init__(self, rounds: BatchRounds, budget: Budget, price: Price, limits: Limits) -> None:
        self.rounds, self.budget, self.price, self.limits = rounds, budget, price, limits

    def ask(self, request: dict[str, Any], on_fault: OnFault) -> tuple[Reply, float]:
        """The reply and its cost. Raises ApiError or budget.OverBudget."""
        estimate = worst_case(request, self.price)
        for retry in range(self.limits.stream_retries + 1):
            held = self.budget.reserve(estimate, wait=False)  # the holders wait for this same round: never wait
            try:
                result = self.rounds.ask(request)
            except BaseException:
                self.budget.settle(held, Usage(), self.price)
                raise
            if result.reply is not None:
                return result.reply, self.budget.settle(held, result.reply.usage, self.price)
            self.budget.settle(held, Usage(), self.price)  # the API bills no request that did not succeed
            what = describe(result)
            retriable = result.kind == "expired" or (result.kind == "errored" and result.error_type in TRANSIENT_STREAM_ERRORS)
            if not retriable:
                raise ApiError(what)
            if retry == self.limits.stream_retries:
                raise ApiError(f"{what}; gave up after {retry + 1} batch rounds")
            on_fault(f"{what}; asking again in the next batch round", Usage(), 0.0)
        raise AssertionError("unreachable")  # the last retry returns or raises


def describe(result: BatchResult) -> str:
    where = f"in batch {result.batch_id}" if result.batch_id else "in a batch"
    if result.kind == "errored":
        return f"the request errored {where}: {result.error_type or 'error'}: {result.message}"
    if result.kind == "expired":
        return f"the request expired {where} before it was processed"
    if result.kind == "canceled":
        return f"batch {result.batch_id} was canceled before the request was processed"
    return f"an unknown result {where}: {result.kind!r}"
