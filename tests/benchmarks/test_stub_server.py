from __future__ import annotations

import json
import sys
import urllib.error
import urllib.request
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))

from stub_server import StubConfig, agent_reply, choose_fault, start_stub_server  # noqa: E402

TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "lookup",
            "parameters": {
                "type": "object",
                "properties": {"q": {"type": "string"}, "n": {"type": "integer"}},
                "required": ["q", "n"],
            },
        },
    }
]


def post(base_url: str, body: dict) -> tuple[int, dict, dict]:
    request = urllib.request.Request(
        f"{base_url}/chat/completions",
        data=json.dumps(body).encode(),
        headers={"content-type": "application/json"},
    )
    try:
        with urllib.request.urlopen(request, timeout=10) as reply:
            return reply.status, dict(reply.headers), json.loads(reply.read())
    except urllib.error.HTTPError as error:
        return error.code, dict(error.headers), json.loads(error.read())


def test_text_completion_and_stats():
    with start_stub_server(StubConfig(latency_ms=1, completion_tokens=5)) as stub:
        body = {"model": "m", "messages": [{"role": "user", "content": "hi there"}]}
        status, _, data = post(stub.base_url, body)
        assert status == 200
        assert data["choices"][0]["finish_reason"] == "stop"
        assert len(data["choices"][0]["message"]["content"].split()) == 5
        assert data["usage"] == {"prompt_tokens": 2, "completion_tokens": 5, "total_tokens": 7}
        assert post(stub.base_url, body)[2] == data  # deterministic per request
        stats = stub.stats()
        assert stats["requests"] == 2 and stats["by_outcome"] == {"ok": 2}
        with urllib.request.urlopen(f"{stub.base_url}/models", timeout=10) as reply:
            assert json.loads(reply.read())["data"][0]["id"] == "stub-model"


def test_scripted_tool_policy_calls_tools_then_answers():
    config = StubConfig(tool_calls_per_episode=2)
    user = [{"role": "user", "content": "find it"}]
    message, finish, _ = agent_reply(config, {"messages": user, "tools": TOOLS}, "ab" * 16)
    assert finish == "tool_calls"
    call = message["tool_calls"][0]
    assert call["function"]["name"] == "lookup"
    assert json.loads(call["function"]["arguments"]) == {"q": "x", "n": 1}
    one_result = user + [message, {"role": "tool", "tool_call_id": call["id"], "content": "r"}]
    assert (
        agent_reply(config, {"messages": one_result, "tools": TOOLS}, "cd" * 16)[1] == "tool_calls"
    )
    two_results = one_result + [message, {"role": "tool", "tool_call_id": "c2", "content": "r"}]
    assert agent_reply(config, {"messages": two_results, "tools": TOOLS}, "ef" * 16)[1] == "stop"
    assert agent_reply(config, {"messages": user}, "ab" * 16)[1] == "stop"  # no tools: text


def test_fault_fractions_are_cumulative():
    config = StubConfig(rate_429=0.1, rate_500=0.2, rate_hang=0.3)
    assert [choose_fault(config, d) for d in (0.05, 0.15, 0.35, 0.65)] == [
        "429",
        "500",
        "hang",
        None,
    ]


def test_injected_429_carries_retry_after_and_a_retry_can_succeed():
    with start_stub_server(StubConfig(latency_ms=0, rate_429=0.5, retry_after_s=0.25)) as stub:
        outcomes = []
        for index in range(40):
            body = {"model": "m", "messages": [{"role": "user", "content": f"q{index}"}]}
            status, headers, _ = post(stub.base_url, body)
            if status == 429:
                assert headers["retry-after-ms"] == "250" and headers["retry-after"] == "1"
                status = post(stub.base_url, body)[0]  # the same body, next attempt
            outcomes.append(status)
        first_429s = stub.stats()["by_outcome"].get("429", 0)
    assert 5 <= first_429s <= 35  # about half, deterministic for these bodies
    assert outcomes.count(200) >= 20


@pytest.mark.parametrize("fault", ["rate_500"])
def test_injected_500(fault):
    with start_stub_server(StubConfig(latency_ms=0, **{fault: 1.0})) as stub:
        status, _, data = post(stub.base_url, {"model": "m", "messages": []})
    assert status == 500 and data["error"]["code"] == 500
