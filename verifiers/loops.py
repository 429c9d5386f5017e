"""Loops and repeats: the agent calling the same thing again and again, or undoing itself.

A teacher stuck in a loop (same call, same arguments) or oscillating a write (A, then B, then
back to A on the same state path) produces trajectories that may still end in the right state
but teach dithering. Both are cheap to detect from the recorded calls and state diffs.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from typing import Any, ClassVar

from pydantic import Field

from trajforge.schemas import RejectionReason, Trajectory, canonical_json
from trajforge.verifiers.protocol import FilterContext, FilterModel
from trajforge.verifiers.result import FilterResult

DEFAULT_MAX_REPEATS = 3


def repeated_calls(
    trajectory: Trajectory, max_repeats: int = DEFAULT_MAX_REPEATS
) -> dict[str, int]:
    """`name(args)` -> count, for each identical call emitted at least `max_repeats` times."""
    counts = Counter(f"{c.name}({canonical_json(c.arguments)})" for c in trajectory.tool_calls())
    return {call: n for call, n in counts.items() if n >= max_repeats}


def oscillating_paths(trajectory: Trajectory) -> dict[str, list[Any]]:
    """State path -> its value history, for each path that came back to an earlier value
    after changing (A -> B -> A), counting the value before the first write."""
    history: dict[str, list[Any]] = defaultdict(list)
    for step in trajectory.steps:
        for entry in step.state_diff:
            values = history[entry.path]
            if not values:
                values.append(entry.before)
            values.append(entry.after)
    return {path: values for path, values in history.items() if _returns_to_earlier(values)}


def _returns_to_earlier(values: list[Any]) -> bool:
    keys = [canonical_json(v) for v in values]
    collapsed = [k for i, k in enumerate(keys) if i == 0 or k != keys[i - 1]]
    return len(collapsed) != len(set(collapsed))


def check_loops(trajectory: Trajectory, max_repeats: int = DEFAULT_MAX_REPEATS) -> FilterResult:
    """Reject (`loop_or_repeat`) on >= `max_repeats` identical calls or an oscillating write."""
    repeats = repeated_calls(trajectory, max_repeats)
    oscillations = oscillating_paths(trajectory)
    if not repeats and not oscillations:
        return FilterResult.ok()
    parts = [f"{call} x{n}" for call, n in sorted(repeats.items())]
    parts += [f"{path} oscillated {values}" for path, values in sorted(oscillations.items())]
    return FilterResult.reject("loop_or_repeat", "; ".join(parts))


class LoopsFilter(FilterModel):
    """No call repeated `max_repeats` times, no write that oscillates back."""

    name: ClassVar[str] = "loops"
    reasons: ClassVar[tuple[RejectionReason, ...]] = ("loop_or_repeat",)

    max_repeats: int = Field(default=DEFAULT_MAX_REPEATS, ge=2)

    def check(self, trajectory: Trajectory, context: FilterContext) -> FilterResult:
        return check_loops(trajectory, self.max_repeats)
