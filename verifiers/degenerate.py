"""Degenerate turns on the record: a user or agent message that is only a name, only a value,
or the previous turn said again (`generators.bare_turns`, the rule the verbaliser applies to
its rewrites). Simulator tokens (`###STOP###`) are not words of the turn."""

from __future__ import annotations

from typing import ClassVar

from trajforge.generators.bare_turns import is_bare, repeats
from trajforge.generators.prompts import SIMULATOR_TOKENS
from trajforge.schemas import RejectionReason, Trajectory
from trajforge.verifiers.protocol import FilterContext, FilterModel
from trajforge.verifiers.result import FilterResult


def _spoken(text: str) -> str:
    for token in SIMULATOR_TOKENS:
        text = text.replace(token, " ")
    return text.strip()


def _names(trajectory: Trajectory) -> list[str]:
    known = trajectory.task.scenario.known_info
    return [trajectory.task.persona.name, *(v for k, v in known.items() if "name" in k.lower())]


def degenerate_turns(trajectory: Trajectory) -> list[tuple[int, str]]:
    """(message index, what is wrong) for each degenerate user or agent turn."""
    names = _names(trajectory)
    found: list[tuple[int, str]] = []
    previous: str | None = None
    for index, message in enumerate(trajectory.messages):
        if message.role not in ("user", "assistant") or not message.content:
            continue
        text = _spoken(message.content)
        if not text:  # a bare stop token ends the conversation; it says nothing else
            continue
        if is_bare(text, names):
            found.append((index, f"only a name or value: {text[:60]!r}"))
        elif repeats(text, previous):
            found.append((index, f"repeats the previous turn: {text[:60]!r}"))
        previous = text
    return found


def check_degenerate_turns(trajectory: Trajectory) -> FilterResult:
    """Reject (`degenerate_turn`) when a turn is only a name or value, or repeats the last one."""
    found = degenerate_turns(trajectory)
    if not found:
        return FilterResult.ok()
    return FilterResult.reject(
        "degenerate_turn", "; ".join(f"message {i}: {what}" for i, what in found)
    )


class DegenerateTurnsFilter(FilterModel):
    """Every user and agent turn says something of its own."""

    name: ClassVar[str] = "degenerate_turns"
    reasons: ClassVar[tuple[RejectionReason, ...]] = ("degenerate_turn",)

    def check(self, trajectory: Trajectory, context: FilterContext) -> FilterResult:
        return check_degenerate_turns(trajectory)
