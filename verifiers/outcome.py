"""Programmatic outcome verification of a trajectory against its task's gold plan.

The state is the only truth: the trajectory's tool calls are replayed, in order, through the
domain's toolbox on a fresh initial state, and the gold actions on another; the two final hashes
must agree. The agent must also have told the user every expected output, and the conversation
must have ended the right way. A replayed hash that differs from the trajectory's recorded one
means the record itself is corrupt (edited, or produced by different tools) and never passes.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import ClassVar

from trajforge.generators.domain_options import options_of
from trajforge.generators.replays import gold_calls, replay_domain
from trajforge.generators.tooling import Domain
from trajforge.generators.values import mentions_value
from trajforge.schemas import (
    InitialState,
    OutcomeResult,
    RejectionReason,
    TerminationReason,
    ToolCall,
    Trajectory,
)
from trajforge.verifiers.protocol import FilterContext, FilterModel
from trajforge.verifiers.result import FilterResult

OK_TERMINATIONS: frozenset[TerminationReason] = frozenset({"user_stop", "blueprint_complete"})


def replay_hash(domain: Domain, init: InitialState, calls: Iterable[ToolCall]) -> str:
    """Final state hash after executing `calls` in order on a fresh initial state (computed
    once per process for the same inputs: generators/replays.py)."""
    return replay_domain(domain, init, list(calls)).final


def missing_outputs(trajectory: Trajectory) -> tuple[str, ...]:
    """Expected outputs that no assistant text message states (numbers compared by value)."""
    texts = [m.content for m in trajectory.messages if m.role == "assistant" and m.content]
    return tuple(
        out
        for out in trajectory.task.expected_outputs
        if not any(mentions_value(text, out) for text in texts)
    )


def domain_problems(trajectory: Trajectory, domain: Domain) -> list[str]:
    """Problems found by the domain's own outcome checks (search: evidence coverage).

    A domain may declare `outcome_checks`, functions trajectory -> problem text or None, each
    problem starting with its rejection reason; domains without any declare nothing.
    """
    checks = options_of(domain).outcome_checks
    return [p for check in checks if (p := check(trajectory)) is not None]


def verify_outcome(trajectory: Trajectory, domain: Domain) -> OutcomeResult:
    """Replay, compare with gold, check outputs and termination; `reason` names what failed."""
    task = trajectory.task
    actual = replay_hash(domain, task.initial_state, trajectory.tool_calls())
    expected = replay_hash(domain, task.initial_state, gold_calls(task.gold_actions))
    missing = missing_outputs(trajectory)
    termination_ok = trajectory.termination in OK_TERMINATIONS
    state_match = actual == expected
    problems = []
    if actual != trajectory.final_state_hash:
        problems.append(
            f"corrupt_trajectory: replayed hash {actual[:12]} != recorded final_state_hash "
            f"{trajectory.final_state_hash[:12]}"
        )
    if expected != task.gold_final_hash:
        problems.append(
            f"corrupt_task: gold replay hash {expected[:12]} != task.gold_final_hash "
            f"{task.gold_final_hash[:12]}"
        )
    if not state_match:
        problems.append(f"state_mismatch: final state {actual[:12]} != gold {expected[:12]}")
    if missing:
        problems.append(f"outputs_not_communicated: {', '.join(missing)}")
    if not termination_ok:
        problems.append(f"bad_termination: {trajectory.termination}")
    problems += domain_problems(trajectory, domain)
    return OutcomeResult(
        passed=not problems,
        state_match=state_match,
        outputs_communicated=not missing,
        termination_ok=termination_ok,
        expected_hash=expected,
        actual_hash=actual,
        missing_outputs=missing,
        reason="; ".join(problems) if problems else "passed",
    )


def rejection_reason(result: OutcomeResult) -> RejectionReason | None:
    """The typed rejection reason for a failed outcome (first failing component), or None."""
    if result.passed:
        return None
    if not result.state_match or result.reason.startswith("corrupt"):
        return "state_mismatch"
    if not result.outputs_communicated:
        return "outputs_not_communicated"
    if "evidence_not_covered" in result.reason:
        return "evidence_not_covered"
    return "bad_termination"


class OutcomeGate(FilterModel):
    """The trajectory reached the gold state, told every expected output and ended well.

    Reads the outcome the Outcome stage attached (computing it with the context's domain when
    none is attached, e.g. for trajectories from another system)."""

    name: ClassVar[str] = "outcome"
    reasons: ClassVar[tuple[RejectionReason, ...]] = (
        "state_mismatch",
        "outputs_not_communicated",
        "bad_termination",
        "evidence_not_covered",  # a domain's own outcome check (search: evidence read in order)
    )

    def check(self, trajectory: Trajectory, context: FilterContext) -> FilterResult:
        outcome = trajectory.outcome or verify_outcome(trajectory, context.domain)
        reason = rejection_reason(outcome)
        return FilterResult.ok() if reason is None else FilterResult.reject(reason, outcome.reason)
