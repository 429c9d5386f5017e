"""`training_message` hands back a message unchanged only when rebuilding it gives an equal one."""

from __future__ import annotations

import itertools
import random

import pytest

from trajforge.generators.prompts import STOP_TOKEN, strip_control_tokens, training_message
from trajforge.schemas import Message, ToolCall
from trajforge.schemas.sanitize import sanitize_text

CALL = ToolCall(id="c1", name="get_order", arguments={"order_id": "#W1"})


def _rebuilt(message: Message) -> Message | None:
    """The rule as written before the fast path: always a new message."""
    content = strip_control_tokens(message.content)
    if message.role == "user" and not content:
        return None
    return Message(
        role=message.role,
        content=content if content or not message.tool_calls else None,
        tool_calls=message.tool_calls,
        tool_call_id=message.tool_call_id,
    )


CONTENTS = [None, "", " ", "Thanks!", f"Bye {STOP_TOKEN}", " padded ", "<tool_call>x", STOP_TOKEN]


@pytest.mark.parametrize(
    ("role", "content", "calls", "name"),
    list(
        itertools.product(
            ["user", "assistant", "tool", "system"], CONTENTS, [(), (CALL,)], [None, "get_order"]
        )
    ),
)
def test_training_message_equals_the_rebuilt_message(role, content, calls, name) -> None:
    if role != "assistant" and calls:
        calls = ()
    message = Message(role=role, content=content, tool_calls=calls, name=name)
    assert training_message(message) == _rebuilt(message)


def test_the_sanitiser_is_idempotent_on_random_markup() -> None:
    """What the fast path relies on: a message's content was sanitised when it was built."""
    rng = random.Random(0)
    parts = ["<tool_call>", "</tools>", "<<SYS>>", "[INST]", "[/SYS]", "\x00", "\ud800", "<", ">"]
    parts += ["<<", "[", "]", "a", " ", "tool_call", "SYS", "INST", "‹", "›", "\x07", "/", "s"]
    for _ in range(20_000):
        text = "".join(rng.choice(parts) for _ in range(rng.randint(0, 8)))
        once = sanitize_text(text)
        assert sanitize_text(once) == once, text
