"""Shortcut-resistance signatures: how much work the agent did before it answered, and whether
each gold value it stated had been shown to it first.

A trajectory whose agent states the answer before any evidence (answer-before-evidence) teaches
guessing. Across a dataset, the prior-shortcut rate says how often a teacher could answer from
its prior alone: a high rate means the tasks are too guessable to teach tool use.

Turn indices are indices into `trajectory.messages`.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import ClassVar

from trajforge.generators.values import extract_values, leaf_strings, normalise
from trajforge.schemas import Message, RejectionReason, Signatures, Task, Trajectory
from trajforge.verifiers.protocol import FilterContext, FilterModel
from trajforge.verifiers.result import FilterResult
from trajforge.verifiers.text import Evidence, argument_values


def gold_values(task: Task) -> tuple[str, ...]:
    """The values a solver must find: expected outputs plus fact-like gold argument values."""
    values: set[str] = set()
    for output in task.expected_outputs:
        found = extract_values(output)
        values |= found or {normalise(output)}
    for action in task.gold_actions:
        values |= argument_values(action.arguments)
    return tuple(sorted(v for v in values if v))


def _agent_values(message: Message) -> set[str]:
    found = extract_values(message.content or "")
    for call in message.tool_calls:
        found |= argument_values(call.arguments)
    return found


def _agent_prose(message: Message) -> str:
    """The message's text and the strings it passes as arguments, normalised: a name handed
    to a tool (`answer(text="Velmora Press")`) is stated as surely as one written in prose."""
    parts = [message.content or ""]
    parts += [leaf for c in message.tool_calls for leaf in leaf_strings(c.arguments)]
    return " \n ".join(normalise(p) for p in parts if isinstance(p, str) and p)


def _states(said: set[str], prose: str, value: str) -> bool:
    """The agent says or passes `value` in a message (`said`: its values, `prose`: its text
    normalised; prose outputs match as substrings)."""
    return value in said or (not value.startswith("amount:") and value in prose)


def _answer_hits(trajectory: Trajectory, values: Sequence[str]) -> dict[str, int]:
    hits: dict[str, int] = {}
    for index, message in enumerate(trajectory.messages):
        if message.role != "assistant" or len(hits) == len(values):
            continue
        # Extracted once per message, not once per (message, value): this was most of the
        # shortcut filters' CPU.
        said, prose = _agent_values(message), _agent_prose(message)
        for value in values:
            if value not in hits and _states(said, prose, value):
                hits[value] = index
    return hits


@dataclass(frozen=True)
class ShortcutScan:
    """Where each gold value was first stated by the agent (`hits`) and first shown to it by a
    tool output or the user (`evidence`), message indices of one trajectory's `messages`.

    Why an object: the signatures and the answer-before-evidence filter read the same scan of
    the same trajectory back to back; the caller makes it once (`scan_shortcuts`) and hands it
    to both (the filter finds it on its `FilterContext`) instead of each scanning every message
    again. It holds the messages tuple it read, so `fits` can tell it is that trajectory's."""

    messages: tuple[Message, ...]
    values: tuple[str, ...]
    hits: Mapping[str, int]
    evidence: Mapping[str, int]

    def fits(self, trajectory: Trajectory, values: tuple[str, ...]) -> bool:
        """Made from these very messages for these values (an `is` check: records are frozen)."""
        return self.messages is trajectory.messages and self.values == values


def scan_shortcuts(trajectory: Trajectory, gold: Sequence[str] | None = None) -> ShortcutScan:
    """The scan of `gold` (default `gold_values(trajectory.task)`) in the trajectory."""
    values = tuple(gold) if gold is not None else gold_values(trajectory.task)
    return ShortcutScan(
        trajectory.messages,
        values,
        _answer_hits(trajectory, values),
        _evidence_turns(trajectory, values),
    )


def _scan_for(
    trajectory: Trajectory, gold: Sequence[str] | None, scan: ShortcutScan | None
) -> ShortcutScan:
    """`scan` when it was made for this trajectory and these values, else a fresh one."""
    values = tuple(gold) if gold is not None else gold_values(trajectory.task)
    if scan is not None and scan.fits(trajectory, values):
        return scan
    return scan_shortcuts(trajectory, values)


def _evidence_turns(trajectory: Trajectory, values: Sequence[str]) -> dict[str, int]:
    """First message index at which each value was shown by a tool output or the user."""
    evidence = Evidence()
    seen: dict[str, int] = {}
    for index, message in enumerate(trajectory.messages):
        if message.role in ("tool", "user"):
            evidence.add(message.content)
            for value in values:
                if value not in seen and evidence.supports(value):
                    seen[value] = index
    return seen


def _answer_index(trajectory: Trajectory, hits: dict[str, int], values: Sequence[str]) -> int:
    """Where the final answer is: the turn the last gold value was stated, else the last turn."""
    if values and len(hits) == len(values):
        return max(hits.values())
    return len(trajectory.messages)


def _agent_tokens(message: Message) -> int:
    tokens = len((message.content or "").split())
    for call in message.tool_calls:
        tokens += len(json.dumps(call.arguments).split()) + 1
    return tokens


def compute_signatures(
    trajectory: Trajectory, gold: Sequence[str] | None = None, scan: ShortcutScan | None = None
) -> Signatures:
    """Signatures of one trajectory; `gold` defaults to `gold_values(trajectory.task)`;
    `scan`: this trajectory's `scan_shortcuts` when the caller already made it."""
    found = _scan_for(trajectory, gold, scan)
    values, hits, evidence = found.values, dict(found.hits), found.evidence
    answer_at = _answer_index(trajectory, hits, values)
    before = [m for m in trajectory.messages[:answer_at] if m.role == "assistant"]
    return Signatures(
        solving_tool_calls=sum(len(m.tool_calls) for m in before),
        solving_tokens=sum(_agent_tokens(m) for m in before),
        answer_hit_turns=hits,
        evidence_before_answer=all(v in evidence and evidence[v] < t for v, t in hits.items()),
    )


def early_answers(
    trajectory: Trajectory, gold: Sequence[str] | None = None, scan: ShortcutScan | None = None
) -> dict[str, int]:
    """Gold values the agent stated before any tool output or user turn showed them."""
    found = _scan_for(trajectory, gold, scan)
    hits, evidence = found.hits, found.evidence
    return {v: t for v, t in hits.items() if not (v in evidence and evidence[v] < t)}


def check_answer_before_evidence(
    trajectory: Trajectory, gold: Sequence[str] | None = None, scan: ShortcutScan | None = None
) -> FilterResult:
    """Reject (`answer_before_evidence`) when a gold value is stated before it was shown."""
    early = early_answers(trajectory, gold, scan)
    if not early:
        return FilterResult.ok()
    listed = ", ".join(f"{v} (message {t})" for v, t in sorted(early.items()))
    return FilterResult.reject("answer_before_evidence", f"stated before evidence: {listed}")


class AnswerBeforeEvidenceFilter(FilterModel):
    """Every gold value the agent states was shown to it first (by a tool or the user)."""

    name: ClassVar[str] = "answer_before_evidence"
    reasons: ClassVar[tuple[RejectionReason, ...]] = ("answer_before_evidence",)

    def check(self, trajectory: Trajectory, context: FilterContext) -> FilterResult:
        return check_answer_before_evidence(trajectory, scan=context.scan)


def prior_shortcut_rate(signatures: Iterable[Signatures]) -> float:
    """Fraction of trajectories that answered before any evidence (0.0 on an empty dataset)."""
    flags = [not s.evidence_before_answer for s in signatures]
    return sum(flags) / len(flags) if flags else 0.0
