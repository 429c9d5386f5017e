"""Named responders for the scripted backend, so a config can select one by name.

One frozen table, explicit entries: `backend: {kind: scripted, responder: NAME}`.
"""

from __future__ import annotations

from types import MappingProxyType

from schemas import ChatRequest


def echo_last_user(request: ChatRequest) -> str:
    """Reply with the last user message's text (a trivial, deterministic responder)."""
    for message in reversed(request.messages):
        if message.role == "user" and message.content:
            return message.content
    return ""


RESPONDERS = MappingProxyType(
    {
        "echo": echo_last_user,
    }
)
