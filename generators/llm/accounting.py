"""Token, latency, call, request and retry counts per LLM client, so builds report what they cost.

`CallStats` is a thread-safe tally; `AccountingLLM` wraps any client and records every call.
One backend (its connections, cache and concurrency limit) is shared by several roles (agent,
user, judge, baseline), each with its own `AccountingLLM` and `CallStats`: while a role's call
runs, `active_stats()` names that role's tally (a context variable, so concurrent calls of
different roles on one loop never mix), and the backend's retry loop records each HTTP request
and each retry (by cause) there. Per-call numbers are on the `ChatResponse` itself (`usage`,
`latency_s`, `cached`); `cost_of(response)` turns one into a `Cost` for a trajectory.
"""

from __future__ import annotations

import bisect
import contextvars
import threading
from collections import Counter
from typing import Any

from trajforge.schemas import ChatRequest, ChatResponse, LLMClient
from trajforge.schemas.trajectory import Cost

#: Upper bounds (ms) of each role's latency histogram. A call's latency is what the build waited
#: for it: first request sent to response parsed, retries and backoff included. Against an
#: endpoint's own latency it shows a build that cannot keep up with its responses (a 50 ms stub
#: seen at a mean of ~90 ms by one CPU-bound build process: benchmarks/README.md, "Sixth round").
LATENCY_BOUNDS_MS = (
    10, 20, 30, 40, 50, 60, 70, 80, 90, 100, 125, 150, 200, 250, 300, 400, 500, 750,
    1_000, 1_500, 2_000, 3_000, 5_000, 10_000, 30_000, 60_000,
)  # fmt: skip
#: The buckets' names, in order: `le_<bound>` for each bound, then `gt_<largest bound>`.
LATENCY_BUCKETS = (*(f"le_{b}" for b in LATENCY_BOUNDS_MS), f"gt_{LATENCY_BOUNDS_MS[-1]}")
LATENCY = "latency_ms."  # counter prefix: `latency_ms.<bucket>`, and `latency_ms.sum`


def latency_bucket(latency_s: float) -> str:
    """The histogram bucket of one call's latency: `le_<bound>` (the smallest bound it does not
    exceed) or `gt_<largest bound>`."""
    return LATENCY_BUCKETS[bisect.bisect_left(LATENCY_BOUNDS_MS, latency_s * 1000)]


def latency_summary(counts: dict[str, int]) -> dict[str, Any] | None:
    """A role's latency counters (`latency_ms.*`, as `CallStats.counts` names them) -> the
    manifest's summary: calls timed, mean, and p50/p90/p99 as histogram bounds (the call at
    that rank took at most that many ms; None past the largest bound). None without calls."""
    buckets = {
        k[len(LATENCY) :]: v
        for k, v in counts.items()
        if k.startswith(LATENCY) and k != f"{LATENCY}sum"
    }
    timed = sum(buckets.values())
    if not timed:
        return None
    bounds: tuple[int | None, ...] = (*LATENCY_BOUNDS_MS, None)

    def at_most(q: float) -> int | None:
        seen = 0
        for name, bound in zip(LATENCY_BUCKETS, bounds, strict=True):
            seen += buckets.get(name, 0)
            if seen >= q * timed:
                return bound
        return None

    return {
        "timed_calls": timed,
        "mean": round(counts.get(f"{LATENCY}sum", 0) / timed, 1),
        "p50_at_most": at_most(0.5),
        "p90_at_most": at_most(0.9),
        "p99_at_most": at_most(0.99),
        "histogram": {name: buckets[name] for name in LATENCY_BUCKETS if buckets.get(name)},
    }


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

    `calls` counts answered calls (cached ones included), `errors` calls that raised,
    `requests` HTTP requests sent (retries included), `retries` extra attempts the backend made
    and `retries_by_cause` why. Tokens and latency count only calls that were paid for (not
    cache hits).
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.calls = 0
        self.cached_calls = 0
        self.errors = 0
        self.requests = 0
        self.retries = 0
        self.retries_by_cause: Counter[str] = Counter()
        self.prompt_tokens = 0
        self.completion_tokens = 0
        self.latency_s = 0.0
        self.latency_buckets: Counter[str] = Counter()
        self._reported: dict[str, int] = {}

    def record_response(self, response: ChatResponse) -> None:
        with self._lock:
            self.calls += 1
            if response.cached:
                self.cached_calls += 1
                return
            self.prompt_tokens += response.usage.prompt_tokens
            self.completion_tokens += response.usage.completion_tokens
            self.latency_s += response.latency_s
            self.latency_buckets[latency_bucket(response.latency_s)] += 1

    def record_error(self) -> None:
        with self._lock:
            self.errors += 1

    def record_request(self) -> None:
        with self._lock:
            self.requests += 1

    def record_retry(self, cause: str = "other") -> None:
        with self._lock:
            self.retries += 1
            self.retries_by_cause[cause] += 1

    def counts(self) -> dict[str, int]:
        """Integer totals by counter name (`retries.<cause>` per cause)."""
        with self._lock:
            return self.counts_unlocked()

    def take_delta(self) -> dict[str, int]:
        """What grew since the last take, each increment handed out exactly once. Several
        DoFn threads of a process share one client: whichever takes first reports it, so
        counters built from these deltas sum to the true totals."""
        with self._lock:
            now = self.counts_unlocked()
            delta = {k: v - self._reported.get(k, 0) for k, v in now.items()}
            self._reported = now
        return {k: v for k, v in delta.items() if v}

    def counts_unlocked(self) -> dict[str, int]:
        out = {
            "calls": self.calls,
            "cached_calls": self.cached_calls,
            "errors": self.errors,
            "requests": self.requests,
            "prompt_tokens": self.prompt_tokens,
            "completion_tokens": self.completion_tokens,
        }
        out.update({f"retries.{c}": n for c, n in self.retries_by_cause.items()})
        if self.latency_buckets:  # whole ms, so deltas of it add up like every other counter
            out.update({f"{LATENCY}{b}": n for b, n in self.latency_buckets.items()})
            out[f"{LATENCY}sum"] = round(self.latency_s * 1000)
        return out

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
            f"errors={self.errors}, requests={self.requests}, retries={self.retries}, prompt_tokens={self.prompt_tokens}, "
            f"completion_tokens={self.completion_tokens}, latency_s={self.latency_s:.3f})"
        )


_ACTIVE: contextvars.ContextVar[CallStats | None] = contextvars.ContextVar(
    "trajforge_active_call_stats", default=None
)


def active_stats(fallback: CallStats) -> CallStats:
    """The tally of the role whose call is running (set by `AccountingLLM`), else `fallback`."""
    return _ACTIVE.get() or fallback


class AccountingLLM:
    """Wraps a client and records every call into `stats`; the backend's requests and retries
    made during the call land there too (`active_stats`)."""

    def __init__(self, inner: LLMClient, stats: CallStats | None = None, model: str = ""):
        self.inner = inner
        self.stats = stats if stats is not None else CallStats()
        self.model = model or getattr(inner, "model", "")

    def for_role(self) -> AccountingLLM:
        """Another accounting view on the same backend (shared connections, cache and limit)
        with its own tally: one per role, so the manifest can say who spent what."""
        return AccountingLLM(self.inner, CallStats(), self.model)

    async def complete(self, request: ChatRequest) -> ChatResponse:
        token = _ACTIVE.set(self.stats)
        try:
            response = await self.inner.complete(request)
        except Exception:
            self.stats.record_error()
            raise
        finally:
            _ACTIVE.reset(token)
        self.stats.record_response(response)
        return response
