"""The embedded backend: the micro-batcher (no model) and one real generation."""

from __future__ import annotations

import asyncio
import time

import pytest

from trajforge.generators.llm.local import LOCAL_MODEL_NAME, LocalLLM, MicroBatcher
from trajforge.schemas import ChatRequest, ChatResponse, LLMError, Message, SamplingParams


def request(text: str, temperature: float = 0.0, max_tokens: int = 8) -> ChatRequest:
    return ChatRequest(
        model="local",
        messages=(Message(role="user", content=text),),
        sampling=SamplingParams(temperature=temperature, max_tokens=max_tokens),
        seed=3,
    )


def test_batcher_groups_concurrent_requests_by_sampling_params():
    batches: list[list[str]] = []

    def generate(requests):
        batches.append([r.messages[0].content for r in requests])
        time.sleep(0.01)
        return [
            ChatResponse(
                message=Message(role="assistant", content=r.messages[0].content), model="m"
            )
            for r in requests
        ]

    batcher = MicroBatcher(generate, max_batch_size=3, window_s=0.01)

    async def run():
        greedy = [batcher.submit(request(f"g{i}")) for i in range(4)]
        sampled = [batcher.submit(request(f"s{i}", temperature=0.5)) for i in range(2)]
        return await asyncio.gather(*greedy, *sampled)

    responses = asyncio.run(run())
    assert [r.message.content for r in responses] == ["g0", "g1", "g2", "g3", "s0", "s1"]
    assert batches[0] == ["g0", "g1", "g2"]  # at most max_batch_size, one sampling group
    assert sorted(c for batch in batches for c in batch) == ["g0", "g1", "g2", "g3", "s0", "s1"]
    assert all(len({c[0] for c in batch}) == 1 for batch in batches)  # never mixes params


def test_batcher_failure_reaches_every_caller_and_batcher_survives():
    calls = []

    def generate(requests):
        calls.append(len(requests))
        if len(calls) == 1:
            raise RuntimeError("boom")
        return [ChatResponse(message=Message(role="assistant", content="ok"), model="m")] * len(
            requests
        )

    batcher = MicroBatcher(generate, max_batch_size=4, window_s=0.005)

    async def run():
        first = await asyncio.gather(
            *(batcher.submit(request("a")) for _ in range(2)), return_exceptions=True
        )
        second = await batcher.submit(request("b"))
        return first, second

    first, second = asyncio.run(run())
    assert all(isinstance(e, LLMError) and "boom" in str(e) for e in first)
    assert second.message.content == "ok"


def test_cpu_only():
    with pytest.raises(LLMError, match="CPU"):
        LocalLLM(device="cuda")


@pytest.mark.slow  # real embedded model: the opt-in tier CI also runs
def test_real_model_generates_a_short_batched_reply(local_llm):
    async def run():
        return await asyncio.gather(
            local_llm.complete(request("Say hello.")), local_llm.complete(request("Say hello."))
        )

    first, second = asyncio.run(run())
    assert first.model == LOCAL_MODEL_NAME
    assert first.message.content and first.message.content == second.message.content
    assert 0 < first.usage.completion_tokens <= 8 and first.usage.prompt_tokens > 5
    assert first.finish_reason in ("stop", "length")


def test_batcher_serves_several_loops_and_local_llm_pickles():
    import pickle
    import threading

    def generate(requests):
        return [
            ChatResponse(
                message=Message(role="assistant", content=r.messages[0].content), model="m"
            )
            for r in requests
        ]

    batcher = MicroBatcher(generate, max_batch_size=4, window_s=0.001)
    results: dict[int, list[str]] = {}

    def run_loop(worker: int) -> None:
        async def go():
            return await asyncio.gather(
                *(batcher.submit(request(f"{worker}-{i}")) for i in range(5))
            )

        results[worker] = [r.message.content for r in asyncio.run(go())]

    threads = [threading.Thread(target=run_loop, args=(w,)) for w in range(3)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=30)
    assert results == {w: [f"{w}-{i}" for i in range(5)] for w in range(3)}
    llm = LocalLLM(max_batch_size=2)
    restored = pickle.loads(pickle.dumps(llm))
    assert restored.max_batch_size == 2 and restored.model == LOCAL_MODEL_NAME


def test_an_idle_batcher_leaves_no_pending_worker_task():
    """Clients are dropped after an evaluation; a worker task left waiting on its queue is
    reported by asyncio when collected ("Task was destroyed but it is pending!")."""
    from trajforge.generators.llm.concurrency import run_all

    def generate(requests):
        return [ChatResponse(message=Message(role="assistant", content="ok"), model="m")] * len(
            requests
        )

    batcher = MicroBatcher(generate, max_batch_size=2, window_s=0.001)
    for _ in range(2):  # a second burst starts a new worker
        replies = run_all([batcher.submit(request(f"r{i}")) for i in range(5)], max_in_flight=5)
        assert [r.message.content for r in replies] == ["ok"] * 5
        assert all(task.done() for _, task in batcher._per_loop.values())
