"""CPU of the rollout loop itself, profiled on the event-loop thread where it runs.

Why: `bench_build.py --profile` profiles the build's main thread, but `run_rollout` (tool
execution, state dumps, diffs, hashes, message records) runs on the shared asyncio loop thread
and never shows up there. This runs `run_rollout` for N retail tasks (synthesised before any
clock starts) against the stub in its own process, with the same agent and user as
bench_throughput.py part (d), and reports the loop thread's CPU per rollout; `--profile` runs
cProfile inside the loop thread and prints the top functions.

Usage: python benchmarks/bench_rollout_cpu.py [--tasks 200] [--concurrency 64] [--profile]
Prints CPU ms per rollout (thread CPU of the loop thread) and a digest of the trajectories
(ids, final-state hashes, step diffs), which must not change with an optimisation.
"""

from __future__ import annotations

import argparse
import asyncio
import cProfile
import gc
import hashlib
import pstats
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
sys.path.insert(0, str(HERE))

from bench_throughput import one_rollout, retail_tasks  # noqa: E402
from stub_server import StubConfig, spawn_stub_process  # noqa: E402

from trajforge.generators.agent import LLMAgent  # noqa: E402
from trajforge.generators.domains import get_domain  # noqa: E402
from trajforge.generators.llm.concurrency import InFlight, shared_loop  # noqa: E402
from trajforge.generators.llm.openai_backend import OpenAIBackend  # noqa: E402
from trajforge.schemas import SamplingParams, Task, Trajectory  # noqa: E402


async def _thread_cpu() -> float:
    return time.thread_time()


def loop_thread_cpu() -> float:
    """CPU seconds the shared loop thread has used so far."""
    return asyncio.run_coroutine_threadsafe(_thread_cpu(), shared_loop()).result()


class GcTimer:
    """Wall time spent in the cyclic garbage collector (any thread), via `gc.callbacks`: the
    collector's cost is charged to whatever line allocates, so a profile hides it."""

    def __init__(self) -> None:
        self.seconds = 0.0
        self.collections = [0, 0, 0]
        self.by_generation = [0.0, 0.0, 0.0]
        self._start = 0.0

    def __call__(self, phase: str, info: dict[str, int]) -> None:
        if phase == "start":
            self._start = time.perf_counter()
        else:
            took = time.perf_counter() - self._start
            self.seconds += took
            self.collections[info["generation"]] += 1
            self.by_generation[info["generation"]] += took


async def _call(function: object) -> None:
    function()  # type: ignore[operator]


def run_all_rollouts(
    base_url: str, tasks: list[Task], concurrency: int, max_turns: int
) -> list[Trajectory]:
    """The DoFn pattern: submit every task to `InFlight`, collect as they finish."""
    domain = get_domain("retail")
    backend = OpenAIBackend("stub-model", base_url=base_url, max_retries=2, needs_api_key=False)
    agent = LLMAgent(backend, "stub-model", SamplingParams(temperature=0.0, max_tokens=64))
    inflight: InFlight = InFlight(max_in_flight=concurrency)
    done = []
    for index, task in enumerate(tasks):
        inflight.submit(index, one_rollout(task, domain, agent, max_turns))
        done += inflight.ready()
    done += inflight.drain(timeout_s=900)
    asyncio.run_coroutine_threadsafe(backend.aclose(), shared_loop()).result()
    failed = [repr(item.error)[:200] for item in done if not item.ok]
    if failed:
        raise RuntimeError(f"{len(failed)} rollouts failed: {failed[:3]}")
    return [item.result for item in sorted(done, key=lambda item: item.key)]


def digest(trajectories: list[Trajectory]) -> str:
    """What must not change: ids, final hashes, every step's observation and diff."""
    h = hashlib.sha256()
    for t in trajectories:
        h.update(t.id.encode())
        h.update(t.final_state_hash.encode())
        for step in t.steps:
            h.update(step.model_dump_json().encode())
    return h.hexdigest()[:16]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tasks", type=int, default=200)
    parser.add_argument("--concurrency", type=int, default=64)
    parser.add_argument("--latency-ms", type=float, default=50.0)
    parser.add_argument("--max-turns", type=int, default=4)
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--profile", action="store_true", help="cProfile the loop thread")
    parser.add_argument("--top", type=int, default=30)
    parser.add_argument(
        "--gc-freeze", action="store_true", help="gc.freeze() after the warm-up (what-if)"
    )
    args = parser.parse_args()
    tasks = retail_tasks(args.tasks)
    config = StubConfig(latency_ms=args.latency_ms, tool_calls_per_episode=3)
    with spawn_stub_process(config) as stub:
        run_all_rollouts(stub.base_url, tasks[:16], 16, args.max_turns)  # warm-up
        print(f"objects tracked by gc after warm-up: {len(gc.get_objects())}")
        if args.gc_freeze:
            gc.freeze()
        for repeat in range(args.repeats):
            timer = GcTimer()
            gc.callbacks.append(timer)
            cpu0, wall0 = loop_thread_cpu(), time.perf_counter()
            trajectories = run_all_rollouts(stub.base_url, tasks, args.concurrency, args.max_turns)
            cpu, wall = loop_thread_cpu() - cpu0, time.perf_counter() - wall0
            gc.callbacks.remove(timer)
            steps = sum(len(t.steps) for t in trajectories)
            print(
                f"repeat {repeat}: {len(trajectories)} rollouts, {steps} steps, wall {wall:.2f} s,"
                f" loop-thread CPU {1000 * cpu / len(trajectories):.2f} ms/rollout,"
                f" gc {1000 * timer.seconds / len(trajectories):.2f} ms/rollout"
                f" (collections by generation {timer.collections},"
                f" seconds {[round(t, 2) for t in timer.by_generation]}),"
                f" digest {digest(trajectories)}"
            )
        if args.profile:
            profiler = cProfile.Profile()
            asyncio.run_coroutine_threadsafe(_call(profiler.enable), shared_loop()).result()
            run_all_rollouts(stub.base_url, tasks, args.concurrency, args.max_turns)
            asyncio.run_coroutine_threadsafe(_call(profiler.disable), shared_loop()).result()
            stats = pstats.Stats(profiler)
            stats.sort_stats("tottime").print_stats(args.top)
            stats.sort_stats("cumulative").print_stats(args.top)


if __name__ == "__main__":
    main()
