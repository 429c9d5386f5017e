"""Agent policies: the side of a rollout that calls tools.

`LLMAgent` is the teacher: an LLM with the domain's tools, prompted by the conversation (whose
system message is the domain policy). `OracleAgent` replays a task's gold plan as tool calls and
then states the expected outputs: reference trajectories that must replay to the gold hash, and a
dependable agent for testing the loop. Neither ever sees anything but the conversation and tools;
only the oracle is built from the task (by design, it is the answer key).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

from trajforge.generators.user import response_cost
from trajforge.schemas import (
    ChatRequest,
    Cost,
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


def oracle_closing(task: Task) -> str:
    """The oracle's final message: every expected output, then the done phrase."""
    outputs = "; ".join(task.expected_outputs)
    facts = f"Here is what you asked for: {outputs}. " if outputs else ""
    return f"{facts}Your request has been completed. Is there anything else I can help you with?"


class OracleAgent:
    """Executes the task's gold actions in order (one call per act), then reports and closes."""

    def __init__(self, task: Task):
        self._task = task

    async def act(
        self, messages: Sequence[Message], tools: Sequence[ToolSpec], seed: int
    ) -> AgentTurn:
        issued = sum(len(m.tool_calls) for m in messages if m.role == "assistant")
        gold = self._task.gold_actions
        if issued < len(gold):
            action = gold[issued]
            call = ToolCall(id=f"call_{issued}", name=action.name, arguments=action.arguments)
            return AgentTurn(Message(role="assistant", content=None, tool_calls=(call,)))
        return AgentTurn(Message(role="assistant", content=oracle_closing(self._task)))
