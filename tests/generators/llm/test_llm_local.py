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


def test_the_embedded_model_generates_on_one_torch_thread_by_default(monkeypatch):
    """On 2 shared cores two torch threads cost 5-10x the CPU per token of one (spinning):
    the local backend sets torch's thread count before it loads, 1 unless configured."""
    import torch

    from trajforge.generators.llm import factory, local

    cfg = factory.LocalBackendConfig()
    assert cfg.threads == 1
    client = factory._build_backend(cfg, factory.CallStats())
    assert client.threads == 1
    monkeypatch.setattr(local, "load_model", lambda *args: "model")
    monkeypatch.setattr(local, "default_model_dir", lambda: "dir")
    before = torch.get_num_threads()
    try:
        torch.set_num_threads(2)
        assert client.load() == "model" and torch.get_num_threads() == 1
        local.LocalLLM(threads=None).load()  # None: leaves torch's setting alone
        assert torch.get_num_threads() == 1
    finally:
        torch.set_num_threads(before)


class _FakeTokenizer:
    """Characters as token ids; left padding with 0; `decode` spells the ids out."""

    pad_token_id, eos_token_id = 0, 1

    def apply_chat_template(self, messages, tokenize, add_generation_prompt):
        return "".join(str(m["content"]) for m in messages)

    def __call__(self, prompts, return_tensors=None, padding=False, add_special_tokens=True):
        import torch

        ids = [[2 + ord(c) % 50 for c in p] for p in prompts]
        if return_tensors is None:
            return {"input_ids": ids}
        width = max(len(i) for i in ids)
        return {
            "input_ids": torch.tensor([[0] * (width - len(i)) + i for i in ids]),
            "attention_mask": torch.tensor([[0] * (width - len(i)) + [1] * len(i) for i in ids]),
        }

    def decode(self, tokens, skip_special_tokens=True):
        return " ".join(str(t) for t in tokens)


class _FakeModel:
    """Answers each row with its prompt length, then eos; meets `barrier` inside `generate`,
    so two slices must be generating at the same time."""

    def __init__(self, barrier=None):
        self.barrier = barrier
        self.widths: list[int] = []

    def generate(self, input_ids, attention_mask, max_new_tokens, **_):
        import torch

        if self.barrier is not None:
            self.barrier.wait()
        self.widths.append(input_ids.shape[1])
        lengths = attention_mask.sum(dim=1, keepdim=True)
        return torch.cat([input_ids, lengths, torch.ones_like(lengths)], dim=1)


def _loaded(model):
    import threading

    from trajforge.generators.llm.local import LoadedModel

    return LoadedModel(tokenizer=_FakeTokenizer(), model=model, generate_lock=threading.Lock())


def test_a_batch_is_cut_by_prompt_length_and_its_slices_generate_at_once():
    """Two workers: the short prompts and the long ones are two slices (little padding),
    generating at the same time on two threads; every answer comes back to its request."""
    import threading

    from trajforge.generators.llm.local import generate_batch

    texts = ["a" * 40, "b" * 5, "c" * 41, "d" * 6, "e" * 39, "f" * 4]
    model = _FakeModel(threading.Barrier(2, timeout=60))
    replies = generate_batch(_loaded(model), "fake", [request(t) for t in texts], workers=2)
    assert [r.message.content for r in replies] == [str(len(t)) for t in texts]
    assert [r.usage.prompt_tokens for r in replies] == [len(t) for t in texts]
    assert sorted(model.widths) == [6, 41]  # not 6 rows padded to 41
    one = _FakeModel()
    alone = generate_batch(_loaded(one), "fake", [request(t) for t in texts], workers=1)
    assert [(r.message, r.usage) for r in alone] == [(r.message, r.usage) for r in replies]
    assert one.widths == [41]


def test_length_slices_balance_padded_size():
    from trajforge.generators.llm.local import length_slices

    assert length_slices([5, 3, 9], 1) == [[1, 0, 2]]
    assert length_slices([7], 4) == [[0]]
    lengths = [100, 100, 100, 100, 10, 10, 10, 10, 10, 10, 10, 10]
    slices = length_slices(lengths, 2)
    assert len(slices) == 2 and sorted(i for s in slices for i in s) == list(range(12))
    cost = [len(s) * max(lengths[i] for i in s) for s in slices]
    assert max(cost) <= 400  # the 4 long ones alone; 8 short ones cost 80
    assert all(len(s) for s in length_slices([3, 3, 3], 8))  # never an empty slice


def test_the_embedded_model_uses_two_workers_and_native_bfloat16_by_default(monkeypatch):
    from trajforge.generators.llm import factory, local

    cfg = factory.LocalBackendConfig()
    assert cfg.workers == 2 and cfg.dtype == "auto"
    client = factory._build_backend(cfg, factory.CallStats())
    assert (client.workers, client.dtype) == (2, "auto")
    monkeypatch.setattr(local, "native_bfloat16", lambda: True)
    assert local.resolve_dtype("auto") == "bfloat16"
    monkeypatch.setattr(local, "native_bfloat16", lambda: False)
    assert local.resolve_dtype("auto") == "float32"
    assert local.resolve_dtype("bfloat16") == "bfloat16"
    with pytest.raises(LLMError, match="dtype"):
        local.resolve_dtype("float16")
