"""The simulated user must not invent facts.

A user simulator that makes up an order id, an email or a zip code the scenario never gave it
turns the conversation into one the real task cannot produce (and may hand the agent the answer).
The allowed facts are the scenario (known info, instructions, reason for contact), the persona's
name, and whatever the agent has said to the user so far.
"""

from __future__ import annotations

import re
from typing import ClassVar

from trajforge.generators.values import extract_values, normalise
from trajforge.schemas import RejectionReason, Trajectory
from trajforge.verifiers.protocol import FilterContext, FilterModel
from trajforge.verifiers.result import FilterResult
from trajforge.verifiers.text import Evidence, message_text

# "my name is Ann Lee", "I'm Ann Lee", "this is Ann Lee": a name the user asserts.
_NAME_CLAIM = re.compile(
    r"\b(?:my name is|i am|i'm|this is|name's)\s+([A-Z][a-z]+(?:\s+[A-Z][a-z]+)+)"
)


def _scenario_evidence(trajectory: Trajectory) -> Evidence:
    task = trajectory.task
    evidence = Evidence()
    evidence.add(task.scenario.reason_for_contact)
    evidence.add(task.scenario.instructions)
    evidence.add(task.persona.name)
    for label, value in task.scenario.known_info.items():
        evidence.add(f"{label}: {value}")
    return evidence


def invented_user_facts(trajectory: Trajectory) -> list[tuple[int, str]]:
    """(message index, value) for each fact a user turn asserts outside what it was allowed."""
    evidence = _scenario_evidence(trajectory)
    invented: list[tuple[int, str]] = []
    for index, message in enumerate(trajectory.messages):
        if message.role == "assistant":
            evidence.add(message_text(message))
        if message.role != "user" or not message.content:
            continue
        for value in sorted(extract_values(message.content)):
            if not evidence.supports(value):
                invented.append((index, value))
        for name in _NAME_CLAIM.findall(message.content):
            if not evidence.supports(normalise(name)):
                invented.append((index, name))
    return invented


def role_confused_turns(trajectory: Trajectory) -> list[int]:
    """Message indices of user turns that speak as the agent (the generation-time check, run
    again on the finished record: a record from another system never went through it)."""
    from trajforge.generators.user import looks_like_agent

    return [
        i
        for i, m in enumerate(trajectory.messages)
        if m.role == "user" and m.content and looks_like_agent(m.content)
    ]


def check_user_fidelity(trajectory: Trajectory) -> FilterResult:
    """Reject (`role_confusion`) when a user turn speaks as the agent, (`user_hallucination`)
    when the user states facts its scenario does not hold."""
    confused = role_confused_turns(trajectory)
    if confused:
        return FilterResult.reject(
            "role_confusion", f"user turns speak as the agent: messages {confused}"
        )
    invented = invented_user_facts(trajectory)
    if not invented:
        return FilterResult.ok()
    listed = ", ".join(f"{v} (message {i})" for i, v in invented)
    return FilterResult.reject("user_hallucination", f"user asserted unknown facts: {listed}")


class UserFidelityFilter(FilterModel):
    """The simulated user states only facts its scenario (or the agent) gave it."""

    name: ClassVar[str] = "user_fidelity"
    reasons: ClassVar[tuple[RejectionReason, ...]] = ("role_confusion", "user_hallucination")

    def check(self, trajectory: Trajectory, context: FilterContext) -> FilterResult:
        return check_user_fidelity(trajectory)
