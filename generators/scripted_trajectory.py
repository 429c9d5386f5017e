"""A trajectory from a written script of turns, every tool call executed for real.

Unit tests and corruption benchmarks need trajectories that differ from a good one in exactly
one planted way (a read dropped, a citation swapped, a user turn that leaks the answer). Writing
them as a script keeps each case readable, and executing every call through the domain's
toolbox keeps them honest: results, errors, state diffs and the final hash are what the tools
really produce, so only the planted fault can make the gate refuse them.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from trajforge.generators.prompts import agent_system_prompt
from trajforge.generators.rollout import step_record, tool_message
from trajforge.generators.tooling import Domain, state_hash
from trajforge.schemas import Message, Provenance, StepRecord, Task, ToolCall, Trajectory

PROVENANCE = Provenance(models={"agent": "script"}, seeds={})


@dataclass(frozen=True)
class User:
    """A user turn."""

    text: str


@dataclass(frozen=True)
class Say:
    """An agent turn with text only."""

    text: str


@dataclass(frozen=True)
class Call:
    """An agent turn with one tool call (executed when the script is played)."""

    name: str
    arguments: dict[str, Any] = field(default_factory=dict)


Turn = User | Say | Call


def play_script(task: Task, domain: Domain, script: Sequence[Turn]) -> Trajectory:
    """The trajectory of `script` on the task's initial state, ended by the user (`user_stop`).

    Calls run in order through `domain.toolbox` (an error becomes the tool message, as in a
    rollout); the system prompt is the domain's policy, as the agent would have seen it.
    """
    state = domain.initial_state(task.initial_state)
    system = agent_system_prompt(domain.policy, domain.vocabulary)
    messages: list[Message] = [Message(role="system", content=system)]
    steps: list[StepRecord] = []
    user_turns = 0
    for turn in script:
        if isinstance(turn, User):
            user_turns += 1
            messages.append(Message(role="user", content=turn.text))
        elif isinstance(turn, Say):
            messages.append(Message(role="assistant", content=turn.text))
        else:
            call = ToolCall(id=f"call_{len(steps)}", name=turn.name, arguments=turn.arguments)
            execution = domain.toolbox.execute(state, call)
            messages += [Message(role="assistant", tool_calls=(call,))]
            messages.append(tool_message(call, execution.observation))
            steps.append(step_record(len(steps), user_turns, call, execution))
    return Trajectory.create(
        task=task,
        mode="rollout",
        messages=tuple(messages),
        steps=tuple(steps),
        termination="user_stop",
        final_state_hash=state_hash(state),
        provenance=PROVENANCE,
    )
