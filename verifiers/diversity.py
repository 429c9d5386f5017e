"""Dataset diversity for the manifest: Vendi score and coverage of the closed design space.

The Vendi score is the effective number of distinct items: exp of the entropy of the eigenvalues
of K/n for a similarity kernel K. With a cosine kernel K = X Xᵀ over normalised embeddings, the
non-zero eigenvalues of X Xᵀ/n equal those of Xᵀ X/n (d x d), so the cost is O(n d²), not O(n³).
Coverage counts each persona trait, task type, complexity and tool over its closed set (the
`Literal` values in schemas), so a manifest shows which corners of the grid a build never reached.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence
from typing import get_args

import numpy as np

from trajforge.schemas import Record, TraitVector, Trajectory


class DimensionCoverage(Record):
    dimension: str  # "trait.patience", "task_type", "complexity", "tool"
    counts: dict[str, int]  # value -> records using it (values of the closed set, zeros kept)
    covered: int
    total: int
    fraction: float


class VendiEstimate(Record):
    """The Vendi score of a bounded sample and how much it moves between half-size subsamples
    (the 5th-95th percentile range over `subsamples` of them): a narrow range means the sample
    is large enough for the score to be stable."""

    score: float
    sample_size: int
    subsamples: int
    half_sample_p5: float
    half_sample_p95: float


class DiversityReport(Record):
    n: int
    vendi_score: float | None = None  # None when no embeddings were given
    coverage: tuple[DimensionCoverage, ...] = ()
    vendi: VendiEstimate | None = None  # set when the score comes from a sample


def vendi_score(embeddings: np.ndarray) -> float:
    """exp(entropy of eig(K/n)) for the cosine kernel: 1 for identical items, n for orthogonal."""
    x = np.asarray(embeddings, dtype=np.float64)
    if len(x) == 0:
        return 0.0
    x = x / np.maximum(np.linalg.norm(x, axis=1, keepdims=True), 1e-12)
    small = x @ x.T if len(x) <= x.shape[1] else x.T @ x
    eigenvalues = np.clip(np.linalg.eigvalsh(small / len(x)), 0.0, None)
    eigenvalues = eigenvalues[eigenvalues > 1e-12]
    eigenvalues = eigenvalues / eigenvalues.sum()
    return float(np.exp(-np.sum(eigenvalues * np.log(eigenvalues))))


def vendi_estimate(embeddings: np.ndarray, subsamples: int, seed: int) -> VendiEstimate:
    """Vendi score of the sample plus its spread over seeded half-size subsamples."""
    x = np.asarray(embeddings, dtype=np.float64)
    rng = np.random.Generator(np.random.PCG64(seed))
    half = max(1, len(x) // 2)
    scores = [vendi_score(x[rng.choice(len(x), half, replace=False)]) for _ in range(subsamples)]
    low, high = np.percentile(scores, [5, 95]) if scores else (0.0, 0.0)
    return VendiEstimate(
        score=vendi_score(x),
        sample_size=len(x),
        subsamples=subsamples,
        half_sample_p5=float(low),
        half_sample_p95=float(high),
    )


def coverage(
    dimension: str, closed_set: Sequence[str], used: Iterable[str] | Counter[str]
) -> DimensionCoverage:
    """Counts over a closed set of values (`used`: the values used, or a Counter of them). Values outside the set are still counted (so a
    schema drift shows up) but never raise `covered` above `total`."""
    counts = Counter({value: 0 for value in closed_set})
    counts.update(used)
    covered = sum(1 for value in closed_set if counts[value] > 0)
    total = len(closed_set)
    return DimensionCoverage(
        dimension=dimension,
        counts=dict(sorted(counts.items())),
        covered=covered,
        total=total,
        fraction=covered / total if total else 0.0,
    )


def trait_values() -> dict[str, tuple[str, ...]]:
    """Each persona trait dimension and its closed set of values, read from the schema."""
    return {
        name: tuple(get_args(field.annotation)) for name, field in TraitVector.model_fields.items()
    }


def coverage_tally(trajectory: Trajectory) -> Counter[tuple[str, str]]:
    """(dimension, value) uses of one trajectory. Tallies add up, so coverage over any number
    of trajectories is a sum (a Beam CombineFn) instead of a list of every trajectory."""
    traits = trajectory.task.persona.traits
    tally: Counter[tuple[str, str]] = Counter(
        (f"trait.{name}", getattr(traits, name)) for name in trait_values()
    )
    tally.update(("task_type", tt) for tt in trajectory.task.intent.task_types)
    tally[("complexity", str(trajectory.task.intent.complexity))] += 1
    tally.update(("tool", c.name) for c in trajectory.tool_calls())
    return tally


def coverage_from_tally(
    tally: Counter[tuple[str, str]], tool_names: Sequence[str] = (), task_types: Sequence[str] = ()
) -> tuple[DimensionCoverage, ...]:
    """Coverage of traits, task types, complexity and tools from summed tallies."""

    def used(dimension: str) -> Counter[str]:
        return Counter({v: n for (d, v), n in tally.items() if d == dimension})

    dims = [coverage(f"trait.{n}", vals, used(f"trait.{n}")) for n, vals in trait_values().items()]
    seen_types = used("task_type")
    dims.append(
        coverage("task_type", tuple(task_types) or tuple(sorted(set(seen_types))), seen_types)
    )
    dims.append(coverage("complexity", ("1", "2", "3", "4", "5"), used("complexity")))
    called = used("tool")
    dims.append(coverage("tool", tuple(tool_names) or tuple(sorted(set(called))), called))
    return tuple(dims)


def diversity_report(
    trajectories: Sequence[Trajectory],
    embeddings: np.ndarray | None = None,
    tool_names: Sequence[str] = (),
    task_types: Sequence[str] = (),
) -> DiversityReport:
    """Vendi score (if embeddings are given) and coverage of traits, task types, complexity and
    tools. `tool_names` and `task_types` are what the build's domains declare (their toolboxes
    and vocabularies); when empty, every tool called / task type seen counts as the universe."""
    tally: Counter[tuple[str, str]] = Counter()
    for t in trajectories:
        tally.update(coverage_tally(t))
    return DiversityReport(
        n=len(trajectories),
        vendi_score=vendi_score(embeddings) if embeddings is not None else None,
        coverage=coverage_from_tally(tally, tool_names, task_types),
    )
