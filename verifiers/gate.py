"""The non-LLM gate as one function: outcome plus every configured filter, all reasons kept.

The build stops at a trajectory's first rejection (each filter counts only what it saw); a team
re-filtering an old build or checking another system's trajectories wants every reason at once.
`gate_verdict` runs the outcome check and each filter on the same record and collects them all;
`trajforge verify` and the corruption benchmark both use it.
"""

from __future__ import annotations

from collections.abc import Sequence

from trajforge.generators.tooling import Domain
from trajforge.schemas import Record, RejectionReason, Trajectory
from trajforge.verifiers.outcome import judge_outcome
from trajforge.verifiers.protocol import FilterContext, TrajectoryFilter, run_filter


class GateReason(Record):
    """One check that refused the trajectory: which, the typed reason, the evidence."""

    check: str
    reason: RejectionReason
    detail: str


class Verdict(Record):
    """One line of `trajforge verify`'s output."""

    id: str
    kept: bool
    reasons: tuple[GateReason, ...] = ()


def gate_verdict(
    trajectory: Trajectory, domain: Domain, filters: Sequence[TrajectoryFilter]
) -> Verdict:
    """Outcome (replayed against the gold plan) and every filter; kept when none refuses."""
    found: list[GateReason] = []
    outcome, reason = judge_outcome(trajectory, domain)
    if reason is not None:
        found.append(GateReason(check="outcome", reason=reason, detail=outcome.reason))
    checked = trajectory.model_copy(update={"outcome": outcome})
    context = FilterContext(domain=domain)
    for flt in filters:
        result = run_filter(flt, checked, context)
        if not result.passed:
            assert result.reason is not None
            found.append(GateReason(check=flt.name, reason=result.reason, detail=result.detail))
    return Verdict(id=trajectory.id, kept=not found, reasons=tuple(found))
