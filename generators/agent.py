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
from typing import Any, Protocol

from trajforge.generators.agent_voice import (
    closing,
    confirm_prompt,
    task_answers,
    user_name,
    write_report,
)
from trajforge.generators.domain_options import options_of
from trajforge.generators.domains import DOMAINS
from trajforge.generators.phrasing import NO_PHRASING, Phrasing
from trajforge.generators.user import asks_confirmation, response_cost
from trajforge.generators.user_tools import UserTools
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


def oracle_closing(
    task: Task,
    reports: Sequence[str] = (),
    results: Sequence[tuple[str, dict[str, Any], str]] = (),
    phrasing: Phrasing = NO_PHRASING,
) -> str:
    """The oracle's final message: what each write did, each expected output in a sentence
    about what its sub-goal's calls showed (`results`: tool name, arguments and observation
    per call), the offer of further help. Phrasing varies with the task id and follows the
    domain's table (`agent_voice`, `phrasing`)."""
    answers = task_answers(task, results, phrasing)
    return closing([*reports, *answers], task.id, name=user_name(dict(task.scenario.known_info)))


def _oracle_results(messages: Sequence[Message], tools: Sequence[ToolSpec]):
    """(call, observation, is a successful write) for each tool result in the conversation."""
    writes = {t.name for t in tools if t.mutates_state}
    calls = {c.id: c for m in messages if m.role == "assistant" for c in m.tool_calls}
    for m in messages:
        if m.role == "tool" and m.tool_call_id in calls:
            call = calls[m.tool_call_id]
            ok = call.name in writes and not (m.content or "").startswith("Error")
            yield call, m.content or "", ok


def _final_message(
    task: Task, messages: Sequence[Message], tools: Sequence[ToolSpec], phrasing: Phrasing
) -> str:
    results = list(_oracle_results(messages, tools))
    seen = [text for _, text, _ in results]
    reports = [
        write_report(
            call.name, call.arguments, text, task.id, i, phrasing=phrasing, observations=seen[:i]
        )
        for i, (call, text, ok) in enumerate(results)
        if ok
    ]
    made = [(c.name, c.arguments, text) for c, text, _ in results]
    return oracle_closing(task, reports, made, phrasing)


def _just_confirmed(messages: Sequence[Message]) -> bool:
    """The user's last turn answers the agent's confirmation prompt."""
    texts = [m for m in messages if m.content and m.role in ("user", "assistant")]
    return (
        len(texts) >= 2
        and texts[-1].role == "user"
        and texts[-2].role == "assistant"
        and asks_confirmation(texts[-2].content or "")
        and messages[-1].role == "user"
    )


class OracleAgent:
    """Executes the task's gold actions in order (one call per act), then reports and closes.

    Before each write it asks for a yes with the action's details (the policy every domain's
    rules check), so oracle trajectories are references the policy filter keeps.
    """

    def __init__(
        self, task: Task, phrasing: Phrasing | None = None, user_tools: UserTools | None = None
    ):
        self._task = task
        self._phrasing = _domain_phrasing(task.domain) if phrasing is None else phrasing
        if user_tools is None and any(a.actor == "user" for a in task.gold_actions):
            user_tools = options_of(DOMAINS.get(task.domain)).user_tools
        self._user_tools = user_tools

    async def act(
        self, messages: Sequence[Message], tools: Sequence[ToolSpec], seed: int
    ) -> AgentTurn:
        issued = sum(len(m.tool_calls) for m in messages if m.role == "assistant")
        gold = self._task.gold_actions
        done = _gold_done(gold, issued, messages, self._user_tools)
        if done < len(gold) and gold[done].actor == "user":
            if self._user_tools is None:  # _gold_done stops at it only without words for it
                raise ValueError(
                    f"task {self._task.id}: its gold plan has user actions but the oracle has "
                    "no user_tools; build it with oracle_for(task, domain)"
                )
            return AgentTurn(
                Message(role="assistant", content=self._user_tools.instruction(gold[done]))
            )
        if done < len(gold):
            action = gold[done]
            ask = _ask_first(self._task, action, messages) if self._user_tools else None
            if ask is not None:  # dual control: the caller's details asked for, not known
                return AgentTurn(Message(role="assistant", content=ask))
            if _writes(action, tools) and not _just_confirmed(messages):
                seen = [m.content or "" for m in messages if m.role == "tool"]
                prompt = confirm_prompt(
                    action.name,
                    action.arguments,
                    self._task.id,
                    issued,
                    phrasing=self._phrasing,
                    observations=seen,
                )
                return AgentTurn(Message(role="assistant", content=prompt))
            call = ToolCall(id=f"call_{issued}", name=action.name, arguments=action.arguments)
            return AgentTurn(Message(role="assistant", content=None, tool_calls=(call,)))
        final = _final_message(self._task, messages, tools, self._phrasing)
        return AgentTurn(Message(role="assistant", content=final))


def _ask_first(task: Task, action: GoldAction, messages: Sequence[Message]) -> str | None:
    """A question for the known info `action` uses that the user has not said yet (the
    answer-before-evidence filter refuses an id the agent could not have known). Only the
    dual-control oracle asks: the others' references are pinned by their tests."""
    said = " ".join(m.content or "" for m in messages if m.role == "user")
    values = {str(v) for v in action.arguments.values()}
    for label, value in task.scenario.known_info.items():
        if value in values and value not in said:
            return f"Could you tell me your {label}?"
    return None


def _gold_done(
    gold: Sequence[GoldAction],
    issued: int,
    messages: Sequence[Message],
    user_tools: UserTools | None,
) -> int:
    """How many gold actions the oracle has taken: its calls, and (dual control) the user
    actions it has asked for, in plan order (it never sees the user's calls, only its words)."""
    said = {m.content for m in messages if m.role == "assistant" and m.content}
    done = calls = 0
    for action in gold:
        if action.actor == "user":
            if user_tools is None or user_tools.instruction(action) not in said:
                break
        elif calls < issued:
            calls += 1
        else:
            break
        done += 1
    return done


def oracle_for(task: Task, domain: Any) -> OracleAgent:
    """The oracle for `task` in `domain`, speaking with that domain's phrasing table (a plugin
    domain's too: the name alone only finds the built-in ones) and asking its user to act
    with its user tools' words (dual control)."""
    options = options_of(domain)
    return OracleAgent(task, options.phrasing, options.user_tools)


def _domain_phrasing(name: str) -> Phrasing:
    """The phrasing table the named domain declares (generic for a plugin domain or one
    without a table)."""
    return options_of(DOMAINS.get(name)).phrasing


def _writes(action: GoldAction, tools: Sequence[ToolSpec]) -> bool:
    return any(t.name == action.name and t.mutates_state for t in tools)
