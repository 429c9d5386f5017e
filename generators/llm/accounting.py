"""Token, latency and call counts per LLM client, so builds can report what they cost.

`CallStats` is a thread-safe tally one client (and its backend's retry loop) writes into;
`AccountingLLM` wraps any client and records every call. Per-call numbers are on the
`ChatResponse` itself (`usage`, `latency_s`, `cached`); `cost_of(response)` turns one into a
`Cost` for a trajectory.
"""

from __future__ import annotations

import threading

from trajforge.schemas import ChatRequest, ChatResponse, LLMClient
from trajforge.schemas.trajectory import Cost


def cost_of(response: ChatResponse) -> Cost:
    """One call's cost. A cached response costs no tokens or time: nobody paid for it again."""
    if response.cached:
        return Cost(llm_calls=1, cached_calls=1)
    return Cost(
        llm_calls=1,
        prompt_tokens=response.usage.prompt_tokens,
        completion_tokens=response.usage.completion_tokens,
        latency_s=response.latency_s,
    )


class CallStats:
    """Running totals for one client; safe to update from several threads.

    `calls` counts answered calls (cached ones included), `errors` calls that raised, `retries`
    extra attempts the backend made. Tokens and latency count only calls that were paid for
    (not cache hits).
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.calls = 0
        self.cached_calls = 0
        self.errors = 0
        self.retries = 0
        self.prompt_tokens = 0
        self.completion_tokens = 0
        self.latency_s = 0.0

    def record_response(self, response: ChatResponse) -> None:
        with self._lock:
            self.calls += 1
            if response.cached:
                self.cached_calls += 1
                return
            self.prompt_tokens += response.usage.prompt_tokens
            self.completion_tokens += response.usage.completion_tokens
            self.latency_s += response.latency_s

    def record_error(self) -> None:
        with self._lock:
            self.errors += 1

    def record_retry(self) -> None:
        with self._lock:
            self.retries += 1

    def to_cost(self) -> Cost:
        with self._lock:
            return Cost(
                llm_calls=self.calls,
                cached_calls=self.cached_calls,
                prompt_tokens=self.prompt_tokens,
                completion_tokens=self.completion_tokens,
                latency_s=self.latency_s,
            )

    def __getstate__(self) -> dict[str, object]:
        """Picklable (Beam ships clients to workers): the lock is recreated, not copied."""
        state = dict(self.__dict__)
        del state["_lock"]
        return state

    def __setstate__(self, state: dict[str, object]) -> None:
        self.__dict__.update(state)
        self._lock = threading.Lock()

    def __repr__(self) -> str:
        return (
            f"CallStats(calls={self.calls}, cached_calls={self.cached_calls}, "
            f"errors={self.errors}, retries={self.retries}, prompt_tokens={self.prompt_tokens}, "
            f"completion_tokens={self.completion_tokens}, latency_s={self.latency_s:.3f})"
        )


class AccountingLLM:
    """Wraps a client and records every call into `stats` (shared with the backend's retries)."""

    def __init__(self, inner: LLMClient, stats: CallStats | None = None, model: str = ""):
        self.inner = inner
        self.stats = stats if stats is not None else CallStats()
        self.model = model or getattr(inner, "model", "")

    async def complete(self, request: ChatRequest) -> ChatResponse:
        try:
            response = await self.inner.complete(request)
        except Exception:
            self.stats.record_error()
            raise
        self.stats.record_response(response)
        return response
