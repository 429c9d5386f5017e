"""`IdentityMemo` answers by identity within its bound; `RequestKeys` (a `CachedLLM`'s own
memo) gives `ChatRequest.cache_key()` and travels as a fresh memo."""

from __future__ import annotations

import pickle

from trajforge.generators.llm.cache import CachedLLM, ResponseCache
from trajforge.generators.llm.identity_memo import IdentityMemo
from trajforge.generators.llm.request_keys import RequestKeys
from trajforge.generators.llm.scripted import ScriptedLLM
from trajforge.schemas import ChatRequest, Message, ToolCall


def conversation(n: int) -> list[Message]:
    messages = [Message(role="system", content="policy")]
    for i in range(n):
        call = ToolCall(id=f"c{i}", name="get", arguments={"id": f"#{i}", "n": i})
        messages += [
            Message(role="user", content=f"turn {i}"),
            Message(role="assistant", tool_calls=(call,)),
            Message(role="tool", content=f"result {i}", tool_call_id=f"c{i}", name="get"),
        ]
    return messages


def counting(calls: list[Message]):
    """A conversion that records each record it converts."""

    def convert(message: Message) -> dict:
        calls.append(message)
        return message.openai_dict()

    return convert


def test_memo_is_bounded_and_answers_by_identity():
    calls: list[Message] = []
    convert = counting(calls)
    memo: IdentityMemo[Message] = IdentityMemo(convert, maxsize=4)
    messages = conversation(3)  # 10 messages
    first = [memo(m) for m in messages]
    assert len(memo) <= 4 and len(calls) == 10
    assert [memo(m) for m in messages[-2:]] == first[-2:] and len(calls) == 10  # hits
    assert memo(messages[0]) == first[0] and len(calls) == 11  # dropped long ago: converted
    equal_twin = Message(role="system", content="policy")  # equal, but another object
    assert memo(equal_twin) == first[0] and len(calls) == 12


def test_memo_keeps_the_recently_used_half_under_churn():
    """Many records through a small memo: never more than the bound, the last half inserted
    or used always answered without converting, every answer right."""
    calls: list[Message] = []
    convert = counting(calls)
    memo: IdentityMemo[Message] = IdentityMemo(convert, maxsize=16)
    messages = conversation(20)  # 61 messages
    hot = messages[0]
    for index, message in enumerate(messages):
        assert memo(message) == message.openai_dict()
        assert memo(hot) == hot.openai_dict()  # used on every step: never dropped
        assert len(memo) <= 16
        converted = len(calls)
        recent = messages[max(1, index - 5) : index + 1]  # with hot: 7 of 8
        assert [memo(m) for m in recent] == [m.openai_dict() for m in recent]
        assert len(calls) == converted
    assert calls.count(hot) == 1


def test_request_keys_are_the_whole_request_keys_and_owned_per_client(tmp_path):
    messages = conversation(4)
    requests = [ChatRequest(model="m", messages=tuple(messages[:n])) for n in range(1, 14)]
    cache = ResponseCache(tmp_path / "c.sqlite")
    first, second = CachedLLM(ScriptedLLM([]), cache), CachedLLM(ScriptedLLM([]), cache)
    assert [first.keys(r) for r in requests] == [r.cache_key() for r in requests]
    assert len(first.keys) == 14 and len(second.keys) == 0  # 13 messages and the sampling
    assert [first.keys(r) for r in requests] == [r.cache_key() for r in requests]  # from memo


def test_request_keys_pickle_as_a_fresh_memo():
    keys = RequestKeys(maxsize=32)
    request = ChatRequest(model="m", messages=tuple(conversation(1)))
    assert keys(request) == request.cache_key() and len(keys) > 0
    copy = pickle.loads(pickle.dumps(keys))
    assert len(copy) == 0 and copy(request) == request.cache_key()
