"""Fixtures for the LLM runtime tests: a real local HTTP chat server and the embedded model."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

import pytest
from llm_stub_server import Reply, start_stub_server


@pytest.fixture
def stub_server() -> Iterator[Any]:
    """Factory: `stub_server([Reply(...), ...]) -> (StubChatServer, base_url)`."""
    servers = []

    def start(script: Sequence[Reply]):
        stub, url, server = start_stub_server(script)
        servers.append(server)
        return stub, url

    yield start
    for server in servers:
        server.shutdown()
        server.server_close()


@pytest.fixture(scope="session")
def local_llm():
    """The embedded model, loaded once per test session (skipped when the wheel is absent)."""
    from trajforge.generators.llm.local import LocalLLM, default_model_dir
    from trajforge.schemas import LLMError

    try:
        default_model_dir()
    except LLMError as exc:
        pytest.skip(str(exc))
    llm = LocalLLM(max_batch_size=4)
    llm.load()
    return llm
