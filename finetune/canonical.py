"""Canonical chat messages: the exact dicts a pinned chat template is given.

Why one place: templates disagree on what they accept (Llama 3.1 raises on two calls in one
turn, Hermes and Llama drop text written next to a call, `'tool_calls' in message` is true even
for an empty list), and text from users and tools must never smuggle a control token such as
`<|im_end|>` into the render, where it would end a turn the model never ended.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from trajforge.finetune.families import TemplateFamily
from trajforge.schemas import Message, ToolCall

#: Inserted after a control token's first character so the tokenizer no longer matches it.
_BREAK = "\u200b"


def sanitise(text: str, family: TemplateFamily) -> str:
    """`text` with every control token of the family broken up (still readable)."""
    for token in family.control_tokens:
        if token in text:
            text = text.replace(token, token[0] + _BREAK + token[1:])
    return text


def _call_dict(call: ToolCall) -> dict[str, Any]:
    return {
        "id": call.id,
        "type": "function",
        "function": {"name": call.name, "arguments": dict(call.arguments)},
    }


def _message_dict(message: Message, family: TemplateFamily) -> dict[str, Any]:
    """One message as a template input: None keys and empty call lists dropped."""
    out: dict[str, Any] = {"role": message.role}
    content = message.content
    if message.role in ("system", "user", "tool"):
        content = sanitise(content or "", family)
    if content is not None or not message.tool_calls:
        out["content"] = content or ""
    if message.tool_calls:
        out["tool_calls"] = [_call_dict(c) for c in message.tool_calls]
    if message.tool_call_id is not None:
        out["tool_call_id"] = message.tool_call_id
    if message.name is not None:
        out["name"] = message.name
    return out


def _split_turn(message: Message, tools_after: list[Message], family: TemplateFamily):
    """An assistant turn the template cannot take whole, as several turns it can."""
    turns: list[Message] = []
    calls = list(message.tool_calls)
    if message.content and not family.content_with_calls:
        turns.append(Message(role="assistant", content=message.content))
        message = message.model_copy(update={"content": None})
    if not family.one_call_per_turn or len(calls) <= 1:
        return [*turns, message, *tools_after]
    by_id = {m.tool_call_id: m for m in tools_after}
    for i, call in enumerate(calls):
        turns.append(
            Message(
                role="assistant", content=message.content if i == 0 else None, tool_calls=(call,)
            )
        )
        if call.id in by_id:
            turns.append(by_id.pop(call.id))
    return [*turns, *(m for m in tools_after if m.tool_call_id in by_id)]


def _family_shaped(messages: Sequence[Message], family: TemplateFamily) -> list[Message]:
    out: list[Message] = []
    i = 0
    while i < len(messages):
        message = messages[i]
        j = i + 1
        if message.role == "assistant" and message.tool_calls:
            while j < len(messages) and messages[j].role == "tool":
                j += 1
            out.extend(_split_turn(message, list(messages[i + 1 : j]), family))
        else:
            out.append(message)
        i = j
    return out


def canonical_messages(messages: Sequence[Message], family: TemplateFamily) -> list[dict[str, Any]]:
    """Messages as the family's template takes them: arguments as dicts, tool content as
    strings, None keys dropped, control tokens sanitised, turns split where the family needs.
    A simulated user's own tool traffic (dual control, `Message.actor == "user"`) is dropped:
    the agent never saw it, so it is neither context nor trained tokens."""
    agent_side = [m for m in messages if not m.by_user_tools]
    return [_message_dict(m, family) for m in _family_shaped(agent_side, family)]
