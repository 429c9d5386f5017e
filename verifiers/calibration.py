"""Calibration of the LLM judge against the programmatic outcome verifier.

The outcome verifier (state hash + outputs) is ground truth for task success; the judge's
task_success axis should agree with it. Agreement statistics tell whether the judge can be
trusted on the axes the programmatic check cannot see (policy, grounding, user fidelity).
"""

from __future__ import annotations

import math
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
    cohen_kappa: float | None  # None when undefined (see kappa_note)
    kappa_note: str = ""  # why kappa is undefined, when it is
    warning: str = ""  # e.g. no negatives: the agreement numbers are trivially perfect
    problem: str = ""  # set when the figures mean nothing (`meaningless`): nothing graded, ...


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
    """Agreement beyond chance between two binary raters; NaN where it is undefined (no items,
    or both raters constant on the same label: chance agreement is 1 and 0/0 remains)."""
    n = tp + fp + tn + fn
    if n == 0:
        return math.nan
    observed = (tp + tn) / n
    expected = ((tp + fp) * (tp + fn) + (tn + fn) * (tn + fp)) / (n * n)
    if expected == 1.0:
        return math.nan
    return (observed - expected) / (1.0 - expected)


def kappa_note(tp: int, fp: int, tn: int, fn: int) -> str:
    """Why kappa is undefined for these counts ("" when it is defined)."""
    n = tp + fp + tn + fn
    if n == 0:
        return "no graded trajectory with an outcome"
    if tp + fn in (0, n) and tp + fp in (0, n):
        label = "pass" if tp else "fail"
        return f"the outcome and the judge both say {label} for every item: chance agreement is 1"
    return ""


def meaningless(tp: int, fp: int, tn: int, fn: int, skipped: int) -> str:
    """Why the agreement figures mean nothing ("" when they mean something): with nothing
    graded every ratio is 0/0 (printed as 0.0 it read as a judge that is always wrong), and
    with every outcome failed there is no positive to recall and kappa compares constants."""
    n = tp + fp + tn + fn
    if n == 0:
        return (
            f"nothing graded: none of {skipped} trajectories has both an outcome and a graded "
            "task_success judgement (is the judge ungradeable on every one? see calibration.json)"
        )
    if tp + fn == 0:
        return (
            f"degenerate: all outcomes failed ({n} of {n}), so recall and kappa are undefined; "
            "calibrate on a run where some trajectories pass the outcome check"
        )
    return ""


def no_negatives_warning(tp: int, fp: int, tn: int, fn: int) -> str:
    """A run whose trajectories all passed (the quickstart keeps only passed ones, and outcome
    rejections are the only negatives) cannot show whether the judge spots failures."""
    if tp + fp + tn + fn and fp + tn == 0:
        return (
            "no negatives (every trajectory passed the outcome check): accuracy and precision "
            "say nothing about catching failures; calibrate on a run with outcome rejections"
        )
    return ""


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
        cohen_kappa=None if math.isnan(kappa := cohen_kappa(tp, fp, tn, fn)) else kappa,
        kappa_note=kappa_note(tp, fp, tn, fn),
        warning=no_negatives_warning(tp, fp, tn, fn),
        problem=meaningless(tp, fp, tn, fn, skipped),
    )
