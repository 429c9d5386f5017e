"""Agent policies: the side of a rollout that calls tools.

`LLMAgent` is the teacher: an LLM with the domain's tools, prompted by the conversation (whose
system message is the domain policy). `OracleAgent` replays a task's gold plan as tool calls and
then states the expected outputs: reference trajectories that must replay to the gold hash, and a
dependable agent for testing the loop. Neither ever sees anything but the conversation and tools;
only the oracle is built from the task (by design, it is the answer key).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

from trajforge.generators.user import response_cost
from trajforge.schemas import (
    ChatRequest,
    Cost,
    GoldAction,
    LLMClient,
    Message,
    SamplingParams,
    Task,
    ToolCall,
    ToolSpec,
)


@dataclass(frozen=True)
class SampledTokens:
    """The exact token ids a model sampled for one turn, with each token's log-probability.

    A trainer (on-policy distillation) needs the tokens the policy really produced, not a
    re-encoding of the decoded text, which can tokenize differently; the log-probabilities are
    those of the sampling policy (`log p_old`), one per token.
    """

    token_ids: tuple[int, ...]
    logprobs: tuple[float, ...]

    def __post_init__(self) -> None:
        if len(self.token_ids) != len(self.logprobs):
            raise ValueError(
                f"SampledTokens: {len(self.token_ids)} token_ids but {len(self.logprobs)} "
                "logprobs; give one log-probability per sampled token"
            )


@dataclass(frozen=True)
class AgentTurn:
    """One agent message (text and/or tool calls), what producing it cost, and optionally the
    sampled tokens behind it (policies that sample token by token, for trainers)."""

    message: Message  # role="assistant"
    cost: Cost = Cost()
    sampled: SampledTokens | None = None


class AgentPolicy(Protocol):
    """Given the conversation so far (system prompt first) and the tools, say or call next."""

    async def act(
        self, messages: Sequence[Message], tools: Sequence[ToolSpec], seed: int
    ) -> AgentTurn: ...


class LLMAgent:
    """Teacher agent: one LLM call per act, tools offered, tool calls parsed by the backend."""

    def __init__(self, llm: LLMClient, model: str, sampling: SamplingParams | None = None):
        self._llm = llm
        self._model = model
        self._sampling = sampling or SamplingParams(temperature=0.0, max_tokens=512)

    async def act(
        self, messages: Sequence[Message], tools: Sequence[ToolSpec], seed: int
    ) -> AgentTurn:
        request = ChatRequest(
            model=self._model,
            messages=tuple(messages),
            tools=tuple(tools),
            sampling=self._sampling,
            seed=seed,
        )
        response = await self._llm.complete(request)
        message = response.message
        if message.role != "assistant":
            message = message.model_copy(update={"role": "assistant"})
        return AgentTurn(message=message, cost=response_cost(response))


def oracle_closing(task: Task, reports: Sequence[str] = ()) -> str:
    """The oracle's final message: what each write did, every expected output, the done phrase."""
    outputs = "; ".join(task.expected_outputs)
    facts = f"Here is what you asked for: {outputs}. " if outputs else ""
    done = "".join(f"{r} " for r in reports)
    return (
        f"{done}{facts}Your request has been completed. Is there anything else I can help you with?"
    )


def write_report(name: str, arguments: dict[str, object], observation: str) -> str:
    """One sentence telling the user what a write did, built from its arguments and result."""
    details = _details(arguments)
    status = ""
    try:
        result = json.loads(observation)
    except ValueError:
        result = None
    if isinstance(result, dict) and isinstance(result.get("status"), str):
        status = f"; its status is now {result['status']}"
    return f"I have completed the {name.replace('_', ' ')} ({details}){status}."


def _oracle_reports(messages: Sequence[Message], tools: Sequence[ToolSpec]) -> list[str]:
    writes = {t.name for t in tools if t.mutates_state}
    calls = {c.id: c for m in messages if m.role == "assistant" for c in m.tool_calls}
    return [
        write_report(calls[m.tool_call_id].name, calls[m.tool_call_id].arguments, m.content or "")
        for m in messages
        if m.role == "tool"
        and m.tool_call_id in calls
        and calls[m.tool_call_id].name in writes
        and not (m.content or "").startswith("Error")
    ]


def confirmation_prompt(action: GoldAction) -> str:
    """The oracle's request for a yes before a write: the action and every argument, in words."""
    details = _details(action.arguments)
    return f"To confirm, I will {action.name.replace('_', ' ')} ({details}). Shall I go ahead (yes/no)?"


def _details(arguments: dict[str, object]) -> str:
    """`key value, ...` in words, leaving out empty values (no "address2 ," in customer text)."""
    words = ((k.replace("_", " "), spoken(v)) for k, v in sorted(arguments.items()))
    return ", ".join(f"{k} {v}" for k, v in words if v.strip())


def spoken(value: object) -> str:
    """A JSON-like value in words: dicts as `key value`, lists joined with "and"."""
    if isinstance(value, dict):
        return ", ".join(f"{k.replace('_', ' ')} {spoken(v)}" for k, v in sorted(value.items()))
    if isinstance(value, list | tuple):
        return " and ".join(spoken(v) for v in value)
    return str(value)


def _just_confirmed(messages: Sequence[Message]) -> bool:
    texts = [m for m in messages if m.content and m.role in ("user", "assistant")]
    return (
        len(texts) >= 2
        and texts[-1].role == "user"
        and texts[-2].role == "assistant"
        and ((texts[-2].content or "").startswith("To confirm"))
        and messages[-1].role == "user"
    )


class OracleAgent:
    """Executes the task's gold actions in order (one call per act), then reports and closes.

    Before each write it asks for a yes with the action's details (the policy every domain's
    rules check), so oracle trajectories are references the policy filter keeps.
    """

    def __init__(self, task: Task):
        self._task = task

    async def act(
        self, messages: Sequence[Message], tools: Sequence[ToolSpec], seed: int
    ) -> AgentTurn:
        issued = sum(len(m.tool_calls) for m in messages if m.role == "assistant")
        gold = self._task.gold_actions
        if issued < len(gold):
            action = gold[issued]
            if _writes(action, tools) and not _just_confirmed(messages):
                return AgentTurn(Message(role="assistant", content=confirmation_prompt(action)))
            call = ToolCall(id=f"call_{issued}", name=action.name, arguments=action.arguments)
            return AgentTurn(Message(role="assistant", content=None, tool_calls=(call,)))
        closing = oracle_closing(self._task, _oracle_reports(messages, tools))
        return AgentTurn(Message(role="assistant", content=closing))


def _writes(action: GoldAction, tools: Sequence[ToolSpec]) -> bool:
    return any(t.name == action.name and t.mutates_state for t in tools)
