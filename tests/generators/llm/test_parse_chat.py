"""`parse_chat` (one validation of nested fields) gives the records the per-record constructors
gave, on many bodies: same values, same set fields, same JSON."""

from __future__ import annotations

import json
import random
from typing import Any

from trajforge.generators.llm.openai_wire import FINISH_REASONS, _content, parse_chat
from trajforge.generators.llm.toolcall_text import parse_arguments
from trajforge.schemas import ChatResponse, Message, ToolCall, Usage


def reference_call(index: int, wire: dict[str, Any]) -> ToolCall:
    """The former path: one `ToolCall` constructor per call."""
    function = wire.get("function") or {}
    name = function.get("name") or ""
    raw = function.get("arguments")
    call_id = wire.get("id") or f"call_{index}"
    if isinstance(raw, dict):
        return ToolCall(id=call_id, name=name, arguments=raw)
    raw_text = raw if isinstance(raw, str) else ""
    arguments, error = parse_arguments(raw_text)
    if error is not None:
        return ToolCall(id=call_id, name=name, parse_error=error, raw_arguments=raw_text)
    return ToolCall(id=call_id, name=name, arguments=arguments)


def reference_parse(data: dict[str, Any], model: str, latency_s: float) -> ChatResponse:
    """The former path: Message, ToolCall, Usage and ChatResponse constructed one by one."""
    choice = data["choices"][0]
    wire = choice["message"]
    calls = tuple(reference_call(i, w) for i, w in enumerate(wire.get("tool_calls") or ()))
    finish = FINISH_REASONS.get(choice.get("finish_reason") or "stop", "stop")
    if calls:
        finish = "tool_calls"
    usage = data.get("usage") or {}
    return ChatResponse(
        message=Message(role="assistant", content=_content(wire), tool_calls=calls),
        model=data.get("model") or model,
        finish_reason=finish,
        usage=Usage(
            prompt_tokens=usage.get("prompt_tokens") or 0,
            completion_tokens=usage.get("completion_tokens") or 0,
        ),
        latency_s=latency_s,
    )


TEXTS = ["", "Sure.", "é 🙂 <|im_end|> ctrl\x07", "line\nbreak", "\ud800 lone", "x" * 500]
ARGUMENTS = [
    '{"order_id": "#W1", "n": 3}',
    '{"nested": {"a": [1, 2.5, null, true]}, "k": "<|im_start|>"}',
    "{not json",
    "[1, 2]",
    "",
    None,
    {"already": "an object"},
    '{"big": 123456789012345678901234567890, "f": 1e308}',
]


def random_body(rng: random.Random) -> dict[str, Any]:
    message: dict[str, Any] = {"role": "assistant"}
    kind = rng.random()
    if kind < 0.3:
        message["content"] = rng.choice(TEXTS)
    elif kind < 0.4:
        message["content"] = [{"type": "text", "text": rng.choice(TEXTS)} for _ in range(2)]
    elif kind < 0.5:
        message["content"] = None
    if rng.random() < 0.5:
        message["tool_calls"] = [
            {
                **({"id": f"call_{rng.randint(0, 99)}"} if rng.random() < 0.8 else {}),
                "type": "function",
                "function": {"name": rng.choice(["get", "", "set_it"])}
                | ({"arguments": rng.choice(ARGUMENTS)} if rng.random() < 0.9 else {}),
            }
            for _ in range(rng.randint(0, 3))
        ]
    body: dict[str, Any] = {
        "choices": [
            {"message": message, "finish_reason": rng.choice([None, "stop", "length", "x"])}
        ]
    }
    if rng.random() < 0.7:
        body["model"] = rng.choice(["served-model", ""])
    if rng.random() < 0.8:
        body["usage"] = {"prompt_tokens": rng.randint(0, 9999)}
        if rng.random() < 0.7:
            body["usage"]["completion_tokens"] = rng.choice([None, rng.randint(0, 999)])
    return body


def fields_set(record: Any) -> Any:
    """Every nested record's set fields, to compare how records were built, not only values."""
    if isinstance(record, tuple):
        return [fields_set(r) for r in record]
    if not hasattr(record, "model_fields_set"):
        return None
    return {
        name: (sorted(record.model_fields_set), fields_set(getattr(record, name)))
        for name in type(record).model_fields
    }


def test_one_validation_equals_the_per_record_constructors():
    rng = random.Random(11)
    for index in range(400):
        body = json.loads(json.dumps(random_body(rng)))
        latency = rng.random()
        fast = parse_chat(body, "configured", latency)
        slow = reference_parse(body, "configured", latency)
        assert fast == slow, index
        assert fast.to_json() == slow.to_json()
        assert fields_set(fast) == fields_set(slow)
