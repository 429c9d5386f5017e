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


class DiversityReport(Record):
    n: int
    vendi_score: float | None = None  # None when no embeddings were given
    coverage: tuple[DimensionCoverage, ...] = ()


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


def coverage(dimension: str, closed_set: Sequence[str], used: Iterable[str]) -> DimensionCoverage:
    """Counts over a closed set of values. Values outside the set are still counted (so a
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


def diversity_report(
    trajectories: Sequence[Trajectory],
    embeddings: np.ndarray | None = None,
    tool_names: Sequence[str] = (),
    task_types: Sequence[str] = (),
) -> DiversityReport:
    """Vendi score (if embeddings are given) and coverage of traits, task types, complexity and
    tools. `tool_names` and `task_types` are what the build's domains declare (their toolboxes
    and vocabularies); when empty, every tool called / task type seen counts as the universe."""
    personas = [t.task.persona.traits for t in trajectories]
    dims = [
        coverage(f"trait.{name}", values, (getattr(p, name) for p in personas))
        for name, values in trait_values().items()
    ]
    seen_types = [tt for t in trajectories for tt in t.task.intent.task_types]
    dims.append(
        coverage("task_type", tuple(task_types) or tuple(sorted(set(seen_types))), seen_types)
    )
    dims.append(
        coverage(
            "complexity",
            ("1", "2", "3", "4", "5"),
            (str(t.task.intent.complexity) for t in trajectories),
        )
    )
    called = [c.name for t in trajectories for c in t.tool_calls()]
    dims.append(coverage("tool", tuple(tool_names) or tuple(sorted(set(called))), called))
    return DiversityReport(
        n=len(trajectories),
        vendi_score=vendi_score(embeddings) if embeddings is not None else None,
        coverage=tuple(dims),
    )
