"""Response cache (sqlite, across threads and processes) and call accounting."""

from __future__ import annotations

import asyncio
import multiprocessing
import pickle
import threading

import pytest
from llm_stub_server import Reply, chat_body

from trajforge.generators.llm.accounting import (
    AccountingLLM,
    CallStats,
    cost_of,
    latency_bucket,
    latency_summary,
)
from trajforge.generators.llm.cache import CachedLLM, ResponseCache
from trajforge.generators.llm.openai_backend import OpenAIBackend
from trajforge.generators.llm.scripted import ScriptedLLM
from trajforge.schemas import ChatRequest, ChatResponse, LLMError, Message, Usage


def request(text: str, seed: int = 1) -> ChatRequest:
    return ChatRequest(model="m", messages=(Message(role="user", content=text),), seed=seed)


def test_second_run_issues_zero_requests_to_the_server(stub_server, tmp_path):
    stub, url = stub_server([Reply(body=chat_body("cached answer"))])
    requests = [request(f"q{i}") for i in range(3)]

    def run_once():
        backend = OpenAIBackend("stub-model", base_url=url, api_key="k", max_retries=0)
        client = AccountingLLM(CachedLLM(backend, ResponseCache(tmp_path / "cache.sqlite")))

        async def go():
            return await asyncio.gather(*(client.complete(r) for r in requests))

        return asyncio.run(go()), client.stats

    first, first_stats = run_once()
    assert stub.count == 3 and not any(r.cached for r in first)
    second, second_stats = run_once()
    assert stub.count == 3  # nothing new reached the server
    assert all(r.cached and r.latency_s == 0.0 for r in second)
    assert [r.message for r in second] == [r.message for r in first]
    assert second_stats.cached_calls == 3 and second_stats.prompt_tokens == 0
    assert first_stats.to_cost().prompt_tokens == 33


def test_different_seed_or_namespace_misses(tmp_path):
    cache = ResponseCache(tmp_path / "c.sqlite")
    inner = ScriptedLLM(responder=lambda r: r.messages[0].content or "")
    client = CachedLLM(inner, cache)
    asyncio.run(client.complete(request("a", seed=1)))
    asyncio.run(client.complete(request("a", seed=2)))
    asyncio.run(client.complete(request("a", seed=1)))
    assert len(inner.requests) == 2
    other = CachedLLM(inner, cache, namespace="another-model")
    asyncio.run(other.complete(request("a", seed=1)))
    assert len(inner.requests) == 3


def test_errors_are_not_cached(tmp_path):
    cache = ResponseCache(tmp_path / "c.sqlite")
    failing = ScriptedLLM(replies=[])
    with pytest.raises(LLMError):
        asyncio.run(CachedLLM(failing, cache).complete(request("x")))
    assert len(cache) == 0


def _write_from_process(path: str, worker: int) -> None:
    cache = ResponseCache(path)
    for i in range(20):
        response = ChatResponse(
            message=Message(role="assistant", content=f"{worker}-{i}"), model="m"
        )
        cache.put(f"{worker}-{i}", response)


def test_cache_is_safe_across_threads_and_processes(tmp_path):
    path = tmp_path / "shared.sqlite"
    cache = ResponseCache(path)
    context = multiprocessing.get_context("spawn")
    processes = [context.Process(target=_write_from_process, args=(str(path), w)) for w in (0, 1)]
    threads = [threading.Thread(target=_write_from_process, args=(str(path), w)) for w in (2, 3)]
    for worker in (*processes, *threads):
        worker.start()
    for worker in (*processes, *threads):
        worker.join(timeout=60)
    assert all(p.exitcode == 0 for p in processes)
    assert len(cache) == 80
    assert cache.get("1-7").message.content == "1-7"
    assert pickle.loads(pickle.dumps(cache)).get("3-19").message.content == "3-19"


def test_call_stats_and_cost():
    stats = CallStats()
    paid = ChatResponse(
        message=Message(role="assistant", content="a"),
        model="m",
        usage=Usage(prompt_tokens=10, completion_tokens=4),
        latency_s=0.5,
    )
    hit = paid.model_copy(update={"cached": True, "latency_s": 0.0})
    stats.record_response(paid)
    stats.record_response(hit)
    stats.record_error()
    stats.record_retry()
    cost = stats.to_cost()
    assert (cost.llm_calls, cost.cached_calls, cost.prompt_tokens, cost.completion_tokens) == (
        2,
        1,
        10,
        4,
    )
    assert cost.latency_s == 0.5 and stats.errors == 1 and stats.retries == 1
    assert cost_of(hit).prompt_tokens == 0 and cost_of(paid) + cost_of(hit) == cost
    restored = pickle.loads(pickle.dumps(stats))
    restored.record_retry()
    assert restored.retries == 2


def test_accounting_counts_errors_and_is_thread_safe():
    client = AccountingLLM(ScriptedLLM(replies=["x"] * 200))

    def hammer():
        asyncio.run(asyncio.wait_for(_many(client, 50), 30))

    threads = [threading.Thread(target=hammer) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert client.stats.calls == 200
    with pytest.raises(LLMError):
        asyncio.run(client.complete(request("one too many")))
    assert client.stats.errors == 1


async def _many(client: AccountingLLM, n: int) -> None:
    await asyncio.gather(*(client.complete(request(str(i))) for i in range(n)))


def _answered(latency_s: float) -> ChatResponse:
    return ChatResponse(
        message=Message(role="assistant", content="a"), model="m", latency_s=latency_s
    )


def test_latency_bucket_edges():
    assert latency_bucket(0.0) == "le_10"
    assert latency_bucket(0.050) == "le_50"  # a bound holds the calls that took exactly it
    assert latency_bucket(0.0501) == "le_60"
    assert latency_bucket(60.0) == "le_60000"
    assert latency_bucket(61.0) == "gt_60000"


def test_latency_histogram_counts_paid_calls_and_summarises():
    stats = CallStats()
    for ms in [45] * 50 + [55] * 40 + [140] * 9 + [90_000]:
        stats.record_response(_answered(ms / 1000))
    stats.record_response(_answered(0.3).model_copy(update={"cached": True}))  # not timed
    counts = stats.counts()
    assert counts["latency_ms.le_50"] == 50 and counts["latency_ms.le_60"] == 40
    assert counts["latency_ms.le_150"] == 9 and counts["latency_ms.gt_60000"] == 1
    assert counts["latency_ms.sum"] == 50 * 45 + 40 * 55 + 9 * 140 + 90_000
    summary = latency_summary(counts)
    assert summary is not None and summary["timed_calls"] == 100
    assert summary["mean"] == round(counts["latency_ms.sum"] / 100, 1)
    assert (summary["p50_at_most"], summary["p90_at_most"]) == (50, 60)
    assert summary["p99_at_most"] == 150
    assert summary["histogram"] == {"le_50": 50, "le_60": 40, "le_150": 9, "gt_60000": 1}
    assert latency_summary({"calls": 3}) is None  # a role with only cached calls


def test_latency_counters_add_up_across_deltas():
    """Counters are built from deltas (several DoFn threads share a client): their sums must
    give the same summary as the totals."""
    stats = CallStats()
    summed: dict[str, int] = {}
    for i in range(30):
        stats.record_response(_answered((i * 37 % 400) / 1000 + 0.0004))
        if i % 7 == 0:
            for k, v in stats.take_delta().items():
                summed[k] = summed.get(k, 0) + v
    for k, v in stats.take_delta().items():
        summed[k] = summed.get(k, 0) + v
    assert latency_summary(summed) == latency_summary(stats.counts())
