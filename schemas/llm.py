"""The LLM runtime's protocol: one async call from a typed request to a typed response.

Generators and verifiers depend on this protocol only; the backends (openai, local, scripted,
vllm) live in `trajforge.generators.llm` and are wired by the caller.
"""

from __future__ import annotations

from typing import Literal, Protocol, runtime_checkable

from pydantic import Field

from trajforge.schemas.base import Record, content_hash
from trajforge.schemas.tools import Message, ToolSpec


class SamplingParams(Record):
    temperature: float = Field(default=0.0, ge=0.0, le=2.0)
    top_p: float = Field(default=1.0, gt=0.0, le=1.0)
    max_tokens: int = Field(default=256, ge=1, le=32768)
    stop: tuple[str, ...] = ()


class ChatRequest(Record):
    model: str
    messages: tuple[Message, ...]
    tools: tuple[ToolSpec, ...] = ()
    sampling: SamplingParams = SamplingParams()
    seed: int | None = None
    response_format: Literal["text", "json_object"] = "text"

    def cache_key(self) -> str:
        """Canonical key: model, messages, tools, sampling params, seed, response format."""
        return content_hash(self.model_dump(mode="json"))


class Usage(Record):
    prompt_tokens: int = 0
    completion_tokens: int = 0


FinishReason = Literal["stop", "length", "tool_calls", "error"]


class ChatResponse(Record):
    message: Message  # role="assistant"; tool_calls parsed (possibly with parse_error)
    model: str
    finish_reason: FinishReason = "stop"
    usage: Usage = Usage()
    latency_s: float = 0.0
    cached: bool = False


class LLMError(RuntimeError):
    """The backend could not produce a response (after its retries). Message says why."""


@runtime_checkable
class LLMClient(Protocol):
    """Anything that turns a ChatRequest into a ChatResponse."""

    async def complete(self, request: ChatRequest) -> ChatResponse: ...
