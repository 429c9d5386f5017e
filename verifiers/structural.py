"""Structural checks: the agent itself changed the world, and said only what it did.

Training data must show the *model* emitting the tool calls that change state. A state change
with no matching assistant tool call (a simulator side effect, a blueprint step the text never
verbalised) teaches nothing; an agent that says "I have cancelled your order" without a
successful cancel step teaches the model to narrate actions instead of taking them.

Which verbs count as action claims, and which write tools back each, is domain vocabulary
(`DomainVocabulary.action_verbs`: "cancelled" -> tools named *cancel* in retail); callers pass
the trajectory's domain's verbs, and the generic ones apply when none are given.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Mapping
from typing import ClassVar

from trajforge.generators.vocabulary import GENERIC_ACTION_VERBS
from trajforge.schemas import RejectionReason, StepRecord, Trajectory
from trajforge.verifiers.protocol import FilterContext, FilterModel
from trajforge.verifiers.result import FilterResult

ActionVerbs = Mapping[str, tuple[str, ...]]

_ADVERBS = r"(?:(?:now|just|already|successfully|also|gone ahead and|went ahead and)\s+)*"


@functools.lru_cache(maxsize=32)
def _narration(verbs: tuple[str, ...]) -> re.Pattern[str]:
    """First-person claims only: "your order has been cancelled" may just report a status."""
    alternatives = "|".join(sorted(verbs, key=len, reverse=True))
    return re.compile(
        rf"\b(?:i(?:'ve| have)|we(?:'ve| have)|i|we)\s+{_ADVERBS}({alternatives})\b",
        re.IGNORECASE,
    )


def _assistant_call_ids(trajectory: Trajectory) -> dict[str, str]:
    return {
        c.id: c.name for m in trajectory.messages if m.role == "assistant" for c in m.tool_calls
    }


def check_agent_tool_calls(trajectory: Trajectory) -> FilterResult:
    """Reject (`no_agent_tool_call`) when a state change has no matching assistant tool call."""
    emitted = _assistant_call_ids(trajectory)
    orphans = [
        s for s in trajectory.steps if s.state_diff and emitted.get(s.call.id) != s.call.name
    ]
    if not orphans:
        return FilterResult.ok()
    listed = ", ".join(f"step {s.index} {s.call.name} (id {s.call.id})" for s in orphans)
    return FilterResult.reject("no_agent_tool_call", f"state changed without agent call: {listed}")


def _successful_writes_before(trajectory: Trajectory, message_index: int) -> list[StepRecord]:
    """Write steps without error whose call was emitted before `message_index`."""
    emitted_at: dict[str, int] = {}
    for index, message in enumerate(trajectory.messages[:message_index]):
        for call in message.tool_calls:
            emitted_at[call.id] = index
    return [
        s for s in trajectory.steps if s.mutating and s.error is None and s.call.id in emitted_at
    ]


def _has_matching_write(writes: list[StepRecord], stems: tuple[str, ...]) -> bool:
    if not stems:  # a generic verb ("processed", "submitted"): any successful write backs it
        return bool(writes)
    return any(stem in s.call.name.lower() for s in writes for stem in stems)


def narrated_without_action(
    trajectory: Trajectory, action_verbs: ActionVerbs = GENERIC_ACTION_VERBS
) -> list[tuple[int, str]]:
    """(message index, claim) for each first-person action claim with no successful write."""
    pattern = _narration(tuple(action_verbs))
    unbacked: list[tuple[int, str]] = []
    for index, message in enumerate(trajectory.messages):
        if message.role != "assistant" or not message.content:
            continue
        writes = _successful_writes_before(trajectory, index)
        for m in pattern.finditer(message.content):
            if not _has_matching_write(writes, action_verbs[m.group(1).lower()]):
                unbacked.append((index, m.group(0)))
    return unbacked


def check_narrated_actions(
    trajectory: Trajectory, action_verbs: ActionVerbs = GENERIC_ACTION_VERBS
) -> FilterResult:
    """Reject (`narrated_action`) when the agent claims an action it never took successfully."""
    unbacked = narrated_without_action(trajectory, action_verbs)
    if not unbacked:
        return FilterResult.ok()
    listed = "; ".join(f"message {i}: '{claim}'" for i, claim in unbacked)
    return FilterResult.reject("narrated_action", f"claimed without a successful write: {listed}")


class AgentToolCallsFilter(FilterModel):
    """Every state change was emitted by the agent as a tool call."""

    name: ClassVar[str] = "agent_tool_calls"
    reasons: ClassVar[tuple[RejectionReason, ...]] = ("no_agent_tool_call",)

    def check(self, trajectory: Trajectory, context: FilterContext) -> FilterResult:
        return check_agent_tool_calls(trajectory)


class NarratedActionsFilter(FilterModel):
    """The agent claims only actions it took successfully."""

    name: ClassVar[str] = "narrated_actions"
    reasons: ClassVar[tuple[RejectionReason, ...]] = ("narrated_action",)

    def check(self, trajectory: Trajectory, context: FilterContext) -> FilterResult:
        return check_narrated_actions(trajectory, context.domain.vocabulary.action_verbs)
