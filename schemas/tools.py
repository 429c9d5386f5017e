"""Tool specs, tool calls and chat messages in the OpenAI/HF chat shape."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any, Literal

from pydantic import Field

from trajforge.schemas.base import Record
from trajforge.schemas.sanitize import SafeJson, SafeText

ToolKind = Literal["read", "write", "think", "transfer"]
Role = Literal["system", "user", "assistant", "tool"]
#: Who acted: the agent (the model being trained) or the simulated user, who in a dual-control
#: domain has tools of its own over state only it can change (generators/user_tools.py). A
#: user's tool call and its result are never the agent's: trainers drop or mask them.
Actor = Literal["agent", "user"]


def _by_agent(actor: str) -> bool:
    """The default actor is left out of the JSON, so every record written before dual-control
    keeps its bytes and its content id."""
    return actor == "agent"


def _actor_field():
    return Field(default="agent", exclude_if=_by_agent)


class ToolSpec(Record):
    name: str
    description: str
    parameters: dict[str, Any]  # JSON schema of the arguments object
    kind: ToolKind
    mutates_state: bool

    def openai_schema(self) -> dict[str, Any]:
        """The `tools=[...]` entry the OpenAI chat API expects."""
        return {
            "type": "function",
            "function": {
                "name": self.name,
                "description": self.description,
                "parameters": self.parameters,
            },
        }


class ToolCall(Record):
    """One call the model asked for. `arguments` is always a dict internally.

    When the model's text could not be parsed into a valid call (bad JSON, not an object), the
    call still exists so the rollout can answer it with an error observation: `parse_error`
    says what was wrong and `raw_arguments` keeps what the model wrote.
    """

    id: SafeText
    name: SafeText
    arguments: SafeJson = Field(default_factory=dict)
    parse_error: SafeText | None = None
    raw_arguments: SafeText | None = None
    actor: Actor = _actor_field()  # "user": a simulated user's call on its own tools

    @property
    def by_user(self) -> bool:
        return self.actor == "user"


class Message(Record):
    role: Role
    content: SafeText | None = None  # untrusted text passes the sanitisation boundary
    tool_calls: tuple[ToolCall, ...] = ()
    tool_call_id: str | None = None
    name: str | None = None
    #: "user": the simulated user's own tool traffic (its call, role "user", and the result,
    #: role "tool"), which the agent never sees and is never trained on.
    actor: Actor = _actor_field()

    @property
    def by_user_tools(self) -> bool:
        """A user tool call or its result (not a user's words, not the agent's traffic)."""
        return self.actor == "user"

    def openai_dict(self) -> dict[str, Any]:
        """OpenAI wire format (arguments as JSON strings); None keys dropped."""
        return self._with_calls({"role": self.role, "content": self.content}, _wire_arguments)

    def chat_dict(self) -> dict[str, Any]:
        """The shape chat templates take: arguments as dicts and only the keys this message
        has (`content` unless an assistant turn only calls tools). A None-valued key is not
        the same as none: Llama 3.x's templates test `'tool_calls' in message`."""
        out: dict[str, Any] = {"role": self.role}
        if self.content is not None or not self.tool_calls:
            out["content"] = self.content or ""
        return self._with_calls(out, lambda c: dict(c.arguments))

    def _with_calls(self, out: dict[str, Any], arguments: Callable[[ToolCall], Any]):
        if self.tool_calls:
            out["tool_calls"] = [
                {
                    "id": c.id,
                    "type": "function",
                    "function": {"name": c.name, "arguments": arguments(c)},
                }
                for c in self.tool_calls
            ]
        if self.tool_call_id is not None:
            out["tool_call_id"] = self.tool_call_id
        if self.name is not None:
            out["name"] = self.name
        if self.actor != "agent":  # the marker trainers drop or mask these messages by
            out["actor"] = self.actor
        return out


def _wire_arguments(call: ToolCall) -> str:
    """A call's arguments as the JSON text the model wrote: the raw text when it did not parse."""

    if call.parse_error is not None and call.raw_arguments is not None:
        return call.raw_arguments
    return json.dumps(call.arguments, sort_keys=True)
