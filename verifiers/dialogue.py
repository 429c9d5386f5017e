"""Small readings of a conversation that several checks share: who said yes, what a tool showed.

Policy rules and grounding checks both need to know whether a user turn affirms or declines, and
what the tool results said about one object (an order's status, its owner). One definition here
keeps them from drifting apart.
The yes/no reading itself lives in generators/consent.py (agents honour the same words).
"""

from __future__ import annotations

import json
from typing import Any

from trajforge.generators.consent import is_affirmation, is_refusal
from trajforge.schemas import StepRecord, Trajectory

__all__ = ["is_affirmation", "is_refusal", "result_object", "steps_by_call"]


def result_object(step: StepRecord) -> Any:
    """A step's successful result parsed as JSON (a bare string result stays a string)."""
    if step.error is not None or step.result is None:
        return None
    try:
        return json.loads(step.result)
    except ValueError:
        return step.result


def steps_by_call(trajectory: Trajectory) -> dict[str, StepRecord]:
    """Call id -> the step that executed it."""
    return {s.call.id: s for s in trajectory.steps}


def call_positions(trajectory: Trajectory) -> dict[str, int]:
    """Call id -> index of the message that answered it (its tool message), or of the assistant
    message that emitted it when no answer is recorded.

    `StepRecord.turn` counts user turns, not messages: a check that needs to know what was said
    after a step must locate the step in the message list by its call id, as here."""
    positions: dict[str, int] = {}
    for index, message in enumerate(trajectory.messages):
        for call in message.tool_calls:
            positions.setdefault(call.id, index)
        if message.role == "tool" and message.tool_call_id:
            positions[message.tool_call_id] = index
    return positions


def text_turns(trajectory: Trajectory, role: str) -> list[tuple[int, str]]:
    """(message index, text) of every message of `role` that says something."""
    return [
        (i, m.content)
        for i, m in enumerate(trajectory.messages)
        if m.role == role and m.content and m.content.strip()
    ]
