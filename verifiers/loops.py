"""Loops and repeats: the agent calling the same thing again and again, or undoing itself.

A teacher stuck in a loop (same call, same arguments) or oscillating a write (A, then B, then
back to A on the same state path) produces trajectories that may still end in the right state
but teach dithering. Both are cheap to detect from the recorded calls and state diffs.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Callable, Mapping
from typing import Any, ClassVar

from pydantic import Field

from trajforge.generators.domain_options import options_of
from trajforge.schemas import RejectionReason, Trajectory, canonical_json
from trajforge.verifiers.protocol import FilterContext, FilterModel
from trajforge.verifiers.result import FilterResult

DEFAULT_MAX_REPEATS = 3

#: Tool name -> what its arguments mean, as a domain declares it (`call_meanings`): two calls
#: whose meanings are equal are the same call (search: a query's content words as a set).
Meanings = Mapping[str, Callable[[dict[str, Any]], Any]]


def _normal_value(value: Any) -> Any:
    """Case, whitespace and id prefixes (`#`, leading zeros kept) do not make a call new."""
    if isinstance(value, str):
        return " ".join(value.split()).lower().lstrip("#")
    if isinstance(value, dict):
        return {str(k).lower(): _normal_value(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_normal_value(v) for v in value]
    return value


def call_key(name: str, arguments: dict[str, Any], meanings: Meanings | None = None) -> str:
    """`name(args)` with arguments normalised, so near-identical retries compare equal (by the
    domain's meaning of the tool's arguments when it declares one)."""
    meaning = (meanings or {}).get(name)
    value = meaning(arguments) if meaning is not None else _normal_value(arguments)
    return f"{name}({canonical_json(value)})"


def repeated_calls(
    trajectory: Trajectory, max_repeats: int = DEFAULT_MAX_REPEATS, meanings: Meanings | None = None
) -> dict[str, int]:
    """`name(args)` -> count, for each call (by normalised arguments) made `max_repeats` times."""
    counts = Counter(call_key(c.name, c.arguments, meanings) for c in trajectory.tool_calls())
    return {call: n for call, n in counts.items() if n >= max_repeats}


def _agent_stretches(trajectory: Trajectory, meanings: Meanings | None) -> list[list[str]]:
    """Normalised call keys between user turns: the agent's runs with no new information."""
    stretches: list[list[str]] = [[]]
    for message in trajectory.messages:
        if message.role == "user":
            stretches.append([])
        stretches[-1] += [call_key(c.name, c.arguments, meanings) for c in message.tool_calls]
    return stretches


def two_cycles(trajectory: Trajectory, meanings: Meanings | None = None) -> list[str]:
    """`A <-> B` for each pair of calls the agent alternates A, B, A, B without the user saying
    anything in between (reading back and forth instead of acting)."""
    found = set()
    for keys in _agent_stretches(trajectory, meanings):
        for i in range(len(keys) - 3):
            a, b = keys[i], keys[i + 1]
            if a != b and keys[i + 2] == a and keys[i + 3] == b:
                found.add(f"{a} <-> {b}")
    return sorted(found)


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


def check_loops(
    trajectory: Trajectory, max_repeats: int = DEFAULT_MAX_REPEATS, meanings: Meanings | None = None
) -> FilterResult:
    """Reject (`loop_or_repeat`) on >= `max_repeats` calls equal after normalisation, a 2-cycle
    of calls, or an oscillating write."""
    repeats = repeated_calls(trajectory, max_repeats, meanings)
    oscillations = oscillating_paths(trajectory)
    cycles = two_cycles(trajectory, meanings)
    if not repeats and not oscillations and not cycles:
        return FilterResult.ok()
    parts = [f"{call} x{n}" for call, n in sorted(repeats.items())] + cycles
    parts += [f"{path} oscillated {values}" for path, values in sorted(oscillations.items())]
    return FilterResult.reject("loop_or_repeat", "; ".join(parts))


class LoopsFilter(FilterModel):
    """No call repeated `max_repeats` times, no write that oscillates back."""

    name: ClassVar[str] = "loops"
    reasons: ClassVar[tuple[RejectionReason, ...]] = ("loop_or_repeat",)

    max_repeats: int = Field(default=DEFAULT_MAX_REPEATS, ge=2)

    def check(self, trajectory: Trajectory, context: FilterContext) -> FilterResult:
        meanings = options_of(context.domain).call_meanings
        return check_loops(trajectory, self.max_repeats, meanings)
