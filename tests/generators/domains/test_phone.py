"""Dual control on the phone domain: the user's own tools, kept apart from the agent's.

The oracle solves every task only because the scripted user takes the steps it asks for; the
agent cannot reach the user's tools; an agent that tells the user they did something they never
did is refused; the user's traffic is marked in the messages view and never rendered for
training; a plug-in domain's `user_tools` is type-checked at load.
"""

from __future__ import annotations

import asyncio

import pytest

from trajforge.finetune.evaluate import CHECKS
from trajforge.finetune.families import get_family
from trajforge.finetune.render import mask_segments
from trajforge.generators.agent import AgentTurn, oracle_for
from trajforge.generators.domains import get_domain
from trajforge.generators.personas import sample_persona
from trajforge.generators.plugins import domain_member_problems
from trajforge.generators.rollout import run_rollout
from trajforge.generators.task_verification import verify_task
from trajforge.generators.user import ScriptedUser
from trajforge.pipelines.views import chat_messages
from trajforge.schemas import Message, Provenance, ToolCall, Trajectory
from trajforge.verifiers.gate import gate_verdict

DOMAIN = get_domain("phone")
USER_TOOL_NAMES = {s.name for s in DOMAIN.user_tools.toolbox.specs}
PROVENANCE = Provenance(models={"agent": "oracle"}, seeds={})


def _tasks(n: int = 6):
    return [verify_task(DOMAIN, DOMAIN.synthesize_task(sample_persona(i), i)) for i in range(n)]


def _rollout(task, agent=None) -> Trajectory:
    user = ScriptedUser(task, user_tools=DOMAIN.user_tools)
    agent = agent or oracle_for(task, DOMAIN)
    return asyncio.run(run_rollout(task, DOMAIN, agent, user, seed=1, provenance=PROVENANCE))


@pytest.fixture(scope="module")
def solved() -> list[Trajectory]:
    return [_rollout(t) for t in _tasks()]


def test_every_task_needs_the_user_to_act():
    for task in _tasks():
        actors = {a.actor for a in task.gold_actions}
        assert actors == {"agent", "user"}, task.gold_actions


def test_the_oracle_solves_every_task_through_the_user(solved):
    for trajectory in solved:
        verdict = gate_verdict(trajectory, DOMAIN, CHECKS)
        assert verdict.kept, verdict.reasons
        user_calls = [s.call for s in trajectory.user_steps]
        gold_user = [
            (a.name, a.arguments) for a in trajectory.task.gold_actions if a.actor == "user"
        ]
        assert [(c.name, c.arguments) for c in user_calls] == gold_user
        assert all(c.actor == "user" for c in user_calls)
        # the agent's steps and calls hold none of the user's
        assert not {s.call.name for s in trajectory.steps} & USER_TOOL_NAMES
        assert not {c.name for c in trajectory.tool_calls()} & USER_TOOL_NAMES


class _Seen:
    """Records what the agent was shown on each act (delegating to the oracle)."""

    def __init__(self, inner):
        self.inner, self.shown = inner, []

    async def act(self, messages, tools, seed) -> AgentTurn:
        self.shown.extend(messages)
        assert not {t.name for t in tools} & USER_TOOL_NAMES
        return await self.inner.act(messages, tools, seed)


def test_the_agent_never_sees_the_users_tool_traffic():
    task = _tasks(1)[0]
    seen = _Seen(oracle_for(task, DOMAIN))
    trajectory = _rollout(task, seen)
    assert any(m.by_user_tools for m in trajectory.messages)
    assert seen.shown and not any(m.by_user_tools for m in seen.shown)


class _Grabber:
    """An agent that tries the user's tool itself, then gives up."""

    def __init__(self):
        self.calls = 0

    async def act(self, messages, tools, seed) -> AgentTurn:
        self.calls += 1
        if self.calls == 1:
            call = ToolCall(id="c0", name="set_airplane_mode", arguments={"on": False})
            return AgentTurn(Message(role="assistant", tool_calls=(call,)))
        return AgentTurn(Message(role="assistant", content="Sorry, is there anything else?"))


def test_the_agent_cannot_call_a_user_tool_and_the_replay_agrees():
    task = _tasks(1)[0]
    trajectory = _rollout(task, _Grabber())
    assert trajectory.steps[0].error.startswith("Error: unknown tool 'set_airplane_mode'")
    verdict = gate_verdict(trajectory, DOMAIN, CHECKS)
    details = " ".join(r.detail for r in verdict.reasons)
    assert not verdict.kept and "corrupt_trajectory" not in details  # replayed as it ran


_CLAIMS = {
    "restart_phone": "You've restarted your phone, so the line is back.",
    "set_mobile_data": "You have turned on mobile data, so data works now.",
    "set_data_roaming": "You've turned on data roaming, so you are ready to travel.",
}


def _lie(trajectory: Trajectory) -> Trajectory:
    """The oracle's closing, prefixed with a user action the user never took."""
    done = {s.call.name for s in trajectory.user_steps}
    claim = next(text for name, text in _CLAIMS.items() if name not in done)
    messages = list(trajectory.messages)
    last = max(i for i, m in enumerate(messages) if m.role == "assistant" and m.content)
    messages[last] = messages[last].model_copy(
        update={"content": f"{claim} {messages[last].content}"}
    )
    return trajectory.model_copy(update={"messages": tuple(messages)})


def test_claiming_a_user_action_that_never_happened_is_rejected(solved):
    for trajectory in solved:
        verdict = gate_verdict(_lie(trajectory), DOMAIN, CHECKS)
        assert [r.reason for r in verdict.reasons] == ["policy.claimed_user_action"], verdict


def test_claiming_a_user_action_the_user_took_is_fine(solved):
    trajectory = solved[0]
    name = trajectory.user_steps[-1].call.name
    on = trajectory.user_steps[-1].call.arguments.get("on")
    said = {
        "restart_phone": "You've restarted your phone.",
        "set_airplane_mode": f"You've turned {'on' if on else 'off'} airplane mode.",
        "set_mobile_data": f"You've turned {'on' if on else 'off'} mobile data.",
        "set_data_roaming": f"You've turned {'on' if on else 'off'} data roaming.",
    }[name]
    messages = list(trajectory.messages)
    last = max(i for i, m in enumerate(messages) if m.role == "assistant" and m.content)
    messages[last] = messages[last].model_copy(
        update={"content": f"{said} {messages[last].content}"}
    )
    honest = trajectory.model_copy(update={"messages": tuple(messages)})
    assert gate_verdict(honest, DOMAIN, CHECKS).kept


def test_the_messages_view_marks_user_tool_calls_and_training_drops_them(solved):
    trajectory = solved[0]
    view = chat_messages(trajectory)
    marked = [m for m in view if m.get("actor") == "user"]
    assert {m["role"] for m in marked} == {"user", "tool"}
    assert {
        c["function"]["name"] for m in marked for c in m.get("tool_calls", ())
    } <= USER_TOOL_NAMES
    assert all("actor" not in m for m in view if m not in marked)
    # the agent's render (what SFT trains on) holds none of the user's calls or results
    family = get_family("qwen2.5")
    tools = [s.openai_schema() for s in DOMAIN.toolbox.specs]
    segments = mask_segments(trajectory.messages, tools, family)
    text = "".join(s.text for s in segments)
    for step in trajectory.user_steps:
        assert f'"name": "{step.call.name}"' not in text and f"{step.call.name}" not in text
    assert any(s.trained for s in segments)


def test_user_tools_of_the_wrong_type_are_named():
    class Odd:
        user_tools = {"set_airplane_mode": None}

    problems = domain_member_problems(Odd())
    assert problems == [
        "user_tools must be UserTools or None (generators/user_tools.py), not dict"
        " (or leave it out for DomainOptions' default)"
    ]
