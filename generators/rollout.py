"""The interactive rollout loop: a simulated user and an agent over a domain's live state.

The user speaks first; the agent then acts until it answers in text (each tool call executed
through the domain's toolbox, the one error boundary, so a malformed call becomes an "Error: ..."
observation and the conversation continues); then the user replies. The loop ends on a user stop
token, an agent transfer, `max_turns`, `max_steps`, or an agent that repeatedly says nothing.
`LLMError` is never caught here: the pipeline dead-letters it with its traceback. A user that
stays out of role after its retry is refused with `Rejected("role_confusion")`.

An optional `RolloutObserver` sees every message the moment it joins the conversation, with the
agent's `AgentTurn` for assistant messages (and so its sampled tokens, when the policy has
them): a trainer records the turns of a rollout without re-implementing this loop.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Protocol

from pydantic import BaseModel

from trajforge.generators.agent import AgentPolicy, AgentTurn
from trajforge.generators.domain_options import options_of
from trajforge.generators.prompts import TRANSFER_TOKEN, agent_system_prompt
from trajforge.generators.replays import gold_calls, live_world, recorded, remember_final
from trajforge.generators.tooling import Domain, LiveDump, ToolExecution
from trajforge.generators.user import UserSimulator
from trajforge.generators.user_tools import (
    MAX_USER_TOOL_ROUNDS,
    UserTools,
    agent_view,
    user_call_message,
)
from trajforge.schemas import (
    Actor,
    Cost,
    Message,
    Provenance,
    Rejected,
    StepRecord,
    Task,
    TerminationReason,
    ToolCall,
    Trajectory,
    derive_seed,
)

#: Consecutive empty agent outputs (no text, no tool call) before the rollout gives up.
MAX_EMPTY_AGENT_OUTPUTS = 2


class RolloutObserver(Protocol):
    """Told of each message appended to the conversation, in order (system prompt first).

    `turn` is the agent's turn for assistant messages (the message may differ from
    `turn.message` only by the tool-call ids the loop made unique), None for the others.
    Empty agent outputs that the loop discards are never reported.
    """

    def on_message(self, message: Message, turn: AgentTurn | None) -> None: ...


@dataclass
class _Run:
    """Mutable state of one rollout in progress (local to a single `run_rollout` call)."""

    task: Task
    domain: Domain
    state: BaseModel
    seed: int
    messages: list[Message]
    steps: list[StepRecord] = field(default_factory=list)
    cost: Cost = Cost()
    turn: int = 0
    call_ids: set[str] = field(default_factory=set)
    observer: RolloutObserver | None = None
    #: The live state's current dump, shared by consecutive writes and the final hash.
    live: LiveDump = field(default_factory=LiveDump)
    #: Dual control: the simulated user's own tools (None: it has none), its executions,
    #: and every call that ran on the world, both actors', in order (what replays run).
    user_tools: UserTools | None = None
    user_steps: list[StepRecord] = field(default_factory=list)
    world_calls: list[ToolCall] = field(default_factory=list)

    def append(self, message: Message, turn: AgentTurn | None = None) -> None:
        """Add a message to the conversation and tell the observer, if any."""
        self.messages.append(message)
        if self.observer is not None:
            self.observer.on_message(message, turn)

    def llm_seed(self, role: str, *extra: object) -> int:
        return derive_seed(self.task.id, "rollout", self.seed, self.turn, role, *extra)

    def visible_conversation(self) -> list[Message]:
        return visible_conversation(self.messages)

    def agent_conversation(self) -> tuple[Message, ...]:
        """What the agent sees: everything but the user's own tool traffic."""
        if self.user_tools is None:
            return tuple(self.messages)
        return tuple(agent_view(self.messages))


def visible_conversation(messages: Sequence[Message]) -> list[Message]:
    """What the user sees: user messages and the agent's text, never the agent's tool
    traffic (its own tool calls and their results, in a dual-control domain, it does)."""
    return [
        m if m.by_user_tools else Message(role=m.role, content=m.content)
        for m in messages
        if m.by_user_tools or (m.role in ("user", "assistant") and m.content)
    ]


async def run_rollout(
    task: Task,
    domain: Domain,
    agent: AgentPolicy,
    user: UserSimulator,
    *,
    max_turns: int = 30,
    max_steps: int = 60,
    seed: int,
    provenance: Provenance,
    observer: RolloutObserver | None = None,
) -> Trajectory:
    """Run one conversation to a termination and return it as a Trajectory (mode "rollout")."""
    state, live = live_world(domain, task.initial_state, _known_initial_hash(domain, task))
    run = _Run(
        task=task,
        domain=domain,
        state=state,
        seed=seed,
        messages=[],
        observer=observer,
        live=live,
        user_tools=options_of(domain).user_tools,
    )
    run.append(
        Message(role="system", content=agent_system_prompt(domain.policy, domain.vocabulary))
    )
    termination = await _converse(run, agent, user, max_turns=max_turns, max_steps=max_steps)
    final_hash = run.live.state_hash(run.state)
    # The outcome check replays exactly these calls on a fresh state: it reads this instead.
    remember_final(domain, task.initial_state, run.world_calls, final_hash)
    return Trajectory.create(
        task=task,
        mode="rollout",
        messages=tuple(run.messages),
        steps=tuple(run.steps),
        termination=termination,
        final_state_hash=final_hash,
        cost=run.cost,
        provenance=provenance,
        user_steps=tuple(run.user_steps),
    )


def _known_initial_hash(domain: Domain, task: Task) -> str | None:
    """The task's initial state hash, when this process replayed its gold plan (synthesis and
    verification do, with a hash before the first call): a rollout that never ran a write
    ends on it without dumping the whole world. Only read here, never sent to the agent."""
    entry = recorded(domain, task.initial_state, gold_calls(task.gold_actions))
    return entry.hashes[0] if entry is not None and entry.hashes else None


async def _converse(
    run: _Run, agent: AgentPolicy, user: UserSimulator, *, max_turns: int, max_steps: int
) -> TerminationReason:
    while True:
        stop = await _user_speaks(run, user)
        if stop is not None:
            return stop
        ended = await _agent_acts(run, agent, max_steps=max_steps)
        if ended is not None:
            return ended
        run.turn += 1
        if run.turn >= max_turns:
            return "max_turns"


async def _user_speaks(run: _Run, user: UserSimulator) -> TerminationReason | None:
    """The user's next turn; in a dual-control domain first any calls it makes on its own
    tools (each round's results shown to it before it speaks again)."""
    for round_ in range(MAX_USER_TOOL_ROUNDS + 1):
        seed = run.llm_seed("user", *([round_] if round_ else []))  # round 0: as before
        turn = await user.reply(run.visible_conversation(), seed)
        run.cost = run.cost + turn.cost
        if not turn.message.by_user_tools:
            break
        if run.user_tools is None or round_ == MAX_USER_TOOL_ROUNDS:
            raise Rejected(
                "role_confusion",
                f"task {run.task.id} turn {run.turn}: the user called tools "
                + ("it does not have" if run.user_tools is None else "without ever speaking"),
            )
        _user_acts(run, turn.message)
    if turn.role_confused:
        raise Rejected(
            "role_confusion",
            f"task {run.task.id} turn {run.turn}: user sounded like the agent after a reminder: "
            f"{(turn.message.content or '')[:200]!r}",
        )
    run.append(turn.message)
    return turn.stop


async def _agent_acts(run: _Run, agent: AgentPolicy, *, max_steps: int) -> TerminationReason | None:
    """Let the agent call tools until it answers in text; a termination if the rollout ends."""
    empty = 0
    attempt = 0
    while True:
        if len(run.steps) >= max_steps:
            return "max_steps"
        turn = await agent.act(
            run.agent_conversation(), run.domain.toolbox.specs, run.llm_seed("agent", attempt)
        )
        attempt += 1
        run.cost = run.cost + turn.cost
        message = _with_unique_call_ids(turn.message, run)
        if not message.tool_calls and not (message.content or "").strip():
            empty += 1
            if empty >= MAX_EMPTY_AGENT_OUTPUTS:
                return "agent_error"
            continue
        empty = 0
        message, dropped = _within_step_limit(message, max_steps - len(run.steps))
        run.append(message, turn)
        if not message.tool_calls:
            return "transfer" if TRANSFER_TOKEN in (message.content or "") else None
        if _execute_calls(run, message.tool_calls, max_steps=max_steps, dropped=dropped):
            return "transfer"


def _user_acts(run: _Run, message: Message) -> None:
    """Run the user's calls on its own tools (marked as the user's, never the agent's)."""
    assert run.user_tools is not None
    messages, steps = user_acts(
        message,
        run.user_tools,
        lambda call: run.live.execute(run.user_tools.toolbox, run.state, call),  # type: ignore[union-attr]
        len(run.user_steps),
        run.turn,
    )
    for m in messages:
        run.append(m)
    run.user_steps.extend(steps)
    run.world_calls.extend(s.call for s in steps)


def user_acts(
    message: Message,
    user_tools: UserTools,
    execute: Callable[[ToolCall], ToolExecution],
    first_index: int,
    turn: int,
) -> tuple[list[Message], list[StepRecord]]:
    """A user turn of calls on its own tools, run by `execute`: the marked call message, each
    result (actor "user") and each step record, indexed from `first_index` (the user's own
    count). Shared by the rollout loop and the training environments."""
    calls = tuple(
        c.model_copy(update={"actor": "user", "id": f"user_call_{first_index + i}"})
        for i, c in enumerate(message.tool_calls)
    )
    messages, steps = [user_call_message(calls)], []
    for call in calls:
        execution = execute(call)
        messages.append(tool_message(call, execution.observation, actor="user"))
        steps.append(step_record(first_index + len(steps), turn, call, execution))
    return messages, steps


def _within_step_limit(message: Message, room: int) -> tuple[Message, int]:
    """The turn's calls that can run plus the first one that cannot (answered with one
    step-limit error), and how many more were dropped: 500 calls in one turn stored 494
    identical "step limit" messages (issue 28); the rollout ends at the limit either way."""
    calls = message.tool_calls
    keep = max(room, 0) + 1
    if len(calls) <= keep:
        return message, 0
    return message.model_copy(update={"tool_calls": calls[:keep]}), len(calls) - keep


def _execute_calls(
    run: _Run, calls: Sequence[ToolCall], *, max_steps: int, dropped: int = 0
) -> bool:
    """Execute each call on the live state; True if a transfer tool succeeded.

    Every call gets its tool message (so the conversation stays a valid tool-use exchange),
    even past `max_steps`: that one is answered with an error and not executed (and says how
    many further calls of the turn were dropped, `_within_step_limit`).
    """
    transferred = False
    for call in calls:
        if len(run.steps) >= max_steps:
            more = f" ({dropped} further calls of this turn dropped)" if dropped else ""
            run.append(tool_message(call, f"Error: step limit reached; call not run{more}"))
            continue
        execution = run.live.execute(run.domain.toolbox, run.state, call)
        run.append(tool_message(call, execution.observation))
        run.steps.append(step_record(len(run.steps), run.turn, call, execution))
        run.world_calls.append(call)
        spec = run.domain.toolbox.spec(call.name)
        transferred |= execution.error is None and spec is not None and spec.kind == "transfer"
    return transferred


def tool_message(call: ToolCall, content: str, actor: Actor = "agent") -> Message:
    """The tool message that answers `call` in the conversation (`actor`: whose call it was)."""
    return Message(role="tool", content=content, tool_call_id=call.id, name=call.name, actor=actor)


def step_record(index: int, turn: int, call: ToolCall, execution: ToolExecution) -> StepRecord:
    """The record of one executed call (result or error, state diff), as every loop keeps it."""
    return StepRecord(
        index=index,
        turn=turn,
        call=call,
        result=None if execution.error else execution.observation,
        error=execution.observation if execution.error else None,
        state_diff=execution.diff,
        mutating=execution.mutating,
    )


def _with_unique_call_ids(message: Message, run: _Run) -> Message:
    """Give every tool call an id unique in the trajectory (models omit or repeat them)."""
    if not message.tool_calls:
        return message
    calls = []
    for call in message.tool_calls:
        call_id = call.id
        if not call_id or call_id in run.call_ids:
            call_id = f"call_{len(run.call_ids)}"
            while call_id in run.call_ids:
                call_id += "_"
            call = call.model_copy(update={"id": call_id})
        run.call_ids.add(call_id)
        calls.append(call)
    return message.model_copy(update={"tool_calls": tuple(calls), "role": "assistant"})
