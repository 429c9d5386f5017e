"""Calibration of the LLM judge against the programmatic outcome verifier.

The outcome verifier (state hash + outputs) is ground truth for task success; the judge's
task_success axis should agree with it. Agreement statistics tell whether the judge can be
trusted on the axes the programmatic check cannot see (policy, grounding, user fidelity).
"""

from __future__ import annotations

from collections.abc import Iterable

from trajforge.schemas import Judgement, Record, Trajectory


class CalibrationReport(Record):
    """Judge task_success pass vs outcome pass; the positive class is `outcome.passed`."""

    n: int
    skipped: int  # no outcome, or no graded judgement
    true_positive: int
    false_positive: int
    true_negative: int
    false_negative: int
    accuracy: float
    precision: float
    recall: float
    cohen_kappa: float


def _judge_passes(judgement: Judgement, threshold: float) -> bool | None:
    for axis in judgement.axes:
        if axis.axis == "task_success":
            return axis.score >= threshold
    return None


def _latest_graded(trajectory: Trajectory) -> Judgement | None:
    graded = [j for j in trajectory.judgements if j.status == "graded"]
    return graded[-1] if graded else None


def _ratio(num: float, den: float) -> float:
    return num / den if den else 0.0


def cohen_kappa(tp: int, fp: int, tn: int, fn: int) -> float:
    """Agreement beyond chance between two binary raters (1.0 when both are constant and equal)."""
    n = tp + fp + tn + fn
    if n == 0:
        return 0.0
    observed = (tp + tn) / n
    expected = ((tp + fp) * (tp + fn) + (tn + fn) * (tn + fp)) / (n * n)
    if expected == 1.0:
        return 1.0 if observed == 1.0 else 0.0
    return (observed - expected) / (1.0 - expected)


def calibrate(trajectories: Iterable[Trajectory], threshold: float = 1.0) -> CalibrationReport:
    """Agreement of the judge's task_success (score >= threshold) with `outcome.passed`."""
    tp = fp = tn = fn = skipped = 0
    for trajectory in trajectories:
        judgement = _latest_graded(trajectory)
        verdict = _judge_passes(judgement, threshold) if judgement else None
        if trajectory.outcome is None or verdict is None:
            skipped += 1
            continue
        truth = trajectory.outcome.passed
        tp += truth and verdict
        fp += (not truth) and verdict
        tn += (not truth) and (not verdict)
        fn += truth and (not verdict)
    n = tp + fp + tn + fn
    return CalibrationReport(
        n=n,
        skipped=skipped,
        true_positive=tp,
        false_positive=fp,
        true_negative=tn,
        false_negative=fn,
        accuracy=_ratio(tp + tn, n),
        precision=_ratio(tp, tp + fp),
        recall=_ratio(tp, tp + fn),
        cohen_kappa=cohen_kappa(tp, fp, tn, fn),
    )
