"""Limits on the client path: size bounds (typed rejections) and the per-process concurrency cap."""

from __future__ import annotations

import asyncio

import pytest

from trajforge.generators.llm.concurrency import run_all
from trajforge.generators.llm.guard import BoundedLLM, ConcurrencyLimitedLLM, TextLimits
from trajforge.generators.llm.scripted import ScriptedLLM
from trajforge.schemas import ChatRequest, ChatResponse, Message, Rejected, ToolCall

REQUEST = ChatRequest(model="m", messages=(Message(role="user", content="hi"),))
LIMITS = TextLimits(max_content_chars=1000, max_argument_chars=200)


def test_oversized_reply_is_a_typed_rejection():
    client = BoundedLLM(ScriptedLLM(["x" * 1001, "x" * 1000]), LIMITS)
    with pytest.raises(Rejected) as caught:
        asyncio.run(client.complete(REQUEST))
    assert caught.value.reason == "oversized_content" and "max_content_chars" in caught.value.detail
    assert asyncio.run(client.complete(REQUEST)).message.content == "x" * 1000


def test_oversized_tool_arguments_are_a_typed_rejection():
    call = ToolCall(id="c", name="calculate", arguments={"expression": "1+" * 200})
    client = BoundedLLM(ScriptedLLM([Message(role="assistant", tool_calls=(call,))]), LIMITS)
    with pytest.raises(Rejected) as caught:
        asyncio.run(client.complete(REQUEST))
    assert caught.value.reason == "oversized_arguments"


class _Gauge:
    """A backend that records how many calls it holds at once."""

    def __init__(self) -> None:
        self.now = 0
        self.peak = 0
        self.model = "gauge"

    async def complete(self, request: ChatRequest) -> ChatResponse:
        self.now += 1
        self.peak = max(self.peak, self.now)
        await asyncio.sleep(0.005)
        self.now -= 1
        return ChatResponse(message=Message(role="assistant", content="ok"), model="gauge")


def test_limit_holds_across_many_concurrent_callers_and_gathers():
    gauge = _Gauge()
    client = ConcurrencyLimitedLLM(gauge, 3)

    async def element() -> None:  # like blueprint: one element writes several utterances at once
        await asyncio.gather(*(client.complete(REQUEST) for _ in range(5)))

    run_all([element for _ in range(20)], max_in_flight=16)
    assert gauge.peak == 3
    with pytest.raises(ValueError):
        ConcurrencyLimitedLLM(gauge, 0)


def test_each_loop_gets_its_own_semaphore_when_loops_alternate():
    """The last loop's semaphore is kept at hand; switching loops still finds each loop's own
    (a semaphore is bound to the loop that first waits on it), and the limit holds on each."""
    gauge = _Gauge()
    client = ConcurrencyLimitedLLM(gauge, 2)

    async def burst() -> asyncio.Semaphore:
        await asyncio.gather(*(client.complete(REQUEST) for _ in range(6)))
        return client._semaphore()

    loops = [asyncio.new_event_loop() for _ in range(2)]
    try:
        seen = [loops[i % 2].run_until_complete(burst()) for i in range(4)]
    finally:
        for loop in loops:
            loop.close()
    assert seen[0] is seen[2] and seen[1] is seen[3] and seen[0] is not seen[1]
    assert gauge.peak == 2
