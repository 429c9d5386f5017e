"""Values the agent asserts that nothing it had seen contains.

A trained agent must learn to look facts up, not to guess them. If a teacher trajectory states an
order total, an id or an email before any tool output, user turn or system prompt showed it, the
value was invented (or memorised from a leaked prior) and the trajectory teaches a shortcut.
"""

from __future__ import annotations

from typing import ClassVar

from trajforge.generators.values import extract_values
from trajforge.schemas import RejectionReason, Trajectory
from trajforge.verifiers.protocol import FilterContext, FilterModel
from trajforge.verifiers.result import FilterResult
from trajforge.verifiers.text import Evidence, argument_values


def unsupported_agent_values(trajectory: Trajectory) -> list[tuple[int, str]]:
    """(message index, value) for each value the agent asserted before any evidence showed it.

    Evidence grows message by message: system prompt, user turns and tool outputs count; the
    agent's own earlier words do not (repeating an invented value does not make it true).
    """
    evidence = Evidence()
    unsupported: list[tuple[int, str]] = []
    for index, message in enumerate(trajectory.messages):
        if message.role != "assistant":
            evidence.add(message.content)
            continue
        asserted = extract_values(message.content or "")
        for call in message.tool_calls:
            asserted |= argument_values(call.arguments)
        unsupported += [(index, v) for v in sorted(asserted) if not evidence.supports(v)]
    return unsupported


def check_hallucinated_values(trajectory: Trajectory) -> FilterResult:
    """Reject (`hallucinated_value`) when the agent states or passes an unseen value."""
    bad = unsupported_agent_values(trajectory)
    if not bad:
        return FilterResult.ok()
    listed = ", ".join(f"{v} (message {i})" for i, v in bad)
    return FilterResult.reject("hallucinated_value", f"agent asserted unseen values: {listed}")


class HallucinatedValuesFilter(FilterModel):
    """The agent states or passes only values it had been shown."""

    name: ClassVar[str] = "hallucinated_values"
    reasons: ClassVar[tuple[RejectionReason, ...]] = ("hallucinated_value",)

    def check(self, trajectory: Trajectory, context: FilterContext) -> FilterResult:
        return check_hallucinated_values(trajectory)
