"""Limits on the LLM client path: concurrency per endpoint, and size of what comes back.

Why here and not in the pipeline: `max_in_flight` is what users size to an endpoint's rate
limit, so it must hold at the endpoint whatever calls it: rollout and blueprint (which writes
several utterances of one element concurrently), agent, user, judge and baseline roles, several
stages and DoFn threads of one worker process. Element-level budgets per stage multiplied
(blueprint at max_in_flight 2 put ~48 requests at the server). A limiter wrapped around the
backend itself, shared by every role bound to that backend in the process, cannot be bypassed.

Size bounds: a reply (or a tool argument) past `TextLimits` is refused with a typed rejection
(`oversized_content` / `oversized_arguments`) instead of being stored and resent on every
later call of the conversation.
"""

from __future__ import annotations

import asyncio
import json
import weakref

from pydantic import BaseModel, ConfigDict, Field

from trajforge.schemas import ChatRequest, ChatResponse, LLMClient, Rejected


class TextLimits(BaseModel):
    """Bounds on untrusted text from the LLM (checked on every response, cached ones too)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    max_content_chars: int = Field(default=32_000, ge=100)
    max_argument_chars: int = Field(default=8_000, ge=100)


def check_response_size(response: ChatResponse, limits: TextLimits) -> None:
    """Raise `Rejected` when the reply's text or one tool call's arguments exceed the bounds."""
    content = response.message.content or ""
    if len(content) > limits.max_content_chars:
        raise Rejected(
            "oversized_content",
            f"model reply of {len(content)} chars > limits.max_content_chars "
            f"({limits.max_content_chars})",
        )
    for call in response.message.tool_calls:
        size = len(call.raw_arguments or "") or len(json.dumps(call.arguments))
        if size > limits.max_argument_chars:
            raise Rejected(
                "oversized_arguments",
                f"arguments of tool call {call.name!r} are {size} chars > "
                f"limits.max_argument_chars ({limits.max_argument_chars})",
            )


class BoundedLLM:
    """Checks every response against `limits` (a typed rejection past them)."""

    def __init__(self, inner: LLMClient, limits: TextLimits):
        self.inner = inner
        self.limits = limits
        self.model = getattr(inner, "model", "")

    async def complete(self, request: ChatRequest) -> ChatResponse:
        response = await self.inner.complete(request)
        check_response_size(response, self.limits)
        return response


class ConcurrencyLimitedLLM:
    """At most `limit` calls of this client run at once, per process and event loop.

    One asyncio.Semaphore per loop (a semaphore is bound to the loop that first waits on it):
    the pipeline's shared loop in a worker, or the loop of an `asyncio.run` in a script. The
    semaphores are not pickled; an unpickled client starts with fresh ones in its process.
    """

    def __init__(self, inner: LLMClient, limit: int):
        if limit < 1:
            raise ValueError(f"limit must be >= 1, got {limit}")
        self.inner = inner
        self.limit = limit
        self.model = getattr(inner, "model", "")
        self._semaphores: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
        self._last: tuple[weakref.ref, asyncio.Semaphore] | None = None  # no strong ref to a loop

    def _semaphore(self) -> asyncio.Semaphore:
        """The running loop's semaphore; the last one used is kept at hand (a build runs on one
        loop: the weak dictionary's lookup is pure Python, paid on every call)."""
        loop = asyncio.get_running_loop()
        last = self._last
        if last is not None and last[0]() is loop:
            return last[1]
        semaphore = self._semaphores.get(loop)
        if semaphore is None:  # only the loop's own thread gets here for this loop
            semaphore = self._semaphores[loop] = asyncio.Semaphore(self.limit)
        self._last = (weakref.ref(loop), semaphore)
        return semaphore

    async def complete(self, request: ChatRequest) -> ChatResponse:
        async with self._semaphore():
            return await self.inner.complete(request)

    def __getstate__(self) -> dict[str, object]:
        return {"inner": self.inner, "limit": self.limit, "model": self.model}

    def __setstate__(self, state: dict[str, object]) -> None:
        self.__dict__.update(state)
        self._semaphores = weakref.WeakKeyDictionary()
        self._last = None
