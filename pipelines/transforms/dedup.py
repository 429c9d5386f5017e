"""Dedup as a Beam composite: exact hashes, MinHash-LSH near-duplicates, embedding duplicates.

Cost grows linearly with the dataset: near-duplicate candidates are found by grouping records
on LSH band keys (records meet only the records sharing a band), never by comparing all pairs.
Only the (small) list of verified duplicate pairs is gathered in one place, to resolve clusters:
every cluster keeps its smallest id, the others are rejected with the reason and the id they
duplicate. Like every stage, each input comes out exactly once: kept or rejected.
"""

from __future__ import annotations

from collections.abc import Iterable

import apache_beam as beam

from trajforge.pipelines.config import DedupConfig
from trajforge.pipelines.transforms.routing import DEAD, KEPT, REJECTED, StageCounters, route
from trajforge.schemas import Rejected, Trajectory

#: When one record is flagged several ways, the most specific reason wins.
REASON_PRIORITY = ("exact_duplicate", "near_duplicate", "semantic_duplicate")


def dedup_text(trajectory: Trajectory) -> str:
    """What dedup compares: the user and agent turns (not the shared system prompt)."""
    from trajforge.verifiers.text import conversation_text

    return conversation_text(trajectory, roles=("user", "assistant"))


def cluster_drops(pairs: Iterable[tuple[str, str]], reason: str) -> list[tuple[str, tuple]]:
    """(id, (reason, kept id)) for every non-representative member of each cluster."""
    from trajforge.verifiers.dedup import resolve_clusters

    pairs = list(pairs)
    dropped = resolve_clusters(pairs)
    partner: dict[str, str] = {}
    for a, b in pairs:
        for x, y in ((a, b), (b, a)):
            if x in dropped and (x not in partner or y < partner[x]):
                partner[x] = y
    return [(i, (reason, partner[i])) for i in sorted(dropped)]


def exact_group_drops(group: tuple[str, Iterable[str]]) -> list[tuple[str, tuple]]:
    ids = sorted(group[1])
    return [(i, ("exact_duplicate", ids[0])) for i in ids[1:]]


def pick_reason(flags: Iterable[tuple[str, str]]) -> tuple[str, str]:
    return min(flags, key=lambda f: (REASON_PRIORITY.index(f[0]), f[1]))


class NearDupPairs(beam.PTransform):
    """(id, text) -> verified near-duplicate pairs, grouped by LSH band key."""

    def __init__(self, threshold: float, num_perm: int, bands: int, rows: int):
        super().__init__()
        from trajforge.verifiers.dedup import LSHParams

        self.params = LSHParams(num_perm=num_perm, bands=bands, rows=rows, threshold=threshold)

    def expand(self, texts):
        from trajforge.verifiers.dedup import (
            lsh_band_keys,
            minhash_signature,
            verified_pairs_in_bucket,
        )

        p = self.params

        def band_entries(item):
            rid, text = item
            sig = minhash_signature(text, num_perm=p.num_perm, seed=p.seed, shingle=p.shingle)
            for key in lsh_band_keys(sig, bands=p.bands, rows=p.rows):
                yield key, (rid, sig)

        return (
            texts
            | "BandKeys" >> beam.FlatMap(band_entries)
            | "GroupByBand" >> beam.GroupByKey()
            | "VerifyInBucket"
            >> beam.FlatMap(lambda kv: verified_pairs_in_bucket(list(kv[1]), p.verify_threshold))
            | "UniquePairs" >> beam.Distinct()
        )


class EmbedFn(beam.DoFn):
    """Batches of (id, text) -> (id, embedding), the embedder loaded once per worker, by the
    first batch (`embed`): a worker that no record reaches never pays for loading it."""

    def process(self, batch):
        from trajforge.verifiers.semantic import embed

        vectors = embed([text for _, text in batch])
        for (rid, _), vec in zip(batch, vectors, strict=True):
            yield rid, vec


def semantic_pairs(items, threshold: float, keys=None) -> list[tuple[str, str]]:
    """Pairs whose embeddings are within `threshold` and, when `keys` (id -> ContentKey) are
    given, that are about the same thing (intent, entities, values): a shared template alone
    never makes two different tasks duplicates."""
    import numpy as np

    from trajforge.verifiers.content_key import same_content
    from trajforge.verifiers.semantic import similar_pairs

    items = sorted(items)
    if len(items) < 2:
        return []
    ids = [i for i, _ in items]
    matrix = np.stack([v for _, v in items])
    pairs = [(ids[a], ids[b]) for a, b, _ in similar_pairs(matrix, threshold)]
    if keys is None:
        return pairs
    return [(a, b) for a, b in pairs if same_content(keys[a], keys[b])]


class ApplyDropsFn(beam.DoFn):
    """Route each trajectory: kept, or rejected with the duplicate it lost to."""

    def __init__(self, run_dir: str):
        self.run_dir = run_dir

    def setup(self):
        self.counters = StageCounters("dedup", self.run_dir)

    def process(self, trajectory, drops):
        flag = drops.get(trajectory.id)
        err = None if flag is None else Rejected(flag[0], f"duplicate of {flag[1]}")
        yield route("dedup", self.counters, trajectory, trajectory, err, "")

    def finish_bundle(self):
        self.counters.flush()


class Dedup(beam.PTransform):
    """Trajectories -> (kept, rejected, dead_letter) after exact, near and semantic dedup."""

    def __init__(self, config: DedupConfig, run_dir: str):
        super().__init__()
        self.config = config
        self.run_dir = run_dir

    def expand(self, trajectories):
        cfg = self.config
        texts = trajectories | "Text" >> beam.Map(lambda t: (t.id, dedup_text(t)))
        flags = []
        if cfg.exact:
            from trajforge.verifiers.dedup import exact_hash

            flags.append(
                texts
                | "ExactKey" >> beam.Map(lambda kv: (exact_hash(kv[1]), kv[0]))
                | "GroupExact" >> beam.GroupByKey()
                | "ExactDrops" >> beam.FlatMap(exact_group_drops)
            )
        if cfg.near.enabled:
            n = cfg.near
            flags.append(
                texts
                | "NearDupPairs" >> NearDupPairs(n.threshold, n.num_perm, n.bands, n.rows)
                | "GatherNearPairs" >> beam.combiners.ToList()
                | "NearClusters" >> beam.FlatMap(cluster_drops, "near_duplicate")
            )
        if cfg.semantic.enabled:
            from trajforge.verifiers.content_key import content_key

            threshold = cfg.semantic.threshold
            keys = trajectories | "ContentKey" >> beam.Map(lambda t: (t.id, content_key(t)))
            flags.append(
                texts
                | "BatchTexts" >> beam.BatchElements(min_batch_size=8, max_batch_size=64)
                | "Embed" >> beam.ParDo(EmbedFn())
                | "GatherEmbeddings" >> beam.combiners.ToList()
                | "SemanticPairs" >> beam.Map(semantic_pairs, threshold, beam.pvalue.AsDict(keys))
                | "SemanticClusters" >> beam.FlatMap(cluster_drops, "semantic_duplicate")
            )
        if flags:
            drops = (
                flags
                | "FlattenFlags" >> beam.Flatten()
                | "GroupFlags" >> beam.GroupByKey()
                | "PickReason" >> beam.MapTuple(lambda rid, fs: (rid, pick_reason(fs)))
            )
            side = beam.pvalue.AsDict(drops)
        else:
            side = beam.pvalue.AsDict(trajectories.pipeline | "NoFlags" >> beam.Create([]))
        return trajectories | "ApplyDrops" >> beam.ParDo(
            ApplyDropsFn(self.run_dir), side
        ).with_outputs(REJECTED, DEAD, main=KEPT)
