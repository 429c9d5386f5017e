"""Dual control: tools the simulated user holds over state only the user can change.

In tau2-bench's telecom domain the agent cannot reach the customer's phone: it must tell the
customer what to toggle, and the customer does it. A domain opts in with one optional member,
`user_tools` (a `UserTools`; the default, None, is "no user tools"): its own toolbox over the
user's part of the world state, plus the two pieces of words a deterministic run needs, how an
agent asks for each user action (the oracle says it) and which user actions an agent's text asks
for (the scripted user reads it). An LLM user is offered the same tools as function specs.

Both actors act on one world state. The agent's toolbox never holds a user tool, so an agent
call to one fails as an unknown tool, live and on replay alike: `WorldToolbox` runs each call
with its own actor's tools (`ToolCall.actor`), which is what the outcome replay and the gold
replay go through. Records keep the user's traffic apart (`Message.actor`, `Trajectory.
user_steps`): the agent never sees it (`agent_view`), the policy rules and filters read only the
agent's steps, and trainers drop or mask the marked messages.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from pydantic import BaseModel

from trajforge.generators.domain_options import options_of
from trajforge.generators.tooling import Toolbox, ToolExecution
from trajforge.schemas import GoldAction, Message, ToolCall, Trajectory, canonical_json

#: A user that keeps calling its tools without saying anything is cut off after this many rounds.
MAX_USER_TOOL_ROUNDS = 4


class WorldToolbox(Toolbox):
    """The agent's and the user's tools as one toolbox for replays, each call run only by its
    own actor's tools: a replay must fail an agent's call to a user tool as the live run did."""

    def __init__(self, agent: Toolbox, user: Toolbox):
        clash = {s.name for s in agent.specs} & {s.name for s in user.specs}
        if clash:
            raise ValueError(
                f"user_tools: {', '.join(sorted(clash))} named in both the agent's and the "
                "user's toolbox; give each user tool its own name"
            )
        super().__init__((*agent.functions(), *user.functions()))
        self._actors = {"agent": agent, "user": user}

    def execute(self, state: BaseModel, call: ToolCall, *args: Any, **kwargs: Any) -> ToolExecution:
        return self._actors[call.actor].execute(state, call, *args, **kwargs)


@dataclass(frozen=True)
class UserTools:
    """A domain's user-side tools and the words around them.

    `functions`: `@tool` functions over the same state model as the agent's, touching only the
    user's part of it. `instruction(action)`: what an agent says to have the user make the call
    `action` stands for (the oracle's words). `requested(text)`: the user calls an agent's text
    asks for, in order (how the scripted user follows instructions; none when it asks for none).
    `claimed(text)`: the user actions an agent's text says the user already took, for the
    shortcut check `unperformed_claims` (default: the domain's words say nothing of it).
    """

    functions: tuple[Callable[..., Any], ...]
    instruction: Callable[[GoldAction], str]
    requested: Callable[[str], tuple[GoldAction, ...]]
    claimed: Callable[[str], tuple[GoldAction, ...]] = lambda text: ()
    toolbox: Toolbox = field(init=False, repr=False, compare=False)
    _worlds: dict[str, WorldToolbox] = field(
        default_factory=dict, init=False, repr=False, compare=False
    )

    def __post_init__(self) -> None:
        object.__setattr__(self, "toolbox", Toolbox(self.functions))

    def world(self, agent: Toolbox) -> WorldToolbox:
        """Both toolboxes as one for replays (built once per agent toolbox: building one
        derives every tool's argument model again)."""
        made = self._worlds.get(agent.fingerprint)
        if made is None:
            made = self._worlds[agent.fingerprint] = WorldToolbox(agent, self.toolbox)
        return made


def world_toolbox(domain: Any) -> Toolbox:
    """The toolbox a replay of `domain`'s calls goes through: its own, or with user tools the
    `WorldToolbox` of both."""
    user_tools = options_of(domain).user_tools
    return domain.toolbox if user_tools is None else user_tools.world(domain.toolbox)


def gold_call(action: GoldAction, index: int) -> ToolCall:
    """A gold action as the call it stands for, made by the action's actor."""
    return ToolCall(
        id=f"gold_{index}", name=action.name, arguments=action.arguments, actor=action.actor
    )


def agent_view(messages: Sequence[Message]) -> list[Message]:
    """The conversation as the agent sees it: without the user's own tool traffic."""
    return [m for m in messages if not m.by_user_tools]


def user_call_message(calls: Sequence[ToolCall]) -> Message:
    """The user's tool calls as one marked message (role "user", actor "user")."""
    return Message(role="user", content=None, tool_calls=tuple(calls), actor="user")


def performed(messages: Sequence[Message]) -> list[tuple[ToolCall, str]]:
    """Each user tool call with its result text, in order (an error result starts "Error")."""
    calls = {c.id: c for m in messages if m.by_user_tools for c in m.tool_calls}
    return [
        (calls[m.tool_call_id], m.content or "")
        for m in messages
        if m.role == "tool" and m.by_user_tools and m.tool_call_id in calls
    ]


def unperformed_claims(trajectory: Trajectory, user_tools: UserTools) -> list[str]:
    """Each agent message that tells the user they did something they never did (no
    successful call of that user tool with those arguments before it): the agent's shortcut
    of claiming the user's half of the work instead of guiding the user through it."""
    calls: dict[str, ToolCall] = {}
    done: set[tuple[str, str]] = set()
    problems = []
    for i, m in enumerate(trajectory.messages):
        if m.by_user_tools and m.role == "user":
            calls.update((c.id, c) for c in m.tool_calls)
        elif m.by_user_tools and m.role == "tool" and m.tool_call_id in calls:
            if not (m.content or "").startswith("Error"):
                call = calls[m.tool_call_id]
                done.add((call.name, canonical_json(call.arguments)))
        elif m.role == "assistant" and m.content:
            for action in user_tools.claimed(m.content):
                if (action.name, canonical_json(action.arguments)) not in done:
                    args = canonical_json(action.arguments)
                    problems.append(
                        f"message {i}: the agent says the user did {action.name} {args}, "
                        "which the user never did"
                    )
    return problems
