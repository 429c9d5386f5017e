"""The request body is the same whether its messages' wire dicts come from the memo or not."""

from __future__ import annotations

from trajforge.generators.llm.openai_backend import OpenAIBackend
from trajforge.generators.llm.wire_memo import IdentityMemo
from trajforge.schemas import ChatRequest, Message, SamplingParams, ToolCall, ToolSpec


def fresh_payload(backend: OpenAIBackend, request: ChatRequest) -> dict:
    """The body built without the memo (each record converted again)."""
    payload = backend.payload_for(request)
    payload["messages"] = [m.openai_dict() for m in request.messages]
    if request.tools:
        payload["tools"] = [t.openai_schema() for t in request.tools]
    return payload


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


TOOL = ToolSpec(
    name="get",
    description="Read one thing.",
    parameters={"type": "object", "properties": {"id": {"type": "string"}}},
    kind="read",
    mutates_state=False,
)


def test_growing_conversation_bodies_equal_fresh_conversion():
    backend = OpenAIBackend("m", base_url="http://127.0.0.1:9/v1", needs_api_key=False)
    messages = conversation(6)
    for end in range(1, len(messages) + 1):  # the same objects resent, as a rollout does
        request = ChatRequest(
            model="m",
            messages=tuple(messages[:end]),
            tools=(TOOL,),
            sampling=SamplingParams(),
            seed=end,
        )
        assert request.messages[0] is messages[0]  # validation keeps the instances
        assert backend.payload_for(request) == fresh_payload(backend, request)


def test_memo_is_bounded_and_answers_by_identity():
    calls = []

    def convert(message: Message) -> dict:
        calls.append(message)
        return message.openai_dict()

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
    calls = []

    def convert(message: Message) -> dict:
        calls.append(message)
        return message.openai_dict()

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
