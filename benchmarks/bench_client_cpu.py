"""The LLM client's CPU per call on the event-loop thread, on a rollout's real requests.

Why: in a build the client (`build_client`: accounting, size bounds, concurrency limit, the
OpenAI backend over aiohttp) runs on the `trajforge-async-loop` thread next to the rollouts, and
its share is too small to see through a whole build's noise. This records the requests of
`--tasks` retail rollouts (scripted user, stub agent; untimed), then sends them again through
the client as a build builds it, `--concurrency` in flight, against the stub in its own process,
and reports the loop thread's CPU (`time.thread_time`) per call, plus a digest of every request
body as sent (which must not change with an optimisation: identical requests on the wire).

Usage:
  python benchmarks/bench_client_cpu.py --tasks 300
  python benchmarks/bench_client_cpu.py --tasks 300 --compare c6e9579 --repeats 5
"""

from __future__ import annotations

import argparse
import asyncio
import hashlib
import re
import statistics
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from bench_throughput import one_rollout, retail_tasks  # noqa: E402
from stub_server import StubConfig, spawn_stub_process  # noqa: E402

from trajforge.generators.agent import LLMAgent  # noqa: E402
from trajforge.generators.domains import get_domain  # noqa: E402
from trajforge.generators.llm.concurrency import InFlight, shared_loop  # noqa: E402
from trajforge.generators.llm.factory import OpenAIBackendConfig, build_client  # noqa: E402
from trajforge.generators.llm.guard import TextLimits  # noqa: E402
from trajforge.schemas import ChatRequest, ChatResponse, SamplingParams  # noqa: E402


class Recorder:
    """Keeps every request a rollout's agent sends (and answers through `inner`)."""

    def __init__(self, inner: object):
        self.inner = inner
        self.model = "stub-model"
        self.requests: list[ChatRequest] = []

    async def complete(self, request: ChatRequest) -> ChatResponse:
        self.requests.append(request)
        return await self.inner.complete(request)  # type: ignore[attr-defined]


def client_for(base_url: str, concurrency: int):
    config = OpenAIBackendConfig(model="stub-model", base_url=base_url, needs_api_key=False)
    return build_client(config, max_in_flight=concurrency, limits=TextLimits())


def record(base_url: str, tasks: int, concurrency: int) -> list[ChatRequest]:
    recorder = Recorder(client_for(base_url, concurrency))
    agent = LLMAgent(recorder, "stub-model", SamplingParams(temperature=0.0, max_tokens=64))
    domain = get_domain("retail")
    inflight: InFlight = InFlight(max_in_flight=concurrency)
    for index, task in enumerate(retail_tasks(tasks)):
        inflight.submit(index, one_rollout(task, domain, agent, 4))
        inflight.ready()
    inflight.drain(timeout_s=600)
    return recorder.requests


async def _thread_cpu() -> float:
    return time.thread_time()


def loop_thread_cpu() -> float:
    return asyncio.run_coroutine_threadsafe(_thread_cpu(), shared_loop()).result()


def replay(base_url: str, requests: list[ChatRequest], concurrency: int) -> float:
    """Loop-thread CPU seconds of sending every request once through a fresh client."""
    client = client_for(base_url, concurrency)
    inflight: InFlight = InFlight(max_in_flight=concurrency)
    started = loop_thread_cpu()
    for index, request in enumerate(requests):
        inflight.submit(index, client.complete(request))
        inflight.ready()
    failed = [item.error for item in inflight.drain(timeout_s=600) if not item.ok]
    if failed:
        raise RuntimeError(f"{len(failed)} calls failed: {failed[:2]}")
    return loop_thread_cpu() - started


def body_digest(requests: list[ChatRequest]) -> str:
    """The set of bodies as the aiohttp transport encodes them (`payload_for` + orjson as the
    reference; the tree's own fast path when it has one)."""
    from trajforge.generators.llm.openai_backend import OpenAIBackend

    backend = OpenAIBackend("stub-model", base_url="http://127.0.0.1:9/v1", needs_api_key=False)
    try:
        from trajforge.generators.llm.wire_body import body_bytes

        encode = lambda r: body_bytes(backend._model_json, r)  # noqa: E731
    except ImportError:
        import orjson

        encode = lambda r: orjson.dumps(backend.payload_for(r))  # noqa: E731
    bodies = sorted(hashlib.sha256(encode(request)).digest() for request in requests)
    return hashlib.sha256(b"".join(bodies)).hexdigest()[:16]  # recording order varies


def compare(ref: str, extra: list[str], repeats: int) -> None:
    """Alternate runs on this tree and on `ref`; medians of every replay, and the digests."""
    from bench_build import alternate  # the same extracted trees the build benchmark uses

    runs = alternate(__file__, extra, ref, repeats)
    medians = {}
    for label, lines in runs.items():
        values = [float(v) for line in lines for v in re.findall(r"([0-9.]+) ms/call", line)]
        medians[label] = statistics.median(values)
        print(f"{label}: median {medians[label]:.3f} ms per call over {len(values)} replays")
    this, other = medians["this tree"], medians[ref]
    print(f"this tree / {ref}: {this / other:.2f}")
    digests = {re.search(r"bodies (\w+)", line)[1] for lines in runs.values() for line in lines}
    print("request bodies agree" if len(digests) == 1 else f"bodies DIFFER: {digests}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tasks", type=int, default=300)
    parser.add_argument("--concurrency", type=int, default=64)
    parser.add_argument("--latency-ms", type=float, default=20.0)
    parser.add_argument("--replays", type=int, default=3, help="timed replays per process")
    parser.add_argument("--compare", metavar="REF", help="also run commit REF, alternating")
    parser.add_argument("--repeats", type=int, default=3, help="processes per tree (--compare)")
    args = parser.parse_args()
    if args.compare:
        extra = ["--tasks", str(args.tasks), "--replays", str(args.replays)]
        extra += ["--concurrency", str(args.concurrency), "--latency-ms", str(args.latency_ms)]
        compare(args.compare, extra, args.repeats)
        return
    config = StubConfig(latency_ms=args.latency_ms, tool_calls_per_episode=3)
    with spawn_stub_process(config) as stub:
        requests = record(stub.base_url, args.tasks, args.concurrency)
        replay(stub.base_url, requests[:300], args.concurrency)  # warm-up
        per_call = [
            1000 * replay(stub.base_url, requests, args.concurrency) / len(requests)
            for _ in range(args.replays)
        ]
    timings = " ".join(f"{value:.3f} ms/call" for value in per_call)
    print(f"{len(requests)} calls: {timings}; bodies {body_digest(requests)}")


if __name__ == "__main__":
    main()
