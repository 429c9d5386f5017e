"""The openai backend against a real local HTTP server: retries, Retry-After, timeouts, parsing."""

from __future__ import annotations

import asyncio
import functools
import gc
import pickle
import socket
import time

import pytest
from llm_stub_server import Reply, chat_body

from trajforge.generators.llm.concurrency import run_all
from trajforge.generators.llm.openai_backend import (
    OpenAIBackend,
    parse_retry_after,
    resolve_transport,
)
from trajforge.schemas import ChatRequest, LLMError, Message, SamplingParams, ToolSpec

REQUEST = ChatRequest(
    model="stub-model",
    messages=(Message(role="user", content="hi"),),
    sampling=SamplingParams(temperature=0.0, max_tokens=8, stop=("\n\n",)),
    seed=7,
)
TOOL = ToolSpec(
    name="get_order",
    description="Look up an order.",
    parameters={"type": "object", "properties": {"order_id": {"type": "string"}}},
    kind="read",
    mutates_state=False,
)


@pytest.fixture(params=["httpx", "aiohttp"], name="transport")
def transport_fixture(request):
    """Both HTTP transports under the SDK must behave the same."""
    if request.param == "aiohttp":
        pytest.importorskip("aiohttp")
    return request.param


def backend(url: str, **overrides) -> OpenAIBackend:
    options = dict(
        api_key="test-key", timeout_s=2.0, max_retries=2, backoff_base_s=0.001, backoff_max_s=0.01
    )
    options.update(overrides)
    return OpenAIBackend("stub-model", base_url=url, **options)


def test_success_maps_request_and_parses_usage(stub_server, transport):
    stub, url = stub_server([Reply(body=chat_body("hello there"))])
    response = asyncio.run(
        backend(url, transport=transport).complete(REQUEST.model_copy(update={"tools": (TOOL,)}))
    )
    assert response.message.content == "hello there"
    assert response.usage.prompt_tokens == 11 and response.usage.completion_tokens == 3
    assert response.finish_reason == "stop" and not response.cached
    sent = stub.requests[0]
    assert sent["model"] == "stub-model" and sent["seed"] == 7 and sent["max_tokens"] == 8
    assert sent["stop"] == ["\n\n"] and sent["messages"] == [{"role": "user", "content": "hi"}]
    assert sent["tools"][0]["function"]["name"] == "get_order"


def test_429_with_retry_after_then_success(stub_server, transport):
    stub, url = stub_server(
        [Reply(status=429, headers=(("retry-after", "0.2"),)), Reply(body=chat_body("ok"))]
    )
    client = backend(url, transport=transport)
    started = time.perf_counter()
    response = asyncio.run(client.complete(REQUEST))
    assert response.message.content == "ok"
    assert stub.count == 2
    assert time.perf_counter() - started >= 0.2  # waited as the server asked
    assert client.stats.retries == 1


def test_500_twice_then_success(stub_server, transport):
    stub, url = stub_server([Reply(status=500), Reply(status=503), Reply(body=chat_body("ok"))])
    response = asyncio.run(backend(url, transport=transport).complete(REQUEST))
    assert response.message.content == "ok"
    assert stub.count == 3


@pytest.mark.parametrize("status", [429, 500])
def test_persistent_failure_raises_after_exact_budget(stub_server, transport, status):
    stub, url = stub_server([Reply(status=status)])
    with pytest.raises(LLMError) as info:
        asyncio.run(backend(url, max_retries=3, transport=transport).complete(REQUEST))
    assert stub.count == 4
    message = str(info.value)
    assert f"HTTP {status}" in message and "4 of 4" in message and "stub-model" in message
    assert "test-key" not in message


def test_non_retryable_4xx_fails_at_once(stub_server, transport):
    stub, url = stub_server([Reply(status=400)])
    with pytest.raises(LLMError, match="HTTP 400"):
        asyncio.run(backend(url, transport=transport).complete(REQUEST))
    assert stub.count == 1


def test_bad_tool_arguments_become_parse_error(stub_server, transport):
    calls = [
        {"id": "c1", "type": "function", "function": {"name": "get_order", "arguments": "{oops"}},
        {"id": "c2", "type": "function", "function": {"name": "get_order", "arguments": "[1]"}},
        {
            "id": "c3",
            "type": "function",
            "function": {"name": "get_order", "arguments": '{"order_id": "A1"}'},
        },
    ]
    _, url = stub_server([Reply(body=chat_body(None, calls))])
    response = asyncio.run(backend(url, transport=transport).complete(REQUEST))
    bad_json, not_object, good = response.message.tool_calls
    assert response.finish_reason == "tool_calls"
    assert bad_json.parse_error and "not valid JSON" in bad_json.parse_error
    assert bad_json.raw_arguments == "{oops" and bad_json.arguments == {}
    assert not_object.parse_error and "JSON object" in not_object.parse_error
    assert good.parse_error is None and good.arguments == {"order_id": "A1"}


def test_hung_response_is_retried_then_fails(stub_server, transport):
    stub, url = stub_server([Reply(body=chat_body(), delay_s=1.0)])
    with pytest.raises(LLMError, match="timeout"):
        asyncio.run(
            backend(url, timeout_s=0.2, max_retries=1, transport=transport).complete(REQUEST)
        )
    assert stub.count == 2


def test_many_concurrent_calls_on_one_loop(stub_server, transport):
    stub, url = stub_server([Reply(body=chat_body("ok"), delay_s=0.3)])
    client = backend(url, transport=transport)

    async def run_all():
        try:
            return await asyncio.gather(*(client.complete(REQUEST) for _ in range(64)))
        finally:
            await client.aclose()

    responses = asyncio.run(run_all())
    assert len(responses) == 64 and stub.count == 64
    assert stub.max_in_flight >= 32  # concurrent on one loop, not one at a time


def test_retry_after_parsing_and_pickling_drops_key(monkeypatch):
    assert parse_retry_after({"retry-after": "3"}) == 3.0
    assert parse_retry_after({"retry-after-ms": "250"}) == 0.25
    assert parse_retry_after({"retry-after": "Wed, 21 Oct 2015 07:28:00 GMT"}) == 0.0
    assert parse_retry_after({}) is None
    monkeypatch.setenv("OPENAI_API_KEY", "from-env")
    client = OpenAIBackend("m", base_url="http://127.0.0.1:1/v1", api_key="secret")
    blob = pickle.dumps(client)
    assert b"secret" not in blob
    assert pickle.loads(blob)._api_key == "from-env"


def test_missing_key_without_base_url_is_a_clear_error(monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    with pytest.raises(LLMError, match="OPENAI_API_KEY"):
        OpenAIBackend("m")


def test_default_transport_is_the_direct_aiohttp_path():
    pytest.importorskip("aiohttp")
    client = OpenAIBackend("m", base_url="http://127.0.0.1:1/v1", needs_api_key=False)
    assert client.transport == "aiohttp"
    assert resolve_transport("httpx") == "httpx"


def test_ok_status_without_choices_fails_at_once(stub_server, transport):
    stub, url = stub_server([Reply(status=200, body={"object": "chat.completion"})])
    with pytest.raises(LLMError, match="no choices"):
        asyncio.run(backend(url, transport=transport).complete(REQUEST))
    assert stub.count == 1


def test_refused_connection_is_retried_then_fails(transport):
    with socket.socket() as probe:  # a port nobody listens on once the probe is closed
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    client = backend(f"http://127.0.0.1:{port}/v1", max_retries=2, transport=transport)
    with pytest.raises(LLMError, match="connection error") as info:
        asyncio.run(client.complete(REQUEST))
    assert "3 of 3" in str(info.value)
    assert client.stats.retries == 2


def test_one_client_per_event_loop(stub_server, transport):
    _, url = stub_server([Reply(body=chat_body("ok"))])
    client = backend(url, transport=transport)

    async def two_calls(close: bool):
        await client.complete(REQUEST)
        first = client._client
        await client.complete(REQUEST)
        assert client._client is first  # pooled connections are reused within a loop
        if close:
            await client.aclose()
        return first

    first = asyncio.run(two_calls(close=False))
    second = asyncio.run(two_calls(close=True))
    assert first is not second  # a new loop cannot use the old loop's connections
    assert client._client is None
    asyncio.run(client.aclose())  # idempotent


def test_collected_backend_closes_its_session_on_the_shared_loop(stub_server):
    pytest.importorskip("aiohttp")
    _, url = stub_server([Reply(body=chat_body("ok"))])
    client = backend(url)
    run_all([functools.partial(client.complete, REQUEST)], max_in_flight=1)
    session = client._client
    assert not session.closed
    del client
    gc.collect()
    assert session.closed  # no "Unclosed client session" at the end of a build


def test_base_url_alone_no_longer_implies_a_dummy_key(monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    with pytest.raises(LLMError, match="needs_api_key: false"):
        OpenAIBackend("m", base_url="http://127.0.0.1:1/v1")
    assert OpenAIBackend("m", base_url="http://127.0.0.1:1/v1", needs_api_key=False)._api_key


EXIT_SCRIPT = """
import sys, weakref
sys.path.insert(0, {here!r})
weakref.finalize(type("Early", (), {{}})(), print)  # weakref's exit hook registered first
from llm_stub_server import Reply, chat_body, start_stub_server
from trajforge.generators.llm.concurrency import run_all
from trajforge.generators.llm.openai_backend import OpenAIBackend
from trajforge.schemas import ChatRequest, Message
_, url, server = start_stub_server([Reply(body=chat_body("ok"))])
client = OpenAIBackend("stub-model", base_url=url, needs_api_key=False)
request = ChatRequest(model="stub-model", messages=[Message(role="user", content="hi")])
run_all([lambda: client.complete(request)], max_in_flight=1)
server.shutdown()
print("done")
"""


def test_a_session_alive_at_exit_is_closed_before_the_shared_loop_stops(tmp_path):
    """At exit, atexit runs its hooks last-registered first: when anything registered
    weakref's exit hook before the shared loop started (pytest, Beam, tempfile do), the
    backend's finalizer ran after the loop had stopped and could not close the session, and
    the build's log ended with "Unclosed client session"."""
    pytest.importorskip("aiohttp")
    import subprocess
    import sys
    from pathlib import Path

    script = EXIT_SCRIPT.format(here=str(Path(__file__).parent))
    out = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=120
    )
    assert out.returncode == 0, out.stderr
    assert "done" in out.stdout
    assert "Unclosed" not in out.stderr, out.stderr
