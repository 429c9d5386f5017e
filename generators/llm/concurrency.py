"""Process-wide async engine: many LLM calls in flight from synchronous (Beam DoFn) code.

Why: a DoFn that blocks on one LLM call per element reaches ~10 el/s; keeping N calls in flight
across the bundle reaches the endpoint's real capacity. The design (DESIGN.md, "Concurrency"):

- one asyncio loop thread per process (`shared_loop`), created lazily and recreated after fork,
  so every DoFn instance, client and semaphore of a worker process shares one loop;
- `InFlight`: continuous refill for one calling thread. `submit` queues a coroutine that the
  loop thread starts as soon as one of `max_in_flight` slots is free, and blocks the caller
  only when a short queue (`prefetch`) is full as well (backpressure); `ready` hands back
  finished ones without blocking; `drain` waits for the rest. Results and errors come back to
  the calling thread, because Beam Metrics must be updated on the DoFn thread, not on the loop
  thread;
- `process_semaphore`: one limit shared by all InFlight users of a process, so several DoFn
  threads do not multiply the concurrency an endpoint sees;
- `run_all`: the same engine for scripts and benchmarks.
"""

from __future__ import annotations

import asyncio
import atexit
import collections
import os
import queue
import threading
import time
import traceback
from collections.abc import Awaitable, Callable, Hashable, Iterable
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from trajforge.schemas import Rejected

T = TypeVar("T")

Work = Awaitable[T] | Callable[[], Awaitable[T]]
"""A coroutine, or a zero-argument factory called on the loop thread when a slot is free."""


class _ProcessLoop:
    """The one loop thread of this process; `pid` tells a forked child to build its own."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.pid: int | None = None
        self.loop: asyncio.AbstractEventLoop | None = None
        self.semaphores: dict[tuple[str, int], asyncio.Semaphore] = {}

    def get(self) -> asyncio.AbstractEventLoop:
        pid = os.getpid()
        loop = self.loop
        if loop is not None and self.pid == pid and not loop.is_closed():
            return loop
        with self.lock:
            if self.loop is None or self.pid != pid or self.loop.is_closed():
                self.loop = _start_loop_thread()
                self.pid = pid
                self.semaphores = {}
            return self.loop

    def reset_after_fork(self) -> None:
        # The parent's loop thread does not exist in the child, and the lock may have been held
        # by a parent thread at fork time: start from scratch.
        self.lock = threading.Lock()
        self.pid = None
        self.loop = None
        self.semaphores = {}


def _start_loop_thread() -> asyncio.AbstractEventLoop:
    loop = asyncio.new_event_loop()
    started = threading.Event()

    def run() -> None:
        asyncio.set_event_loop(loop)
        loop.call_soon(started.set)
        loop.run_forever()
        # Stopped at exit: cancel what is left (idle batchers, keep-alive sessions) so nothing
        # is destroyed while pending, then close.
        pending = asyncio.all_tasks(loop)
        for task in pending:
            task.cancel()
        loop.run_until_complete(asyncio.gather(*pending, return_exceptions=True))
        loop.close()

    thread = threading.Thread(target=run, name="trajforge-async-loop", daemon=True)
    thread.start()
    started.wait()
    atexit.register(_stop_loop, loop, thread)
    return loop


def _stop_loop(loop: asyncio.AbstractEventLoop, thread: threading.Thread) -> None:
    if thread.is_alive() and not loop.is_closed():
        loop.call_soon_threadsafe(loop.stop)
        thread.join(timeout=5)


_PROCESS = _ProcessLoop()
if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_PROCESS.reset_after_fork)


def shared_loop() -> asyncio.AbstractEventLoop:
    """The process's loop, running in its own daemon thread; thread-safe and fork-safe."""
    return _PROCESS.get()


@dataclass(frozen=True)
class ProcessSemaphore:
    """A handle on a semaphore of the shared loop; the handle itself is cheap and picklable."""

    name: str
    limit: int

    def _get(self) -> asyncio.Semaphore:
        # Only called on the loop thread, so the dict is never mutated concurrently.
        key = (self.name, self.limit)
        semaphore = _PROCESS.semaphores.get(key)
        if semaphore is None:
            semaphore = _PROCESS.semaphores[key] = asyncio.Semaphore(self.limit)
        return semaphore


def process_semaphore(limit: int, name: str = "default") -> ProcessSemaphore:
    """A concurrency limit shared by every InFlight of this process that passes it.

    Keyed by (name, limit): two DoFns asking for the same name and limit share one budget; a
    different limit gets its own, so pipelines run one after another in one process (tests,
    DirectRunner) do not leak limits into each other.
    """
    if limit < 1:
        raise ValueError(f"limit must be >= 1, got {limit}")
    return ProcessSemaphore(name=name, limit=limit)


@dataclass(frozen=True)
class Completed(Generic[T]):
    """One finished unit of work, handed back to the thread that submitted it."""

    key: Hashable
    result: T | None = None
    error: BaseException | None = None
    traceback: str | None = None  # formatted on the loop thread, where the stack still exists
    latency_s: float = 0.0

    @property
    def ok(self) -> bool:
        return self.error is None

    def unwrap(self) -> T:
        """The result, or the error re-raised on the calling thread."""
        if self.error is not None:
            raise self.error
        return self.result  # type: ignore[return-value]


async def _await_work(work: Work[T]) -> T:
    if callable(work):
        return await work()
    return await work


async def _run_captured(
    key: Hashable, work: Work[T], semaphore: ProcessSemaphore | None
) -> Completed[T]:
    start = time.perf_counter()
    try:
        if semaphore is None:
            result = await _await_work(work)
        else:
            async with semaphore._get():
                result = await _await_work(work)
    except BaseException as exc:  # noqa: BLE001 - handed back to the caller, never lost
        return Completed(
            key=key,
            error=exc,
            # A `Rejected` is an expected outcome routed without a traceback: none is formatted.
            traceback="" if isinstance(exc, Rejected) else "".join(traceback.format_exception(exc)),
            latency_s=time.perf_counter() - start,
        )
    return Completed(key=key, result=result, latency_s=time.perf_counter() - start)


class InFlight(Generic[T]):
    """Continuous refill for one synchronous caller (a DoFn thread).

    Usage in a DoFn: `submit` in process() then `yield from` the `ready()` results; `drain()` in
    finish_bundle(). One InFlight belongs to one calling thread and one process.

    At most `max_in_flight` units run at once. Up to `prefetch` more wait in a queue that the
    loop thread pulls from the moment a unit finishes, so the next call starts on the loop
    thread itself: the critical path from one response to the next request never waits for the
    calling thread to be scheduled and win the GIL (on a busy 2-core machine that hop cost
    milliseconds per call). The caller blocks only when the running set and the queue are full.
    """

    def __init__(
        self,
        max_in_flight: int,
        semaphore: ProcessSemaphore | None = None,
        prefetch: int | None = None,
    ):
        if max_in_flight < 1:
            raise ValueError(f"max_in_flight must be >= 1, got {max_in_flight}")
        self.max_in_flight = max_in_flight
        self.prefetch = max(1, max_in_flight // 4) if prefetch is None else prefetch
        if self.prefetch < 0:
            raise ValueError(f"prefetch must be >= 0, got {prefetch}")
        self._semaphore = semaphore
        self._room = threading.Semaphore(max_in_flight + self.prefetch)  # running + queued
        self._queued: collections.deque[tuple[Hashable, Work[T]]] = collections.deque()
        self._running = 0  # started and not finished; touched on the loop thread only
        self._done: queue.SimpleQueue[Completed[T]] = queue.SimpleQueue()
        self._outstanding = 0  # submitted and not yet handed back; touched by the caller only
        self._tasks: set[asyncio.Task[None]] = set()  # strong refs; touched on the loop only
        self._pid = os.getpid()
        self._loop = shared_loop()

    @property
    def outstanding(self) -> int:
        return self._outstanding

    def submit(self, key: Hashable, work: Work[T]) -> None:
        """Queue `work`; blocks while `max_in_flight` run and `prefetch` more wait (backpressure)."""
        self._check_process()
        self._room.acquire()
        self._outstanding += 1
        self._queued.append((key, work))  # deque append/popleft are atomic across threads
        # Always wake the loop: skipping it when "all slots look busy" races with a unit that
        # finishes (and finds the queue empty) just before the append.
        self._loop.call_soon_threadsafe(self._start_queued)

    def _start_queued(self) -> None:
        """Start queued units while slots are free (loop thread only)."""
        while self._running < self.max_in_flight and self._queued:
            key, work = self._queued.popleft()
            self._running += 1
            task = self._loop.create_task(self._run(key, work))
            self._tasks.add(task)  # the loop keeps only weak references to tasks
            task.add_done_callback(self._tasks.discard)

    async def _run(self, key: Hashable, work: Work[T]) -> None:
        completed = await _run_captured(key, work, self._semaphore)
        self._running -= 1
        self._start_queued()  # the next request goes out now, not when the caller wakes
        self._done.put(completed)
        self._room.release()

    def ready(self) -> list[Completed[T]]:
        """Everything finished so far, without blocking, in completion order."""
        out: list[Completed[T]] = []
        while True:
            try:
                out.append(self._done.get_nowait())
            except queue.Empty:
                break
        self._outstanding -= len(out)
        return out

    def drain(
        self,
        timeout_s: float | None = None,
        on_wait: Callable[[], None] | None = None,
        wait_every_s: float = 1.0,
    ) -> list[Completed[T]]:
        """Wait for every outstanding unit; TimeoutError if `timeout_s` passes first.

        `on_wait` runs on the calling thread every `wait_every_s` seconds while nothing
        completes: a DoFn reports the LLM calls made so far (Beam counters must be updated on
        the DoFn thread), so progress moves while long units (a whole conversation on a CPU
        model) are still running."""
        self._check_process()
        deadline = None if timeout_s is None else time.monotonic() + timeout_s
        out: list[Completed[T]] = []
        while self._outstanding > 0:
            remaining = None if deadline is None else max(0.0, deadline - time.monotonic())
            wait = remaining if on_wait is None else min(wait_every_s, remaining or wait_every_s)
            try:
                out.append(self._done.get(timeout=wait))
            except queue.Empty:
                if deadline is not None and time.monotonic() >= deadline:
                    raise TimeoutError(
                        f"{self._outstanding} still in flight after {timeout_s}s"
                    ) from None
                if on_wait is not None:
                    on_wait()
                continue
            self._outstanding -= 1
        return out

    def _check_process(self) -> None:
        if os.getpid() != self._pid:
            raise RuntimeError("InFlight was created in another process; create one per process")


def run_all(
    works: Iterable[Work[Any]],
    max_in_flight: int,
    *,
    return_exceptions: bool = False,
    semaphore: ProcessSemaphore | None = None,
) -> list[Any]:
    """Run every coroutine (or factory) on the shared loop, at most `max_in_flight` at a time.

    Results come back in input order. Factories are only called when a slot frees up, so a
    million-item iterable does not create a million coroutines up front. With
    `return_exceptions` errors take their result's place; otherwise the first error is raised.
    Blocks the caller, so it must not be called from the loop thread itself.
    """
    if max_in_flight < 1:
        raise ValueError(f"max_in_flight must be >= 1, got {max_in_flight}")
    loop = shared_loop()
    if _running_loop() is loop:
        raise RuntimeError("run_all would deadlock on the shared loop; await the work instead")
    future = asyncio.run_coroutine_threadsafe(
        _run_all_async(list(works), max_in_flight, semaphore), loop
    )
    completed = future.result()
    if not return_exceptions:
        for item in completed:
            if item.error is not None:
                raise item.error
    return [item.result if item.error is None else item.error for item in completed]


def _running_loop() -> asyncio.AbstractEventLoop | None:
    try:
        return asyncio.get_running_loop()
    except RuntimeError:
        return None


async def _run_all_async(
    works: list[Work[Any]], max_in_flight: int, semaphore: ProcessSemaphore | None
) -> list[Completed[Any]]:
    """A fixed pool of workers pulling the next index: N tasks, not one per item."""
    results: list[Completed[Any] | None] = [None] * len(works)
    indices = iter(range(len(works)))

    async def worker() -> None:
        for index in indices:
            results[index] = await _run_captured(index, works[index], semaphore)

    await asyncio.gather(*(worker() for _ in range(min(max_in_flight, len(works)))))
    return [item for item in results if item is not None]
