"""Any OpenAI-compatible chat endpoint (OpenAI, a vLLM server, others).

Two transports. "aiohttp" (the default when aiohttp is installed) posts the request straight
to `<base_url>/chat/completions` with one `aiohttp.ClientSession` per backend and event loop:
the SDK's per-request option, header and response models cost 0.6-0.7 ms of loop-thread CPU
per call against 0.12-0.18 ms here, which at 64 calls in flight and 50 ms latency was 0.57-0.76
against 0.83-0.90 efficiency (benchmarks/README.md). "httpx" goes through `AsyncOpenAI` (no
aiohttp needed).

Retries are ours on both (the SDK's are off): exponential backoff and full jitter on 429, 5xx,
timeouts and connection errors, honouring `Retry-After`, so the retry budget, the waits and the
final error message are under our control and counted (`CallStats.retries`). No per-call logging.
"""

from __future__ import annotations

import asyncio
import atexit
import contextlib
import functools
import importlib.util
import os
import random
import sys
import time
import weakref
from typing import TYPE_CHECKING, Any, Literal

if TYPE_CHECKING:
    import openai

import yarl

from trajforge.generators.llm.accounting import CallStats, active_stats
from trajforge.generators.llm.openai_wire import (
    BadResponse,
    Failure,
    base_url_problem,
    decode_body,
    encode_body,
    parse_chat,
    parse_retry_after,
    request_payload,
    status_failure,
)
from trajforge.generators.llm.redact import redact, remember_secret
from trajforge.schemas import ChatRequest, ChatResponse, LLMError

__all__ = ["OpenAIBackend", "parse_retry_after", "resolve_transport"]

#: A placeholder key for local servers that ignore authentication (`needs_api_key: false`).
LOCAL_SERVER_DUMMY_KEY = "EMPTY"


Transport = Literal["auto", "httpx", "aiohttp"]


def resolve_transport(transport: Transport) -> Literal["httpx", "aiohttp"]:
    """The transport: direct aiohttp when installed ("auto"), else the SDK over httpx.

    httpx's pool scans every connection on each request and the SDK builds several models per
    request; direct aiohttp costs ~1/3 of the client CPU per call (benchmarks/README.md).
    """
    if transport == "auto":
        return "aiohttp" if importlib.util.find_spec("aiohttp") is not None else "httpx"
    if transport == "aiohttp" and importlib.util.find_spec("aiohttp") is None:
        raise LLMError("openai backend: transport 'aiohttp' needs: pip install aiohttp")
    return transport


def _openai() -> Any:
    """The openai SDK, imported on first use: only the "httpx" transport needs it, and its
    import costs ~0.7 s of CPU, which every build process paid at start-up for nothing."""
    # lazy, measured start-up cost: openai ~390 ms
    import openai

    return openai


@functools.cache
def _http_module() -> Any:
    """The httpx flavour (httpx or httpx2) the installed openai SDK builds its client on."""
    for cls in _openai().DefaultAsyncHttpxClient.__mro__:
        if cls.__name__ == "AsyncClient":
            return sys.modules[cls.__module__.split(".")[0]]
    raise LLMError("cannot find the HTTP client class of the installed openai SDK")


class OpenAIBackend:
    """`LLMClient` over an OpenAI-compatible `/chat/completions` endpoint.

    The key comes from `api_key` or the environment variable `api_key_env` (a placeholder only
    when `needs_api_key` is False: a local server that ignores authentication); it is held in memory for the client and never pickled: an
    unpickled backend reads the environment again.
    """

    def __init__(
        self,
        model: str,
        base_url: str | None = None,
        api_key: str | None = None,
        api_key_env: str = "OPENAI_API_KEY",
        timeout_s: float = 60.0,
        max_retries: int = 6,
        backoff_base_s: float = 0.5,
        backoff_max_s: float = 30.0,
        retry_after_max_s: float = 120.0,
        max_connections: int = 1000,
        transport: Transport = "auto",
        stats: CallStats | None = None,
        needs_api_key: bool = True,
    ):
        self.model = model
        self.base_url = base_url or os.environ.get("OPENAI_BASE_URL") or None
        self.timeout_s = timeout_s
        self.max_retries = max_retries
        self.backoff_base_s = backoff_base_s
        self.backoff_max_s = backoff_max_s
        self.retry_after_max_s = retry_after_max_s
        self.max_connections = max_connections
        self.transport = resolve_transport(transport)
        self.stats = stats if stats is not None else CallStats()
        self.api_key_env = api_key_env
        self.needs_api_key = needs_api_key
        self._api_key = self._resolve_key(api_key)
        self._client: Any = None  # openai.AsyncOpenAI (httpx) or aiohttp.ClientSession
        self._client_loop: asyncio.AbstractEventLoop | None = None
        self._jitter = random.Random()

    def _resolve_key(self, api_key: str | None) -> str:
        key = api_key or os.environ.get(self.api_key_env)
        if key:
            remember_secret(key)
            return key
        if not self.needs_api_key:
            return LOCAL_SERVER_DUMMY_KEY
        raise LLMError(
            f"openai backend (model {self.model!r}): no API key; set {self.api_key_env}, or set "
            "needs_api_key: false in the backend config for a local server that needs none"
        )

    @property
    def endpoint(self) -> str:
        return self.base_url or "https://api.openai.com/v1"

    @property
    def max_attempts(self) -> int:
        return self.max_retries + 1

    def __repr__(self) -> str:
        return (
            f"OpenAIBackend(model={self.model!r}, endpoint={self.endpoint!r}, "
            f"transport={self.transport!r})"
        )

    # -- client lifecycle ---------------------------------------------------------------------

    def _client_for_running_loop(self) -> Any:
        """One client per backend and loop, made inside the loop that uses it."""
        loop = asyncio.get_running_loop()
        if self._client is None or self._client_loop is not loop:
            if self.transport == "aiohttp":
                self._client = self._aiohttp_session()
                weakref.finalize(self, _close_on_its_loop, self._client, loop)
                # registered after the shared loop started, so it runs before that loop is
                # stopped at exit (atexit is last-in first-out; the finalizer's own exit hook
                # may have been registered before the loop, and would then run after it)
                atexit.register(_close_at_exit, weakref.ref(self._client), weakref.ref(loop))
            else:
                self._client = self._sdk_client()
            self._client_loop = loop
        return self._client

    def _aiohttp_session(self) -> Any:
        # lazy, measured start-up cost: aiohttp ~100 ms
        import aiohttp

        connector = aiohttp.TCPConnector(
            limit=self.max_connections, limit_per_host=self.max_connections, ttl_dns_cache=300
        )
        return aiohttp.ClientSession(
            connector=connector,
            timeout=aiohttp.ClientTimeout(total=self.timeout_s),
            headers={
                "Authorization": f"Bearer {self._api_key}",
                "Content-Type": "application/json",
            },
            skip_auto_headers=("User-Agent",),
            cookie_jar=aiohttp.DummyCookieJar(),  # no per-request cookie filtering
        )

    def _sdk_client(self) -> openai.AsyncOpenAI:
        openai = _openai()
        http = _http_module()
        limits = http.Limits(
            max_connections=self.max_connections,
            max_keepalive_connections=self.max_connections,
        )
        http_client = openai.DefaultAsyncHttpxClient(
            limits=limits, timeout=http.Timeout(self.timeout_s)
        )
        return openai.AsyncOpenAI(
            api_key=self._api_key,
            base_url=self.base_url,
            timeout=self.timeout_s,
            max_retries=0,
            http_client=http_client,
        )

    async def aclose(self) -> None:
        """Close the connections; a client made on another (maybe closed) loop is only dropped,
        since its sockets belong to that loop."""
        client, loop = self._client, self._client_loop
        self._client = None
        self._client_loop = None
        if client is not None and loop is asyncio.get_running_loop():
            await client.close()

    def __getstate__(self) -> dict[str, Any]:
        state = dict(self.__dict__)
        state.update(_api_key=None, _client=None, _client_loop=None)
        state.pop("_completions_url", None)
        state.pop("_completions_target", None)
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self._api_key = self._resolve_key(None)

    # -- the call -------------------------------------------------------------------------------

    async def complete(self, request: ChatRequest) -> ChatResponse:
        client = self._client_for_running_loop()
        payload: Any = self.payload_for(request)
        if self.transport == "aiohttp":  # encoded once, not once per attempt
            post, payload = self._post_aiohttp, encode_body(payload)
        else:
            post = self._post_sdk
        problem = self._url_problem
        if problem:  # every attempt would fail the same way: permanent, no retry
            raise self._error(f"malformed URL: {problem} (not retryable)", 1)
        stats = active_stats(self.stats)  # the calling role's tally (accounting.py)
        last_failure = "no attempt made"
        started = time.perf_counter()
        for attempt in range(self.max_attempts):
            stats.record_request()
            outcome = await post(client, payload)
            if isinstance(outcome, Failure):
                last_failure = (
                    f"{outcome.what}: {outcome.detail}" if outcome.detail else outcome.what
                )
                if not outcome.retryable:
                    raise self._error(f"{last_failure} (not retryable)", attempt + 1)
                delay = self._backoff_s(attempt, outcome.retry_after_s)
            else:
                try:
                    return parse_chat(outcome, self.model, time.perf_counter() - started)
                except BadResponse as exc:
                    raise self._error(f"unusable response: {exc}", attempt + 1) from None
            if attempt + 1 < self.max_attempts:
                stats.record_retry(outcome.cause)
                await asyncio.sleep(delay)
        raise self._error(f"gave up, last failure: {last_failure}", self.max_attempts)

    async def _post_aiohttp(self, session: Any, body: bytes) -> Any:
        """One attempt: the decoded JSON body, or a `Failure` saying whether to retry."""
        # lazy, measured start-up cost: aiohttp ~100 ms
        import aiohttp

        try:
            async with session.post(self._completions_target, data=body) as http_response:
                status = http_response.status
                raw = await http_response.read()
                if status < 300:
                    return decode_body(raw)
                text = raw[:500].decode("utf-8", "replace")
                return status_failure(status, http_response.headers, text)
        except (asyncio.TimeoutError, aiohttp.ServerTimeoutError):
            return Failure(f"timeout after {self.timeout_s}s", True, "timeout")
        except aiohttp.InvalidURL as exc:
            return Failure(f"malformed URL {str(exc)!r}", False, "bad_url")
        except aiohttp.ClientPayloadError as exc:  # body cut off mid-transfer
            return Failure("truncated body", True, "bad_body", None, repr(exc))
        except aiohttp.ClientError as exc:
            return Failure(f"connection error ({redact(repr(exc))})", True, "connection")

    async def _post_sdk(self, client: openai.AsyncOpenAI, payload: dict[str, Any]) -> Any:
        openai = _openai()
        try:
            http_response = await client.post(
                "/chat/completions", body=payload, cast_to=_http_module().Response
            )
        except openai.APIStatusError as exc:
            return status_failure(exc.status_code, exc.response.headers, str(exc))
        except openai.APITimeoutError:
            return Failure(f"timeout after {self.timeout_s}s", True, "timeout")
        except openai.APIConnectionError as exc:
            cause = exc.__cause__ or exc
            if type(cause).__name__ in ("InvalidURL", "UnsupportedProtocol"):
                return Failure(f"malformed URL ({cause})", False, "bad_url")
            return Failure(f"connection error ({redact(str(cause))})", True, "connection")
        return decode_body(http_response.content)

    @functools.cached_property
    def _url_problem(self) -> str | None:
        return base_url_problem(self.endpoint)

    @functools.cached_property
    def _completions_url(self) -> str:
        return self.endpoint.rstrip("/") + "/chat/completions"

    @functools.cached_property
    def _completions_target(self) -> Any:
        """The URL parsed once (aiohttp parses a string on every request); a string yarl
        refuses is left for aiohttp, which reports it as `InvalidURL` as before."""

        try:
            return yarl.URL(self._completions_url)
        except ValueError:
            return self._completions_url

    def payload_for(self, request: ChatRequest) -> dict[str, Any]:
        """The `/chat/completions` body; the backend's configured model is the one served."""
        return request_payload(self.model, request)

    def _backoff_s(self, attempt: int, retry_after_s: float | None) -> float:
        """Full-jitter exponential backoff, or what the server asked for (capped)."""
        if retry_after_s is not None:
            return min(retry_after_s, self.retry_after_max_s)
        ceiling = min(self.backoff_max_s, self.backoff_base_s * (2**attempt))
        return self._jitter.uniform(0.0, ceiling)

    def _error(self, what: str, attempts: int) -> LLMError:
        return LLMError(
            redact(
                f"openai backend: model {self.model!r} at {self.endpoint}: {what} "
                f"(attempts: {attempts} of {self.max_attempts})"
            )
        )


def _close_at_exit(session_ref: weakref.ref, loop_ref: weakref.ref) -> None:
    """Exit hook: close the session if it and its loop are still alive (its backend never
    collected). Weak references, so the hooks of many short-lived clients keep nothing alive."""
    session, loop = session_ref(), loop_ref()
    if session is not None and loop is not None:
        _close_on_its_loop(session, loop)


def _close_on_its_loop(session: Any, loop: asyncio.AbstractEventLoop) -> None:
    """Finalizer of a backend's aiohttp session (backend collected, or interpreter exit).

    Pipelines never close their clients explicitly, and an unclosed session logs an error at
    exit; closing it on its own loop while that loop still runs (the shared loop does until the
    process ends) keeps a build's log clean. A session whose loop is gone is left to the GC.
    """
    if session.closed or loop.is_closed() or not loop.is_running():
        return
    future = asyncio.run_coroutine_threadsafe(session.close(), loop)
    try:
        running = asyncio.get_running_loop()
    except RuntimeError:
        running = None
    if running is not loop:  # never block a loop on itself
        with contextlib.suppress(Exception):
            future.result(timeout=2.0)
