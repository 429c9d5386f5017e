"""Response cache (sqlite, across threads and processes) and call accounting."""

from __future__ import annotations

import asyncio
import multiprocessing
import pickle
import threading

import pytest
from llm_stub_server import Reply, chat_body

from trajforge.generators.llm.accounting import AccountingLLM, CallStats, cost_of
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
