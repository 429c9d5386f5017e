"""Deterministic backend for tests and offline dry runs: a real LLMClient, no network, no model.

Two ways to script it:
- a sequence of replies (str for text, Message for tool calls), served in order;
- a responder function `ChatRequest -> str | Message`, for replies that depend on the request.
Both are deterministic, so builds on `scripted` are reproducible byte for byte.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence

from trajforge.schemas import ChatRequest, ChatResponse, LLMError, Message, Usage

Reply = str | Message
Responder = Callable[[ChatRequest], Reply]


class ScriptedLLM:
    def __init__(
        self,
        replies: Sequence[Reply] | None = None,
        responder: Responder | None = None,
        model: str = "scripted",
    ):
        if (replies is None) == (responder is None):
            raise ValueError("ScriptedLLM needs exactly one of `replies` or `responder`")
        self._replies = list(replies) if replies is not None else None
        self._responder = responder
        self._next = 0
        self._lock = threading.Lock()
        self.model = model
        self.requests: list[ChatRequest] = []  # every request seen, in order

    async def complete(self, request: ChatRequest) -> ChatResponse:
        with self._lock:
            self.requests.append(request)
            if self._replies is not None:
                if self._next >= len(self._replies):
                    raise LLMError(f"scripted backend ran out of replies after {self._next}")
                reply = self._replies[self._next]
                self._next += 1
            else:
                reply = None
        if reply is None:
            assert self._responder is not None
            reply = self._responder(request)
        message = reply if isinstance(reply, Message) else Message(role="assistant", content=reply)
        prompt_tokens = sum(len((m.content or "").split()) for m in request.messages)
        completion_tokens = len((message.content or "").split()) + 8 * len(message.tool_calls)
        return ChatResponse(
            message=message,
            model=self.model,
            finish_reason="tool_calls" if message.tool_calls else "stop",
            usage=Usage(prompt_tokens=prompt_tokens, completion_tokens=completion_tokens),
        )
