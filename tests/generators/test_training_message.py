"""`training_message` hands back a message unchanged only when rebuilding it gives an equal one."""

from __future__ import annotations

import itertools
import random

import pytest

from trajforge.generators.prompts import (
    STOP_TOKEN,
    strip_control_tokens,
    template_call_id,
    training_message,
)
from trajforge.schemas import Message, ToolCall
from trajforge.schemas.sanitize import sanitize_text

CALL = ToolCall(id="c1", name="get_order", arguments={"order_id": "#W1"})
READY = ToolCall(id="a1b2c3d4e", name="get_order", arguments={"order_id": "#W1"})


def _rebuilt(message: Message) -> Message | None:
    """The rule as written before the fast path: always a new message."""
    content = strip_control_tokens(message.content)
    if message.role == "user" and not content:
        return None
    return Message(
        role=message.role,
        content=content if content or not message.tool_calls else None,
        tool_calls=tuple(
            ToolCall(id=template_call_id(c.id), name=c.name, arguments=c.arguments)
            for c in message.tool_calls
        ),
        tool_call_id=template_call_id(message.tool_call_id),
        name=message.name,
    )


CONTENTS = [None, "", " ", "Thanks!", f"Bye {STOP_TOKEN}", " padded ", "<tool_call>x", STOP_TOKEN]


@pytest.mark.parametrize(
    ("role", "content", "calls", "name"),
    list(
        itertools.product(
            ["user", "assistant", "tool", "system"],
            CONTENTS,
            [(), (CALL,), (READY,)],
            [None, "get_order"],
        )
    ),
)
def test_training_message_equals_the_rebuilt_message(role, content, calls, name) -> None:
    if role != "assistant" and calls:
        calls = ()
    call_id = "c1" if role == "tool" else None
    message = Message(role=role, content=content, tool_calls=calls, name=name, tool_call_id=call_id)
    assert training_message(message) == _rebuilt(message)


def test_template_call_ids_are_what_every_template_takes() -> None:
    """Mistral's templates raise unless an id is 9 alphanumeric characters; the mapping keeps
    such ids, is the same for a call and its result, and applied twice changes nothing."""
    for raw in ("c1", "call_0", "call_abc123xyz789", "", "a1b2c3d4e"):
        once = template_call_id(raw)
        assert len(once) == 9 and once.isalnum() and template_call_id(once) == once
    assert template_call_id("a1b2c3d4e") == "a1b2c3d4e" and template_call_id(None) is None
    assert len({template_call_id(f"call_{i}") for i in range(1000)}) == 1000


def test_the_sanitiser_is_idempotent_on_random_markup() -> None:
    """What the fast path relies on: a message's content was sanitised when it was built."""
    rng = random.Random(0)
    parts = ["<tool_call>", "</tools>", "<<SYS>>", "[INST]", "[/SYS]", "\x00", "\ud800", "<", ">"]
    parts += ["<<", "[", "]", "a", " ", "tool_call", "SYS", "INST", "‹", "›", "\x07", "/", "s"]
    for _ in range(20_000):
        text = "".join(rng.choice(parts) for _ in range(rng.randint(0, 8)))
        once = sanitize_text(text)
        assert sanitize_text(once) == once, text
