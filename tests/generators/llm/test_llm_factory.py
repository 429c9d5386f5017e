"""Backend configs, the discriminated union, build_client and the vLLM import guard."""

from __future__ import annotations

import asyncio
import importlib.util

import pytest
from llm_stub_server import Reply, chat_body
from pydantic import TypeAdapter, ValidationError

from trajforge.generators.llm import (
    AccountingLLM,
    BackendConfig,
    CachedLLM,
    LocalBackendConfig,
    LocalLLM,
    OpenAIBackend,
    OpenAIBackendConfig,
    ResponseCache,
    ScriptedBackendConfig,
    VLLMBackendConfig,
    build_client,
    model_name,
)
from trajforge.schemas import ChatRequest, LLMClient, LLMError, Message

ADAPTER = TypeAdapter(BackendConfig)
REQUEST = ChatRequest(model="m", messages=(Message(role="user", content="ping"),))


def test_union_dispatches_on_kind_and_forbids_extras():
    assert isinstance(ADAPTER.validate_python({"kind": "local"}), LocalBackendConfig)
    cfg = ADAPTER.validate_python({"kind": "openai", "model": "gpt-x", "timeout_s": 5})
    assert isinstance(cfg, OpenAIBackendConfig) and cfg.timeout_s == 5
    with pytest.raises(ValidationError):
        ADAPTER.validate_python({"kind": "openai", "model": "gpt-x", "api_key": "sk-nope"})
    with pytest.raises(ValidationError):
        ADAPTER.validate_python({"kind": "quantum"})


def test_unknown_responder_lists_known_names():
    with pytest.raises(ValidationError, match=r"unknown responder 'nope'; known: .*echo"):
        ScriptedBackendConfig(responder="nope")


def test_model_names_for_provenance():
    assert model_name(OpenAIBackendConfig(model="gpt-x")) == "gpt-x"
    assert model_name(LocalBackendConfig()) == "SmolLM2-135M-Instruct"
    assert model_name(ScriptedBackendConfig(responder="echo")) == "scripted:echo"
    assert model_name(VLLMBackendConfig(model="Qwen/Qwen3-0.6B")) == "Qwen/Qwen3-0.6B"


def test_build_scripted_client_with_cache_and_stats(tmp_path):
    cache = ResponseCache(tmp_path / "c.sqlite")
    client = build_client(ScriptedBackendConfig(responder="echo"), cache=cache)
    assert isinstance(client, LLMClient) and isinstance(client.inner, CachedLLM)
    first = asyncio.run(client.complete(REQUEST))
    second = asyncio.run(client.complete(REQUEST))
    assert first.message.content == "ping" and second.cached
    assert client.stats.calls == 2 and client.stats.cached_calls == 1
    assert isinstance(build_client(LocalBackendConfig()).inner, LocalLLM)  # lazy: no load


def test_build_openai_client_reads_key_from_named_env(stub_server, monkeypatch):
    stub, url = stub_server([Reply(status=503), Reply(body=chat_body("pong"))])
    monkeypatch.setenv("MY_KEY", "sk-from-env")
    cfg = OpenAIBackendConfig(
        model="stub-model", base_url=url, api_key_env="MY_KEY", backoff_base_s=0.001
    )
    client = build_client(cfg)
    assert isinstance(client, AccountingLLM) and isinstance(client.inner, OpenAIBackend)
    assert client.inner._api_key == "sk-from-env"
    assert asyncio.run(client.complete(REQUEST)).message.content == "pong"
    assert client.stats.retries == 1 and client.stats.calls == 1 and stub.count == 2


@pytest.mark.skipif(importlib.util.find_spec("vllm") is not None, reason="vllm is installed")
def test_vllm_guard_error_is_clear():
    import trajforge.generators.llm.vllm_backend as vllm_backend  # importing works without vllm

    with pytest.raises(LLMError, match=r"install trajforge\[gpu\]"):
        vllm_backend.VLLMBackend("tiny-model")
    with pytest.raises(LLMError, match=r"trajforge\[gpu\]"):
        build_client(VLLMBackendConfig(model="tiny-model"))


@pytest.mark.gpu
def test_vllm_generates_with_a_tiny_model():
    from trajforge.generators.llm.vllm_backend import VLLMBackend

    backend = VLLMBackend("facebook/opt-125m", max_model_len=512, gpu_memory_utilization=0.3)
    request = ChatRequest(
        model="opt", messages=(Message(role="user", content="Hello"),), seed=1
    ).model_copy(update={"sampling": REQUEST.sampling.model_copy(update={"max_tokens": 8})})
    response = asyncio.run(backend.complete(request))
    assert response.usage.completion_tokens <= 8 and response.model == "facebook/opt-125m"
