"""Programmatic outcome verification of a trajectory against its task's gold plan.

The state is the only truth: the trajectory's tool calls (the user's own too, in dual-control
domains) are replayed, in order, through the
domain's toolbox on a fresh initial state, and the gold actions on another; the two final hashes
must agree. The agent must also have told the user every expected output, and the conversation
must have ended the right way. A replayed hash that differs from the trajectory's recorded one
means the record itself is corrupt (edited, or produced by different tools) and never passes.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any, ClassVar, NamedTuple

from trajforge.generators.domain_options import options_of
from trajforge.generators.replays import gold_calls, replay_domain
from trajforge.generators.tooling import Domain
from trajforge.generators.values import leaf_strings, mentions_value
from trajforge.schemas import (
    InitialState,
    OutcomeResult,
    RejectionReason,
    TerminationReason,
    ToolCall,
    Trajectory,
)
from trajforge.verifiers.claims import SENTENCE
from trajforge.verifiers.protocol import FilterContext, FilterModel
from trajforge.verifiers.result import FilterResult

OK_TERMINATIONS: frozenset[TerminationReason] = frozenset({"user_stop", "blueprint_complete"})


def replay_hash(domain: Domain, init: InitialState, calls: Iterable[ToolCall]) -> str:
    """Final state hash after executing `calls` in order on a fresh initial state (computed
    once per process for the same inputs: generators/replays.py)."""
    return replay_domain(domain, init, list(calls)).final


def missing_outputs(trajectory: Trajectory) -> tuple[str, ...]:
    """Expected outputs that no assistant text message states (numbers compared by value), or
    states only about another object than the one it comes from (`about_another_object`)."""
    texts = [m.content for m in trajectory.messages if m.role == "assistant" and m.content]

    def told(index: int, value: str) -> bool:
        stating = [text for text in texts if mentions_value(text, value)]
        if not stating:
            return False
        objects = output_objects(trajectory, index)
        return any(not about_another_object(text, value, objects) for text in stating)

    return tuple(out for i, out in enumerate(trajectory.task.expected_outputs) if not told(i, out))


class OutputObjects(NamedTuple):
    """The ids of the object an expected output comes from, and of the other objects of the
    same kinds the conversation's calls touched (e.g. the asked order, the user's other orders)."""

    own: frozenset[str]
    others: frozenset[str]


def output_objects(trajectory: Trajectory, index: int) -> OutputObjects:
    """From `Task.expected_sources`: the id arguments (`*_id`, `*_ids`) of output `index`'s
    gold actions, and the values the trajectory's calls gave the same arguments. Empty when the
    task does not record its sources or they take no id (the rule then does not apply)."""
    task = trajectory.task
    if not task.expected_sources:
        return OutputObjects(frozenset(), frozenset())
    own: dict[str, set[str]] = {}
    for i in task.expected_sources[index]:
        for key, value in _id_arguments(task.gold_actions[i].arguments):
            own.setdefault(key, set()).add(value)
    seen = {
        value
        for step in trajectory.steps
        for key, value in _id_arguments(step.call.arguments)
        if key in own
    }
    mine = frozenset(v for values in own.values() for v in values)
    return OutputObjects(mine, frozenset(seen - mine))


def _id_arguments(arguments: dict[str, Any]) -> Iterator[tuple[str, str]]:
    for key, value in arguments.items():
        if key.endswith(("_id", "_ids")):
            yield from ((key, leaf) for leaf in leaf_strings(value) if leaf)


def about_another_object(text: str, value: str, objects: OutputObjects) -> bool:
    """Does `text` state `value` only about other objects? True when every sentence of it that
    states the value names one of `objects.others` and none of `objects.own`: "Order #W2 is
    pending" when the user asked about #W1 (both pending) names a value that is true, about the
    wrong order. A sentence naming no id, or the own object, states it (and a value no single
    sentence holds is judged by the whole text, as before)."""
    if not objects.others:
        return False
    stating = [s for s in SENTENCE.findall(text) if mentions_value(s, value)]
    return bool(stating) and all(
        _names_any(s, objects.others) and not _names_any(s, objects.own) for s in stating
    )


def _names_any(sentence: str, ids: frozenset[str]) -> bool:
    return any(mentions_value(sentence, i) for i in ids)


class OutcomeProblem(NamedTuple):
    """One failed component of an outcome: its typed reason, decided where it is found, and
    the text that goes into `OutcomeResult.reason`."""

    reason: RejectionReason
    text: str


class OutcomeVerdict(NamedTuple):
    """The outcome record and, when it failed, the typed reason it is rejected for."""

    result: OutcomeResult
    rejection: RejectionReason | None


#: Which failure names an outcome's rejection when several fail: the state first (a corrupt
#: record counts as a state mismatch), then what the user was told, then the domain's own
#: checks, then the ending.
REJECTION_ORDER: tuple[RejectionReason, ...] = (
    "state_mismatch",
    "outputs_not_communicated",
    "evidence_not_covered",
    "bad_termination",
)


def domain_problems(trajectory: Trajectory, domain: Domain) -> list[OutcomeProblem]:
    """Problems found by the domain's own outcome checks (search: evidence coverage).

    A domain may declare `outcome_checks`, functions trajectory -> problem text or None, each
    problem starting with its rejection reason (`evidence_not_covered: ...`); any other problem
    counts as `bad_termination`, as it always has. The text contract is the
    domain protocol's (typed domain options would make it a typed pair).
    """
    checks = options_of(domain).outcome_checks
    problems = [p for check in checks if (p := check(trajectory)) is not None]
    return [OutcomeProblem(_domain_reason(p), p) for p in problems]


def _domain_reason(problem: str) -> RejectionReason:
    named = problem.split(":", 1)[0].strip()
    return "evidence_not_covered" if named == "evidence_not_covered" else "bad_termination"


def outcome_problems(
    trajectory: Trajectory, domain: Domain
) -> tuple[OutcomeResult, list[OutcomeProblem]]:
    """The outcome record's fields and every failed component, each with its typed reason."""
    task = trajectory.task
    actual = replay_hash(domain, task.initial_state, trajectory.world_calls())
    expected = replay_hash(domain, task.initial_state, gold_calls(task.gold_actions))
    missing = missing_outputs(trajectory)
    problems = []
    if actual != trajectory.final_state_hash:
        problems.append(
            OutcomeProblem(
                "state_mismatch",
                f"corrupt_trajectory: replayed hash {actual[:12]} != recorded final_state_hash "
                f"{trajectory.final_state_hash[:12]}",
            )
        )
    if expected != task.gold_final_hash:
        problems.append(
            OutcomeProblem(
                "state_mismatch",
                f"corrupt_task: gold replay hash {expected[:12]} != task.gold_final_hash "
                f"{task.gold_final_hash[:12]}",
            )
        )
    if actual != expected:
        text = f"state_mismatch: final state {actual[:12]} != gold {expected[:12]}"
        problems.append(OutcomeProblem("state_mismatch", text))
    if missing:
        text = f"outputs_not_communicated: {', '.join(missing)}"
        problems.append(OutcomeProblem("outputs_not_communicated", text))
    if trajectory.termination not in OK_TERMINATIONS:
        text = f"bad_termination: {trajectory.termination}"
        problems.append(OutcomeProblem("bad_termination", text))
    problems += domain_problems(trajectory, domain)
    result = OutcomeResult(
        passed=not problems,
        state_match=actual == expected,
        outputs_communicated=not missing,
        termination_ok=trajectory.termination in OK_TERMINATIONS,
        expected_hash=expected,
        actual_hash=actual,
        missing_outputs=missing,
        reason="; ".join(p.text for p in problems) if problems else "passed",
    )
    return result, problems


def judge_outcome(trajectory: Trajectory, domain: Domain) -> OutcomeVerdict:
    """Replay, compare with gold, check outputs and termination: the outcome record and the
    typed reason of its rejection (the first failed component in `REJECTION_ORDER`)."""
    result, problems = outcome_problems(trajectory, domain)
    failed = {p.reason for p in problems}
    return OutcomeVerdict(result, next((r for r in REJECTION_ORDER if r in failed), None))


def verify_outcome(trajectory: Trajectory, domain: Domain) -> OutcomeResult:
    """Replay, compare with gold, check outputs and termination; `reason` names what failed."""
    return outcome_problems(trajectory, domain)[0]


class OutcomeGate(FilterModel):
    """The trajectory reached the gold state, told every expected output and ended well.

    A passing outcome the Outcome stage attached is trusted; otherwise the outcome is judged
    with the context's domain (a failed one's typed reason is decided there, not read back
    from its text)."""

    name: ClassVar[str] = "outcome"
    reasons: ClassVar[tuple[RejectionReason, ...]] = (
        "state_mismatch",
        "outputs_not_communicated",
        "bad_termination",
        "evidence_not_covered",  # a domain's own outcome check (search: evidence read in order)
    )

    def check(self, trajectory: Trajectory, context: FilterContext) -> FilterResult:
        if trajectory.outcome is not None and trajectory.outcome.passed:
            return FilterResult.ok()
        outcome, reason = judge_outcome(trajectory, context.domain)
        return FilterResult.ok() if reason is None else FilterResult.reject(reason, outcome.reason)
