"""Retry policy and error hygiene of the openai backend against a real local HTTP server."""

from __future__ import annotations

import asyncio
import json

import pytest
from llm_stub_server import Reply, chat_body

from trajforge.generators.llm.accounting import AccountingLLM, CallStats
from trajforge.generators.llm.openai_backend import OpenAIBackend
from trajforge.generators.llm.openai_wire import BadResponse, decode_body, parse_chat
from trajforge.generators.llm.redact import REDACTED, redact
from trajforge.schemas import ChatRequest, LLMError, Message

REQUEST = ChatRequest(model="stub-model", messages=(Message(role="user", content="hi"),))
SECRET = "sk-test-0123456789abcdef"


@pytest.fixture(params=["httpx", "aiohttp"], name="transport")
def transport_fixture(request):
    if request.param == "aiohttp":
        pytest.importorskip("aiohttp")
    return request.param


def backend(url: str, transport: str, **overrides) -> OpenAIBackend:
    options = dict(
        api_key=SECRET, timeout_s=2.0, max_retries=2, backoff_base_s=0.001, backoff_max_s=0.01
    )
    options.update(overrides)
    return OpenAIBackend("stub-model", base_url=url, transport=transport, **options)


def call(client: OpenAIBackend) -> tuple:
    """One completion on a loop of its own; the backend's connections are closed on that
    loop (left open they were reported as "Unclosed client session" at exit)."""
    stats = CallStats()

    async def once():
        try:
            return await AccountingLLM(client, stats).complete(REQUEST)
        finally:
            await client.aclose()

    return asyncio.run(once()), stats


@pytest.mark.parametrize(
    "raw",
    [b"<html><body>502 Bad Gateway</body></html>", b'{"id": "chatcmpl-1", "choices": [{"ind'],
)
def test_ok_status_with_html_or_truncated_body_is_retried(stub_server, transport, raw):
    stub, url = stub_server([Reply(status=200, raw=raw), Reply(body=chat_body("fine"))])
    response, stats = call(backend(url, transport))
    assert response.message.content == "fine"
    assert stub.count == 2 and stats.requests == 2
    assert stats.retries_by_cause == {"bad_body": 1}


def test_retries_are_counted_by_cause(stub_server, transport):
    stub, url = stub_server(
        [
            Reply(status=429, headers=(("retry-after-ms", "1"),)),
            Reply(status=503),
            Reply(body=chat_body("ok")),
        ]
    )
    _, stats = call(backend(url, transport))
    counts = stats.counts()
    latency = {k: counts.pop(k) for k in list(counts) if k.startswith("latency_ms.")}
    assert sum(v for k, v in latency.items() if k != "latency_ms.sum") == 1  # one call timed
    assert counts == {
        "calls": 1,
        "cached_calls": 0,
        "errors": 0,
        "requests": 3,
        "prompt_tokens": 11,
        "completion_tokens": 3,
        "retries.rate_limited": 1,
        "retries.server_error": 1,
    }
    assert stats.take_delta()["requests"] == 3 and stats.take_delta() == {}


def test_malformed_url_fails_fast_without_retrying(transport):
    client = backend("http://127.0.0.1:99999999/v1", transport, max_retries=5)
    with pytest.raises(LLMError, match="(?i)malformed URL.*not retryable.*attempts: 1 of 6"):
        call(client)


def test_unusable_bodies_get_clear_messages(stub_server, transport):
    stub, url = stub_server([Reply(body={"choices": [], "object": "chat.completion"})])
    with pytest.raises(LLMError, match="no choices"):
        call(backend(url, transport))
    assert stub.count == 1
    parts = chat_body(None)
    parts["choices"][0]["message"]["content"] = [{"type": "image_url", "image_url": {}}]
    stub, url = stub_server([Reply(body=parts)])
    with pytest.raises(LLMError, match="non-text parts"):
        call(backend(url, transport))


def test_text_parts_are_joined_and_lone_surrogates_replaced():
    body = chat_body(None)
    body["choices"][0]["message"]["content"] = [
        {"type": "text", "text": "a"},
        {"type": "text", "text": "b"},
    ]
    assert parse_chat(body, "m", 0.0).message.content == "ab"
    raw = json.dumps(chat_body("x\ud800y")).encode()  # ensure_ascii keeps the escape
    decoded = decode_body(raw)
    assert parse_chat(decoded, "m", 0.0).message.content == "x\ufffdy"
    with pytest.raises(BadResponse, match="expected an object"):
        parse_chat(["not", "a", "dict"], "m", 0.0)


def test_server_echoing_the_authorization_header_never_leaks_the_key(stub_server, transport):
    stub, url = stub_server([Reply(status=400, echo_headers=True)])
    with pytest.raises(LLMError) as caught:
        call(backend(url, transport))
    message = str(caught.value)
    assert SECRET not in message and REDACTED in message and "400" in message


def test_redact_shapes_and_known_secrets(monkeypatch):
    monkeypatch.setenv("MY_SERVICE_API_KEY", "abcdef123456")
    text = "key abcdef123456, Authorization: Bearer xyz.123-abc, {'authorization': 'tok'} sk-abcdefghijk"
    clean = redact(text)
    assert "abcdef123456" not in clean and "xyz.123" not in clean and "'tok'" not in clean
    assert "sk-abcdefghijk" not in clean and clean.count(REDACTED) >= 4
    assert redact("nothing secret here") == "nothing secret here"
