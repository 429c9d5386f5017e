"""A local OpenAI-compatible chat-completions server for benchmarks and fault tests.

Why a stub: throughput and fault handling of the LLM runtime must be measured offline, with a
latency we choose and faults we can reproduce. Every decision (slow call, 429, 500, hang) is
drawn from a hash of (request body, how many times this body was seen), so a run is
deterministic for a given request sequence and a retried request can succeed.

Endpoints: POST /v1/chat/completions, GET /v1/models, GET /stats (counters), POST /stats/reset.

Scripted agent policy when the request has tools: answer a user message with a tool call, answer
a tool result with another tool call until `tool_calls_per_episode` tool results are in the
conversation, then answer in text.

CLI: `python benchmarks/stub_server.py --port 0 --latency-ms 50` prints the bound port on its
first line of stdout. In-process: `with start_stub_server(StubConfig(...)) as stub: stub.base_url`.
Separate process (so its CPU is not counted): `with spawn_stub_process(StubConfig(...)) as stub`.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import dataclasses
import hashlib
import json
import math
import subprocess
import sys
import threading
import time
import urllib.request
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from aiohttp import web

try:  # less stub CPU per call, so the stub is further from saturation; optional
    import orjson

    _loads = orjson.loads

    def _dumps(value: Any) -> str:
        return orjson.dumps(value).decode()

except ImportError:  # pragma: no cover - depends on the environment
    _loads = json.loads
    _dumps = json.dumps


@dataclass(frozen=True)
class StubConfig:
    latency_ms: float = 50.0  # fixed latency of every call
    slow_fraction: float = 0.0  # fraction of calls that take `slow_ms` more
    slow_ms: float = 1000.0
    tokens_per_s: float = 0.0  # completion tokens per second added to latency; 0 = instant
    completion_tokens: int = 16  # words in a text answer (capped by the request's max_tokens)
    rate_429: float = 0.0  # fraction answered 429 with Retry-After
    retry_after_s: float = 0.05
    rate_500: float = 0.0
    rate_hang: float = 0.0  # fraction that hang for `hang_s` (client timeouts)
    hang_s: float = 3600.0
    tool_calls_per_episode: int = 1
    model: str = "stub-model"
    seed: int = 0


@dataclass
class StubStats:
    """Counters read through /stats; mutated only on the server's loop thread."""

    requests: int = 0
    completed: int = 0
    in_flight: int = 0
    max_in_flight: int = 0
    by_outcome: Counter[str] = field(default_factory=Counter)
    served_ms: list[float] = field(default_factory=list)  # handler entry to response, per call
    #: Client (host, port) pairs seen: how many TCP connections the clients opened (a client
    #: that reuses keep-alive connections opens about as many as it keeps in flight).
    peers: set[Any] = field(default_factory=set)
    #: The stub process's CPU time when the counters were reset: its CPU since then competes
    #: with the build for this machine's cores.
    cpu_at_reset_s: float = field(default_factory=time.process_time)

    def as_json(self) -> dict[str, Any]:
        return {
            "requests": self.requests,
            "completed": self.completed,
            "in_flight": self.in_flight,
            "max_in_flight": self.max_in_flight,
            "by_outcome": dict(self.by_outcome),
            "served_ms": percentiles(self.served_ms),
            "connections": len(self.peers),
            "cpu_s": round(time.process_time() - self.cpu_at_reset_s, 3),
        }


def percentiles(values: list[float]) -> dict[str, float]:
    """p50/p90/p99/max of `values`, rounded; what the stub itself took, to tell its lag from
    the client's (a stub that serves 50 ms calls in 58 ms is saturated, not the client)."""
    if not values:
        return {}
    ordered = sorted(values)
    pick = lambda q: round(ordered[min(len(ordered) - 1, int(q * len(ordered)))], 2)  # noqa: E731
    return {"p50": pick(0.5), "p90": pick(0.9), "p99": pick(0.99), "max": round(ordered[-1], 2)}


def _unit_draws(config: StubConfig, body: bytes, attempt: int) -> tuple[float, float]:
    """Two independent uniforms in [0, 1) for (fault, slowness), fixed per (body, attempt)."""
    digest = hashlib.blake2b(
        body, digest_size=16, key=f"{config.seed}:{attempt}".encode(), person=b"trajforge-stub"
    ).digest()
    return (
        int.from_bytes(digest[:8], "big") / 2**64,
        int.from_bytes(digest[8:], "big") / 2**64,
    )


def choose_fault(config: StubConfig, draw: float) -> str | None:
    """'429', '500', 'hang' or None, by cumulative fractions of one uniform draw."""
    for name, rate in (
        ("429", config.rate_429),
        ("500", config.rate_500),
        ("hang", config.rate_hang),
    ):
        if draw < rate:
            return name
        draw -= rate
    return None


def _placeholder(schema: dict[str, Any]) -> Any:
    kind = schema.get("type")
    if "enum" in schema and schema["enum"]:
        return schema["enum"][0]
    return {"integer": 1, "number": 1.0, "boolean": True, "array": [], "object": {}}.get(kind, "x")


def scripted_tool_call(tools: list[dict[str, Any]], index: int, digest: str) -> dict[str, Any]:
    """A call of tool number `index` (round robin) with its required arguments filled in."""
    function = tools[index % len(tools)].get("function", {})
    parameters = function.get("parameters") or {}
    properties = parameters.get("properties") or {}
    arguments = {
        name: _placeholder(properties.get(name, {})) for name in parameters.get("required", [])
    }
    return {
        "id": f"call_{digest[:12]}_{index}",
        "type": "function",
        "function": {"name": function.get("name", "tool"), "arguments": json.dumps(arguments)},
    }


def agent_reply(config: StubConfig, request: dict[str, Any], digest: str) -> tuple[dict, str, int]:
    """(assistant message, finish_reason, completion tokens) of the scripted policy."""
    messages = request.get("messages") or []
    tools = request.get("tools") or []
    last_role = messages[-1].get("role") if messages else "user"
    tool_results = sum(1 for m in messages if m.get("role") == "tool")
    wants_tool = tools and (
        last_role == "user"
        or (last_role == "tool" and tool_results < config.tool_calls_per_episode)
    )
    if wants_tool:
        call = scripted_tool_call(tools, tool_results, digest)
        return {"role": "assistant", "content": None, "tool_calls": [call]}, "tool_calls", 8
    max_tokens = request.get("max_tokens") or request.get("max_completion_tokens") or 1 << 30
    words = max(1, min(config.completion_tokens, int(max_tokens)))
    text = " ".join(f"w{digest[i % 16]}{i}" for i in range(words))
    return {"role": "assistant", "content": text}, "stop", words


def _prompt_tokens(request: dict[str, Any]) -> int:
    return sum(len(str(m.get("content") or "").split()) for m in request.get("messages") or [])


class StubApp:
    """The aiohttp handlers around one config and one set of counters."""

    def __init__(self, config: StubConfig):
        self.config = config
        self.stats = StubStats()
        self.attempts: Counter[bytes] = Counter()

    def build(self) -> web.Application:
        app = web.Application()
        app.router.add_post("/v1/chat/completions", self.chat_completions)
        app.router.add_get("/v1/models", self.models)
        app.router.add_get("/stats", self.get_stats)
        app.router.add_post("/stats/reset", self.reset_stats)
        return app

    async def models(self, _: web.Request) -> web.Response:
        return web.json_response(
            {
                "object": "list",
                "data": [{"id": self.config.model, "object": "model", "owned_by": "stub"}],
            }
        )

    async def get_stats(self, _: web.Request) -> web.Response:
        return web.json_response(self.stats.as_json())

    async def reset_stats(self, _: web.Request) -> web.Response:
        self.stats = StubStats()
        self.attempts.clear()
        return web.json_response({"ok": True})

    async def chat_completions(self, http_request: web.Request) -> web.Response:
        stats = self.stats
        entered = time.perf_counter()
        stats.requests += 1
        stats.peers.add(
            http_request.transport and http_request.transport.get_extra_info("peername")
        )
        stats.in_flight += 1
        stats.max_in_flight = max(stats.max_in_flight, stats.in_flight)
        try:
            response, outcome = await self._answer(await http_request.read())
        finally:
            stats.in_flight -= 1
        stats.completed += 1
        stats.by_outcome[outcome] += 1
        stats.served_ms.append(1000.0 * (time.perf_counter() - entered))
        return response

    async def _answer(self, body: bytes) -> tuple[web.Response, str]:
        config = self.config
        try:
            request = _loads(body)
        except ValueError:
            return _error(400, "body is not JSON"), "400"
        if request.get("stream"):
            return _error(400, "streaming is not supported by the stub"), "400"
        body_key = hashlib.blake2b(body, digest_size=16).digest()
        attempt = self.attempts[body_key]
        self.attempts[body_key] = attempt + 1
        fault_draw, slow_draw = _unit_draws(config, body, attempt)
        fault = choose_fault(config, fault_draw)
        if fault == "hang":
            await asyncio.sleep(config.hang_s)
            return _error(504, "stub hang elapsed"), "hang"
        if fault == "429":
            await _sleep_ms(config.latency_ms / 10)
            headers = {
                "retry-after": str(math.ceil(config.retry_after_s)),
                "retry-after-ms": str(int(config.retry_after_s * 1000)),
            }
            return _error(429, "rate limited by stub", headers), "429"
        if fault == "500":
            await _sleep_ms(config.latency_ms / 10)
            return _error(500, "internal error injected by stub"), "500"
        digest = body_key.hex()
        message, finish_reason, completion_tokens = agent_reply(config, request, digest)
        latency_ms = config.latency_ms + (
            config.slow_ms if slow_draw < config.slow_fraction else 0.0
        )
        if config.tokens_per_s > 0:
            latency_ms += 1000.0 * completion_tokens / config.tokens_per_s
        await _sleep_ms(latency_ms)
        prompt_tokens = _prompt_tokens(request)
        payload = {
            "id": f"chatcmpl-{digest[:24]}",
            "object": "chat.completion",
            "created": 0,
            "model": request.get("model") or config.model,
            "choices": [{"index": 0, "message": message, "finish_reason": finish_reason}],
            "usage": {
                "prompt_tokens": prompt_tokens,
                "completion_tokens": completion_tokens,
                "total_tokens": prompt_tokens + completion_tokens,
            },
        }
        outcome = "ok" if finish_reason == "stop" else "tool_call"
        return web.json_response(payload, dumps=_dumps), outcome


async def _sleep_ms(ms: float) -> None:
    if ms > 0:
        await asyncio.sleep(ms / 1000.0)


def _error(status: int, message: str, headers: dict[str, str] | None = None) -> web.Response:
    body = {"error": {"message": message, "type": "stub_error", "code": status}}
    return web.json_response(body, status=status, headers=headers)


async def _serve(config: StubConfig, port: int) -> tuple[web.AppRunner, int]:
    runner = web.AppRunner(
        StubApp(config).build(), access_log=None, handler_cancellation=True, shutdown_timeout=0.5
    )
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", port, backlog=4096, shutdown_timeout=0.5)
    await site.start()
    sockets = site._server.sockets  # type: ignore[union-attr]
    return runner, sockets[0].getsockname()[1]


@dataclass(frozen=True)
class StubHandle:
    """Where a running stub listens."""

    port: int

    @property
    def base_url(self) -> str:
        """OpenAI-style base URL (ends in /v1)."""
        return f"http://127.0.0.1:{self.port}/v1"

    def stats(self) -> dict[str, Any]:
        with urllib.request.urlopen(f"http://127.0.0.1:{self.port}/stats", timeout=10) as reply:
            return json.loads(reply.read())

    def reset_stats(self) -> None:
        request = urllib.request.Request(f"http://127.0.0.1:{self.port}/stats/reset", method="POST")
        urllib.request.urlopen(request, timeout=10).close()


@contextlib.contextmanager
def start_stub_server(config: StubConfig | None = None, port: int = 0) -> Iterator[StubHandle]:
    """Run the stub in a background thread of this process (its own loop); for tests."""
    config = config or StubConfig()
    loop = asyncio.new_event_loop()
    thread = threading.Thread(target=loop.run_forever, name="stub-server", daemon=True)
    thread.start()
    runner, bound = asyncio.run_coroutine_threadsafe(_serve(config, port), loop).result(30)
    try:
        yield StubHandle(port=bound)
    finally:
        asyncio.run_coroutine_threadsafe(runner.cleanup(), loop).result(30)
        loop.call_soon_threadsafe(loop.stop)
        thread.join(timeout=10)
        loop.close()


def config_to_args(config: StubConfig) -> list[str]:
    """CLI flags that rebuild `config` in another process."""
    args = []
    for item in dataclasses.fields(config):
        args += [f"--{item.name.replace('_', '-')}", str(getattr(config, item.name))]
    return args


@contextlib.contextmanager
def spawn_stub_process(
    config: StubConfig | None = None, cpus: frozenset[int] | None = None
) -> Iterator[StubHandle]:
    """Run the stub as a child process, so its CPU is not counted against the client; `cpus`
    pins it to those cores (an endpoint on other cores than the build's)."""
    config = config or StubConfig()
    command = [sys.executable, __file__, "--port", "0", *config_to_args(config)]
    process = subprocess.Popen(command, stdout=subprocess.PIPE, text=True, preexec_fn=pin_to(cpus))
    try:
        assert process.stdout is not None
        line = process.stdout.readline().strip()
        if not line.isdigit():
            raise RuntimeError(f"stub server did not start (printed {line!r})")
        yield StubHandle(port=int(line))
    finally:
        process.terminate()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()


def pin_to(cpus: frozenset[int] | None):
    """A `preexec_fn` that pins the child (and all it starts) to `cpus`; None: no pinning."""
    if cpus is None:
        return None
    import os

    return lambda: os.sched_setaffinity(0, cpus)


def parse_cpus(text: str) -> frozenset[int]:
    """'0,1' or '2-7' or '0,4-5' as a set of core numbers; the error names the bad part."""
    cpus: set[int] = set()
    for part in filter(None, (p.strip() for p in text.split(","))):
        first, _, last = part.partition("-")
        if not first.isdigit() or (last and not last.isdigit()):
            raise ValueError(f"cpu list {text!r}: {part!r} is not N or N-M")
        cpus.update(range(int(first), int(last or first) + 1))
    if not cpus:
        raise ValueError(f"cpu list {text!r} names no core")
    return frozenset(cpus)


def parse_args(argv: list[str] | None = None) -> tuple[StubConfig, int]:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--port", type=int, default=0, help="0 picks a free port (printed)")
    for item in dataclasses.fields(StubConfig):
        kind = type(item.default)
        parser.add_argument(f"--{item.name.replace('_', '-')}", type=kind, default=item.default)
    namespace = vars(parser.parse_args(argv))
    port = namespace.pop("port")
    return StubConfig(**namespace), port


def main(argv: list[str] | None = None) -> None:
    config, port = parse_args(argv)
    _use_fast_loop()
    loop = asyncio.new_event_loop()
    _, bound = loop.run_until_complete(_serve(config, port))
    print(bound, flush=True)
    with contextlib.suppress(KeyboardInterrupt):
        loop.run_forever()


def _use_fast_loop() -> None:
    """uvloop when installed (less stub CPU); the standard loop otherwise."""
    with contextlib.suppress(ImportError):
        import uvloop  # type: ignore[import-not-found]

        asyncio.set_event_loop_policy(uvloop.EventLoopPolicy())


if __name__ == "__main__":
    main()
