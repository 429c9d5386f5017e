from __future__ import annotations

import asyncio
import gc
import multiprocessing
import threading
import time

import pytest

from trajforge.generators.llm.concurrency import (
    InFlight,
    process_semaphore,
    run_all,
    shared_loop,
)
from trajforge.generators.llm.scripted import ScriptedLLM
from trajforge.schemas import ChatRequest, Message


class ConcurrencyProbe:
    """Counts how many coroutines run at once (all on the loop thread, so no lock needed)."""

    def __init__(self) -> None:
        self.running = 0
        self.max_running = 0

    async def sleep(self, seconds: float, value: object = None) -> object:
        self.running += 1
        self.max_running = max(self.max_running, self.running)
        try:
            await asyncio.sleep(seconds)
        finally:
            self.running -= 1
        return value


async def boom(message: str) -> None:
    await asyncio.sleep(0)
    raise ValueError(message)


def test_shared_loop_is_one_running_thread_per_process():
    loops = []
    threads = [threading.Thread(target=lambda: loops.append(shared_loop())) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len({id(loop) for loop in loops}) == 1
    assert loops[0].is_running()
    assert loops[0] is shared_loop()


def test_completion_order_follows_finish_time_not_submit_order():
    inflight = InFlight(max_in_flight=10)
    probe = ConcurrencyProbe()
    for key, delay in [("slow", 0.2), ("mid", 0.1), ("fast", 0.0)]:
        inflight.submit(key, probe.sleep(delay, value=key))
    done = inflight.drain(timeout_s=5)
    assert [c.key for c in done] == ["fast", "mid", "slow"]
    assert all(c.ok and c.result == c.key for c in done)
    assert inflight.outstanding == 0


def test_ready_returns_finished_without_blocking_and_drain_returns_the_rest():
    inflight = InFlight(max_in_flight=10)
    release = threading.Event()

    async def wait_for_release() -> str:
        while not release.is_set():
            await asyncio.sleep(0.005)
        return "late"

    inflight.submit("now", asyncio.sleep(0, result="now"))
    inflight.submit("late", wait_for_release())
    deadline = time.monotonic() + 5
    first: list = []
    while not first and time.monotonic() < deadline:
        first = inflight.ready()
        time.sleep(0.001)
    assert [c.key for c in first] == ["now"]
    assert inflight.ready() == []
    assert inflight.outstanding == 1
    release.set()
    rest = inflight.drain(timeout_s=5)
    assert [(c.key, c.result) for c in rest] == [("late", "late")]


def test_submit_applies_backpressure_never_more_than_max_in_flight():
    probe = ConcurrencyProbe()
    inflight = InFlight(max_in_flight=7)
    collected = []
    for index in range(60):
        inflight.submit(index, probe.sleep(0.005, value=index))
        collected.extend(inflight.ready())
    collected.extend(inflight.drain(timeout_s=10))
    assert probe.max_running == 7
    assert sorted(c.result for c in collected) == list(range(60))


def test_process_semaphore_bounds_several_inflights_together():
    probe = ConcurrencyProbe()
    limit = process_semaphore(5, name="test-shared")

    def caller() -> None:
        inflight = InFlight(max_in_flight=20, semaphore=limit)
        for index in range(40):
            inflight.submit(index, probe.sleep(0.003))
        assert len(inflight.drain(timeout_s=10)) == 40

    threads = [threading.Thread(target=caller) for _ in range(3)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert probe.max_running == 5


def test_exception_is_carried_with_traceback_and_unwrap_reraises():
    inflight = InFlight(max_in_flight=2)
    inflight.submit("bad", boom("kaput"))
    inflight.submit("good", asyncio.sleep(0, result=1))
    done = {c.key: c for c in inflight.drain(timeout_s=5)}
    assert done["good"].unwrap() == 1
    bad = done["bad"]
    assert not bad.ok and isinstance(bad.error, ValueError)
    assert "kaput" in bad.traceback and "in boom" in bad.traceback
    with pytest.raises(ValueError, match="kaput"):
        bad.unwrap()


def test_drain_times_out_when_work_hangs():
    inflight = InFlight(max_in_flight=1)
    inflight.submit("hang", asyncio.sleep(30))
    with pytest.raises(TimeoutError, match="1 still in flight"):
        inflight.drain(timeout_s=0.05)


def test_drain_reports_on_the_calling_thread_while_units_still_run():
    """A DoFn drains its last units for minutes on a CPU model; `on_wait` lets it report the
    calls made so far, on its own thread (Beam counters are lost from other threads)."""
    probe = ConcurrencyProbe()
    inflight = InFlight(max_in_flight=2)
    inflight.submit("slow", probe.sleep(1.2, "done"))
    calls: list[int] = []
    done = inflight.drain(on_wait=lambda: calls.append(threading.get_ident()), wait_every_s=0.2)
    assert [c.result for c in done] == ["done"]
    assert len(calls) >= 3 and set(calls) == {threading.get_ident()}


def test_drain_with_on_wait_still_times_out():
    inflight = InFlight(max_in_flight=1)
    inflight.submit("hang", asyncio.sleep(30))
    with pytest.raises(TimeoutError, match="1 still in flight"):
        inflight.drain(timeout_s=0.3, on_wait=lambda: None, wait_every_s=0.1)


def test_inflight_runs_llm_clients_on_the_shared_loop():
    llm = ScriptedLLM(responder=lambda request: request.messages[-1].content.upper())
    inflight = InFlight(max_in_flight=4)
    for word in ["alpha", "beta", "gamma"]:
        request = ChatRequest(model="m", messages=(Message(role="user", content=word),))
        inflight.submit(word, llm.complete(request))
    done = {c.key: c.unwrap().message.content for c in inflight.drain(timeout_s=5)}
    assert done == {"alpha": "ALPHA", "beta": "BETA", "gamma": "GAMMA"}


def test_run_all_keeps_input_order_and_accepts_factories():
    probe = ConcurrencyProbe()
    delays = [0.03, 0.0, 0.02, 0.01] * 5
    factories = [lambda i=i, d=d: probe.sleep(d, value=i) for i, d in enumerate(delays)]
    assert run_all(factories, max_in_flight=3) == list(range(len(delays)))
    assert probe.max_running == 3


def test_run_all_raises_first_error_or_returns_it_in_place():
    with pytest.raises(ValueError, match="second"):
        run_all([asyncio.sleep(0), boom("second")], max_in_flight=2)
    results = run_all(
        [lambda: asyncio.sleep(0, result=1), lambda: boom("x")], 2, return_exceptions=True
    )
    assert results[0] == 1 and isinstance(results[1], ValueError)


def test_run_all_refuses_to_run_on_the_loop_thread():
    async def nested() -> None:
        run_all([lambda: asyncio.sleep(0)], max_in_flight=1)

    with pytest.raises(RuntimeError, match="deadlock"):
        run_all([nested], max_in_flight=1)


def test_many_sleeps_overlap_up_to_the_limit():
    """1,000 waits run 200 at a time (overlap is counted, not timed: machines are noisy)."""
    inflight = InFlight(max_in_flight=200)
    running = peak = 0

    async def unit(index: int) -> int:
        nonlocal running, peak  # every unit runs on the one loop thread
        running += 1
        peak = max(peak, running)
        await asyncio.sleep(0.02)
        running -= 1
        return index

    for index in range(1000):
        inflight.submit(index, unit(index))
    done = inflight.drain(timeout_s=60)
    assert len(done) == 1000
    assert peak == 200


def _child_uses_engine(queue: multiprocessing.Queue) -> None:
    try:
        inflight = InFlight(max_in_flight=4)
        for index in range(8):
            inflight.submit(index, asyncio.sleep(0.001, result=index * 2))
        results = sorted(c.unwrap() for c in inflight.drain(timeout_s=10))
        queue.put((id(shared_loop()), results, run_all([asyncio.sleep(0, result="ok")], 1)))
    except BaseException as exc:  # pragma: no cover - reported to the parent
        queue.put(repr(exc))


def test_fork_child_gets_its_own_working_loop():
    parent_loop = shared_loop()
    run_all([asyncio.sleep(0)], max_in_flight=1)  # the parent's loop thread is busy and alive
    context = multiprocessing.get_context("fork")
    queue = context.Queue()
    child = context.Process(target=_child_uses_engine, args=(queue,))
    child.start()
    outcome = queue.get(timeout=20)
    child.join(timeout=10)
    assert not isinstance(outcome, str), outcome
    _, results, small = outcome
    assert results == [0, 2, 4, 6, 8, 10, 12, 14]
    assert small == ["ok"]
    assert child.exitcode == 0
    assert shared_loop() is parent_loop and parent_loop.is_running()


def test_inflight_refuses_to_be_used_from_a_forked_child():
    inflight = InFlight(max_in_flight=1)
    context = multiprocessing.get_context("fork")
    queue = context.Queue()

    def child() -> None:
        try:
            inflight.submit("k", asyncio.sleep(0))
            queue.put("no error")
        except RuntimeError as exc:
            queue.put(str(exc))

    process = context.Process(target=child)
    process.start()
    message = queue.get(timeout=20)
    process.join(timeout=10)
    assert "another process" in message


def test_inflight_calls_factories_on_the_loop_thread_and_keeps_tasks_alive():
    inflight = InFlight(max_in_flight=4)
    threads = []

    async def parked(index: int) -> int:
        threads.append(threading.current_thread().name)
        await asyncio.sleep(0.05)  # nothing but InFlight references this task meanwhile
        return index

    for index in range(8):
        inflight.submit(index, lambda index=index: parked(index))
    gc.collect()
    done = inflight.drain(timeout_s=5)
    assert sorted(c.result for c in done) == list(range(8))
    assert set(threads) == {"trajforge-async-loop"}


def test_queued_work_starts_on_the_loop_as_slots_free_without_the_caller():
    inflight = InFlight(max_in_flight=2, prefetch=3)
    gate = threading.Event()
    started: list[int] = []

    async def unit(index: int) -> int:
        started.append(index)
        while not gate.is_set():
            await asyncio.sleep(0.002)
        return index

    begin = time.monotonic()
    for index in range(5):  # 2 running + 3 queued: none of these submits may block
        inflight.submit(index, unit(index))
    assert time.monotonic() - begin < 1.0
    wait_until(lambda: len(started) == 2)
    time.sleep(0.05)
    assert started == [0, 1]  # never more than max_in_flight running
    gate.set()
    wait_until(lambda: len(started) == 5)  # no submit/ready/drain call in between
    assert sorted(c.result for c in inflight.drain(timeout_s=5)) == [0, 1, 2, 3, 4]


def wait_until(condition, timeout_s: float = 5.0) -> None:
    deadline = time.monotonic() + timeout_s
    while not condition():
        assert time.monotonic() < deadline, "condition not reached in time"
        time.sleep(0.002)
