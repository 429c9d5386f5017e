"""Outcome told: after a write, the agent tells the user what was done and how it came out.

A write task whose closing is "Your request has been completed" teaches an agent to act silently:
the user never learns the new status, the refund or the address now on file. For each successful
write, some later agent text must state one of the values the write changed (the new status, an
amount, the new address line) or name the written object together with what was done.

"Later" means after the write's result in the message list. The step is located by its call id
(`dialogue.call_positions`), never by `StepRecord.turn`, which counts user turns: read as a
message index it pointed before the confirmation prompt, so the prompt ("Shall I cancel order
#W1?") counted as telling the result and every confirmed write passed.

What a good closing must say is `generators.reports.WriteOutcome.told_by`, the rule the
blueprint drafts (`agent_voice.write_report`, one sentence per successful write) and the
verbaliser's check of a rewritten closing share: the written object by its id with the action
in any form ("cancelled", "the cancellation of #W1"), or a value the write produced (the new
status, the refund, the new address). A summary that reports neither for some write is refused.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from typing import ClassVar

from trajforge.generators.reports import WriteOutcome
from trajforge.generators.vocabulary import GENERIC_ACTION_VERBS
from trajforge.schemas import RejectionReason, StepRecord, Trajectory
from trajforge.verifiers.dialogue import call_positions
from trajforge.verifiers.protocol import FilterContext, FilterModel
from trajforge.verifiers.result import FilterResult


def outcome_of(step: StepRecord) -> WriteOutcome:
    """What telling this step's result means (`generators.reports`, shared with the drafts)."""
    return WriteOutcome.of(step.call.name, step.call.arguments, (d.after for d in step.state_diff))


def untold_writes(
    trajectory: Trajectory, action_verbs: Mapping[str, tuple[str, ...]] = GENERIC_ACTION_VERBS
) -> list[StepRecord]:
    """Successful writes whose result no agent text after that result reports."""
    positions = call_positions(trajectory)
    per_tool = Counter(s.call.name for s in trajectory.steps if s.mutating and s.error is None)
    untold = []
    for step in trajectory.steps:
        if not step.mutating or step.error is not None or not step.state_diff:
            continue
        at = positions.get(step.call.id, len(trajectory.messages))
        later = [
            m.content for m in trajectory.messages[at + 1 :] if m.role == "assistant" and m.content
        ]
        only_one = per_tool[step.call.name] == 1
        if not any(outcome_of(step).told_by(text, action_verbs, only_one) for text in later):
            untold.append(step)
    return untold


def check_outcome_told(
    trajectory: Trajectory, action_verbs: Mapping[str, tuple[str, ...]] = GENERIC_ACTION_VERBS
) -> FilterResult:
    """Reject (`outcome_not_told`) when a write's result is never reported to the user."""
    untold = untold_writes(trajectory, action_verbs)
    if not untold:
        return FilterResult.ok()
    listed = ", ".join(f"step {s.index} {s.call.name}" for s in untold)
    return FilterResult.reject("outcome_not_told", f"result never told to the user: {listed}")


class OutcomeToldFilter(FilterModel):
    """Every successful write is followed by agent text that reports its result."""

    name: ClassVar[str] = "outcome_told"
    reasons: ClassVar[tuple[RejectionReason, ...]] = ("outcome_not_told",)

    def check(self, trajectory: Trajectory, context: FilterContext) -> FilterResult:
        return check_outcome_told(trajectory, context.domain.vocabulary.action_verbs)
