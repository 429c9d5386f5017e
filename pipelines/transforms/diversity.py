"""Diversity of the kept set as a Beam composite, with bounded memory per worker.

    kept -> CoverageCombineFn (summed (dimension, value) tallies, prior-shortcut counts)
    kept -> (sample rank, id, text) -> Top.Smallest(sample_size) -> embed -> Vendi estimate
            (only with the embedder on: without it there is no Vendi estimate to sample for)
    both -> diversity.json (read into the manifest)

No step holds every kept trajectory: coverage is a sum of small tallies; the Vendi score is
estimated on a deterministic hash-ordered sample (the same records on every rerun) with its
spread over half-size subsamples stated next to it.
"""

from __future__ import annotations

import json
from collections import Counter

import apache_beam as beam

from trajforge.generators.domains import get_domain
from trajforge.pipelines import io
from trajforge.pipelines.config import DiversityConfig
from trajforge.pipelines.transforms.dedup import dedup_text
from trajforge.pipelines.transforms.global_combine import CombineAll
from trajforge.pipelines.transforms.text_file import write_line
from trajforge.schemas import Record, Trajectory
from trajforge.verifiers.buckets import sample_rank
from trajforge.verifiers.diversity import (
    DiversityReport,
    coverage_from_tally,
    coverage_tally,
    vendi_estimate,
)
from trajforge.verifiers.semantic import embed
from trajforge.verifiers.signatures import prior_shortcut_rate


class CoverageTally(Record):
    """The CombineFn's accumulator: coverage uses, kept count, prior-shortcut counts."""

    n: int = 0
    uses: tuple[tuple[str, str, int], ...] = ()  # (dimension, value, count)
    with_signatures: int = 0
    prior_shortcuts: int = 0


class CoverageCombineFn(beam.CombineFn):
    """Sums per-trajectory tallies; the accumulator is a plain Counter while combining (bounded
    by the closed sets and the tool names) and a typed CoverageTally when extracted."""

    def create_accumulator(self):
        return [0, Counter(), 0, 0]

    def add_input(self, acc, trajectory: Trajectory):
        acc[0] += 1
        acc[1].update(coverage_tally(trajectory))
        if trajectory.signatures is not None:
            acc[2] += 1
            acc[3] += round(prior_shortcut_rate([trajectory.signatures]))
        return acc

    def merge_accumulators(self, accumulators):
        out = self.create_accumulator()
        for acc in accumulators:
            out[0] += acc[0]
            out[1].update(acc[1])
            out[2] += acc[2]
            out[3] += acc[3]
        return out

    def extract_output(self, acc) -> CoverageTally:
        uses = tuple((d, v, n) for (d, v), n in sorted(acc[1].items()))
        return CoverageTally(n=acc[0], uses=uses, with_signatures=acc[2], prior_shortcuts=acc[3])


def sample_entry(trajectory: Trajectory, seed: int) -> tuple[int, str, str]:
    return sample_rank(trajectory.id, seed), trajectory.id, dedup_text(trajectory)


def diversity_json(
    tally: CoverageTally,
    sample: list[tuple[int, str, str]],
    cfg: DiversityConfig,
    with_embeddings: bool,
    domain_names: tuple[str, ...],
) -> str:
    """diversity.json: coverage over every domain of the build (`domain_names` are the
    config's), the Vendi estimate when the embedder is enabled, the prior-shortcut rate."""
    domains = [get_domain(name) for name in domain_names]
    tool_names = sorted({s.name for d in domains for s in d.toolbox.specs})
    task_types = sorted({tt for d in domains for tt in d.vocabulary.task_types})
    uses = Counter({(d, v): n for d, v, n in tally.uses})
    vendi = None
    if with_embeddings and len(sample) > 1:
        vectors = embed([text for _, _, text in sorted(sample)])
        vendi = vendi_estimate(vectors, cfg.subsamples, cfg.seed)
    report = DiversityReport(
        n=tally.n,
        vendi_score=None if vendi is None else vendi.score,
        coverage=coverage_from_tally(uses, tool_names, task_types),
        vendi=vendi,
    )
    out = report.model_dump(mode="json")
    out["prior_shortcut_rate"] = (
        tally.prior_shortcuts / tally.with_signatures if tally.with_signatures else None
    )
    return json.dumps(out, sort_keys=True)


def write_diversity(
    tally: CoverageTally,
    sample: list[tuple[int, str, str]],
    cfg: DiversityConfig,
    with_embeddings: bool,
    domain_names: tuple[str, ...],
    run_dir: str,
) -> str:
    """`diversity_json` written to the run's diversity.json; the path."""
    text = diversity_json(tally, sample, cfg, with_embeddings, domain_names)
    return write_line(text, io.DIVERSITY_FILE, run_dir)


class Diversity(beam.PTransform):
    """Kept trajectories -> <run_dir>/diversity.json."""

    def __init__(
        self,
        cfg: DiversityConfig,
        with_embeddings: bool,
        domain_names: tuple[str, ...],
        run_dir: str,
    ):
        super().__init__()
        self.cfg = cfg
        self.with_embeddings = with_embeddings
        self.domain_names = domain_names
        self.run_dir = run_dir

    def expand(self, kept):
        cfg = self.cfg
        sample = []  # the Vendi sample is embedded only with the embedder on (semantic dedup)
        if self.with_embeddings:
            sample = beam.pvalue.AsSingleton(
                kept
                | "SampleEntry" >> beam.Map(sample_entry, cfg.seed)
                | "Sample" >> beam.combiners.Top.Smallest(cfg.sample_size)
            )
        return kept | "Coverage" >> CombineAll(
            CoverageCombineFn(),
            write_diversity,
            sample,
            cfg,
            self.with_embeddings,
            self.domain_names,
            self.run_dir,
        )
