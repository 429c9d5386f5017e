"""Outcome told: after a write, the agent tells the user what was done and how it came out.

A write task whose closing is "Your request has been completed" teaches an agent to act silently:
the user never learns the new status, the refund or the address now on file. For each successful
write, some later agent text must state one of the values the write changed (the new status, an
amount, the new address line) or name the written object together with what was done.
"""

from __future__ import annotations

from typing import ClassVar

from trajforge.generators.values import leaf_strings, mentions_value
from trajforge.schemas import RejectionReason, StepRecord, Trajectory
from trajforge.verifiers.protocol import FilterContext, FilterModel
from trajforge.verifiers.result import FilterResult


def _changed_values(step: StepRecord) -> list[str]:
    """The new values a write produced, as text worth saying (no empty or one-letter leaves)."""
    values = []
    for entry in step.state_diff:
        values += [v for v in leaf_strings(entry.after) if len(v.strip()) >= 3]
    return values


def _object_ids(step: StepRecord) -> list[str]:
    return [v for k, v in step.call.arguments.items() if k.endswith("_id") and isinstance(v, str)]


def _told(step: StepRecord, later: list[str]) -> bool:
    words = step.call.name.split("_")
    for text in later:
        if any(mentions_value(text, v) for v in _changed_values(step)):
            return True
        named = any(mentions_value(text, o) for o in _object_ids(step))
        if named and any(w in text.lower() for w in words if len(w) > 3):
            return True
    return False


def _call_positions(trajectory: Trajectory) -> dict[str, int]:
    """Call id -> index of the message that made the call. A step's `turn` counts user turns,
    not messages, so it cannot say which agent texts came after the write (reading from it,
    a confirmation prompt before the write passed for its report)."""
    return {
        call.id: index
        for index, message in enumerate(trajectory.messages)
        for call in message.tool_calls
    }


def untold_writes(trajectory: Trajectory) -> list[StepRecord]:
    """Successful writes whose result no later agent text reports."""
    untold = []
    positions = _call_positions(trajectory)
    for step in trajectory.steps:
        if not step.mutating or step.error is not None or not step.state_diff:
            continue
        start = positions.get(step.call.id, len(trajectory.messages)) + 1
        later = [
            m.content for m in trajectory.messages[start:] if m.role == "assistant" and m.content
        ]
        if not _told(step, later):
            untold.append(step)
    return untold


def check_outcome_told(trajectory: Trajectory) -> FilterResult:
    """Reject (`outcome_not_told`) when a write's result is never reported to the user."""
    untold = untold_writes(trajectory)
    if not untold:
        return FilterResult.ok()
    listed = ", ".join(f"step {s.index} {s.call.name}" for s in untold)
    return FilterResult.reject("outcome_not_told", f"result never told to the user: {listed}")


class OutcomeToldFilter(FilterModel):
    """Every successful write is followed by agent text that reports its result."""

    name: ClassVar[str] = "outcome_told"
    reasons: ClassVar[tuple[RejectionReason, ...]] = ("outcome_not_told",)

    def check(self, trajectory: Trajectory, context: FilterContext) -> FilterResult:
        return check_outcome_told(trajectory)
