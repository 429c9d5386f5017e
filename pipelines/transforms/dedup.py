"""Dedup as a Beam composite: exact hashes, MinHash-LSH near-duplicates, embedding duplicates.

Cost grows linearly with the dataset and no worker holds the whole of it:
- exact: group by the text's hash;
- near: MinHash band keys, grouped in bounded buckets (big template-driven buckets split by the
  content values' MinHash), candidate pairs verified inside each bucket;
- semantic: random-hyperplane band keys over the embeddings (with the task's intent in the key),
  grouped in bounded buckets, each bucket searched with a usearch index for every record's
  nearest neighbours, kept when close enough and about the same content.
A verified pair flags its larger id; flags are grouped per record, so each duplicate is
rejected with the most specific reason and the smallest id it duplicates, and the smallest id
of every cluster stays. Like every stage, each input comes out exactly once: kept or rejected.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterable
from typing import Any

import apache_beam as beam
import numpy as np

from trajforge.pipelines.config import DedupConfig, NearDupConfig, SemanticDupConfig
from trajforge.pipelines.transforms.buckets import BoundedBuckets, scale_counter
from trajforge.pipelines.transforms.routing import DEAD, KEPT, REJECTED, StageCounters, route
from trajforge.schemas import Record, Rejected, Trajectory
from trajforge.verifiers.buckets import chunks, hyperplane_bands, hyperplanes, mix64, pair_flag
from trajforge.verifiers.content_key import ContentKey, content_key, same_content
from trajforge.verifiers.dedup import (
    LSHParams,
    exact_hash,
    lsh_band_keys,
    minhash_signature,
    set_minhash,
    verify_candidates,
)
from trajforge.verifiers.semantic import embed, neighbour_pairs
from trajforge.verifiers.text import conversation_text

#: When one record is flagged several ways, the most specific reason wins.
REASON_PRIORITY = ("exact_duplicate", "near_duplicate", "semantic_duplicate")
#: Seed of the semantic hyperplanes (fixed: every worker and rerun draws the same planes).
HYPERPLANE_SEED = 7


class DedupItem(Record):
    """What dedup needs of a trajectory: its compared text, intent and content values."""

    id: str
    text: str
    intent: tuple[str, ...]
    values: tuple[str, ...]  # sorted content values (verifiers/content_key.py)

    def content_key(self):
        return ContentKey(self.intent, frozenset(self.values))


def dedup_text(trajectory: Trajectory) -> str:
    """What dedup compares: the user and agent turns (not the shared system prompt)."""
    return conversation_text(trajectory, roles=("user", "assistant"))


def dedup_item(trajectory: Trajectory, record_id: str | None = None) -> DedupItem:
    """The trajectory as dedup sees it, under `record_id` when the caller's record has its own
    id (a DatasetRecord's, for the split's near-duplicate edges)."""
    key = content_key(trajectory)
    return DedupItem(
        id=record_id or trajectory.id,
        text=dedup_text(trajectory),
        intent=key.intent,
        values=tuple(sorted(key.values)),
    )


def exact_group_drops(group: tuple[str, Iterable[str]]) -> list[tuple[str, tuple]]:
    ids = sorted(set(group[1]))
    return [(i, ("exact_duplicate", ids[0])) for i in ids[1:]]


def pick_reason(flags: Iterable[tuple[str, str]]) -> tuple[str, str]:
    return min(flags, key=lambda f: (REASON_PRIORITY.index(f[0]), f[1]))


@functools.lru_cache(maxsize=2048)
def text_signature(text: str, num_perm: int) -> tuple[int, ...]:
    """`minhash_signature(text, num_perm)`, kept for a second look: a build signs each kept
    trajectory's text twice, in dedup and again for the split's near-duplicate edges (the same
    text, the same parameters), ~2% of a blueprint build's CPU the second time (issue 30).
    Bounded: ~7 KB an entry (text and tuple), released before the shards are written with the
    generation caches (`generators/data_caches.py`); a build of more trajectories than it holds
    only computes more of them again."""
    return minhash_signature(text, num_perm=num_perm)


def near_band_entries(item: DedupItem, cfg: NearDupConfig):
    """(band key, (refiner, (id, signature))) per band; the refiner is the band's slot of the
    content values' MinHash, so a template-sized bucket splits by what the tasks are about."""
    sig = text_signature(item.text, cfg.num_perm)
    refiners = content_refiners(item.values, cfg.bands)
    for band, key in enumerate(lsh_band_keys(sig, bands=cfg.bands, rows=cfg.rows)):
        yield key, (refiners[band], (item.id, sig))


class BucketPairs(beam.PTransform):
    """Members -> band entries -> bounded buckets -> pairs checked inside each bucket -> flags
    (larger id, (reason, smaller id)). The families differ only in their band entries and
    bucket check; the candidate and verified pair counts go to the scale counters."""

    def __init__(self, family: str, reason: str, band_entries, check, cap: int):
        super().__init__()
        self.family, self.reason = family, reason
        self.band_entries, self.check, self.cap = band_entries, check, cap
        # None: the members are band entries already (made where the members were, see
        # `NearDupPairs(banded=True)`)

    def expand(self, members):
        check, reason = self.check, self.reason
        candidates = scale_counter(f"{self.family}.candidate_pairs")
        verified = scale_counter(f"{self.family}.verified_pairs")

        def pairs_in(bucket):
            _, bucket_members = bucket
            if len(bucket_members) < 2:
                return []
            pairs, examined = check(bucket_members)
            candidates.inc(examined)
            verified.inc(len(pairs))
            return [pair_flag(p, reason) for p in pairs]

        if self.band_entries is not None:
            members = members | "Bands" >> beam.FlatMap(self.band_entries)
        return members | "Buckets" >> BoundedBuckets(self.cap, self.family, then=pairs_in)


def _item_band_entries(element: Any, item_of: Callable[[Any], DedupItem], cfg: NearDupConfig):
    return near_band_entries(item_of(element), cfg)


def NearDupPairs(  # noqa: N802 - reads as a transform
    cfg: NearDupConfig,
    verify_at: float | None = None,
    family: str = "near",
    item_of: Callable[[Any], DedupItem] | None = None,
    banded: bool = False,
) -> BucketPairs:
    """DedupItems -> near_duplicate flags: MinHash bands, candidates verified by estimated
    Jaccard (at `verify_at`, by default with the margin LSHParams explains). `family` names
    its scale counters (the split's near-duplicate edges count apart from dedup's). With
    `item_of`, other elements, each made a DedupItem by it where its bands are made (no Map
    of its own: ~8 ms of a build's CPU per ParDo in the local runner, `global_combine`).
    `banded`: the elements are `near_band_entries` already, made by the stage that had the
    items (the split's, `outputs.spill_rows`)."""
    threshold = LSHParams(threshold=cfg.threshold).verify_threshold
    threshold = threshold if verify_at is None else verify_at
    entries = (
        None
        if banded
        else functools.partial(near_band_entries, cfg=cfg)
        if item_of is None
        else functools.partial(_item_band_entries, item_of=item_of, cfg=cfg)
    )
    return BucketPairs(
        family,
        "near_duplicate",
        entries,
        functools.partial(verify_candidates, threshold=threshold, cap=cfg.max_bucket),
        cfg.max_bucket,
    )


class EmbedFn(beam.DoFn):
    """Batches of DedupItems -> (id, embedding, content key), the embedder loaded once per
    worker by the first batch (`embed`, through `load_embedder`, the one access point): a worker
    that no record reaches never pays for loading it."""

    def process(self, batch):
        vectors = embed([item.text for item in batch])
        for item, vec in zip(batch, vectors, strict=True):
            yield item.id, vec, item.content_key()


def content_refiners(values: Iterable[str], bands: int) -> list[int]:
    """Per band, the refiner that splits an oversized bucket: the band's slot of the content
    values' MinHash, mixed so its low bits are uniform (verifiers/buckets.py says why)."""
    return [mix64(slot) for slot in set_minhash(values, num_perm=bands)]


def semantic_band_entries(embedded, cfg: SemanticDupConfig):
    """(band key, (refiner, member)) per hyperplane band; the intent is part of the key because
    records of different intents are never semantic duplicates (content_key.same_content)."""
    _, vector, key = embedded
    planes = hyperplanes(len(vector), cfg.bands * cfg.rows, HYPERPLANE_SEED)
    intent = "|".join(key.intent)
    refiners = content_refiners(key.values, cfg.bands)
    for band, bits in enumerate(hyperplane_bands(vector, planes, cfg.rows)):
        yield f"{band}:{intent}:{bits}", (refiners[band], embedded)


def semantic_bucket_pairs(members: list, cfg: SemanticDupConfig) -> tuple[list, int]:
    """(pairs close enough and about the same content, candidates examined) in one bucket; a
    bucket still over `max_bucket` after refinement is searched in id-ordered chunks."""
    by_id = {rid: (vec, key) for rid, vec, key in members}
    found, examined = [], 0
    for ids in chunks(list(by_id), cfg.max_bucket):
        matrix = np.stack([by_id[i][0] for i in ids]) if ids else np.zeros((0, 1))
        pairs, n = neighbour_pairs(ids, matrix, cfg.threshold, cfg.neighbours)
        examined += n
        found += [(a, b) for a, b in pairs if same_content(by_id[a][1], by_id[b][1])]
    return found, examined


def SemanticPairs(cfg: SemanticDupConfig) -> BucketPairs:  # noqa: N802 - reads as a transform
    """(id, embedding, content key) -> semantic_duplicate flags: hyperplane bands, usearch
    neighbours inside each bucket, kept when about the same content."""
    return BucketPairs(
        "semantic",
        "semantic_duplicate",
        functools.partial(semantic_band_entries, cfg=cfg),
        functools.partial(semantic_bucket_pairs, cfg=cfg),
        cfg.max_bucket,
    )


class ApplyDropsFn(beam.DoFn):
    """Route each trajectory: kept, or rejected with the duplicate it lost to. Its input is
    one id's group of trajectories and flags (one Flatten and GroupByKey of both: what
    CoGroupByKey does with four more transforms, tagging every element on the way)."""

    def __init__(self, run_dir: str):
        self.run_dir = run_dir

    def setup(self):
        self.counters = StageCounters("dedup", self.run_dir)

    def process(self, joined):
        _, grouped = joined
        trajectories, flags = [], []
        for value in grouped:
            (trajectories if isinstance(value, Trajectory) else flags).append(value)
        flag = pick_reason(flags) if flags else None
        for copy, trajectory in enumerate(trajectories):
            # Equal ids are equal content (ids hash it): one copy stays unless flagged.
            if copy:
                flag = ("exact_duplicate", trajectory.id)
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
        items = trajectories | "Items" >> beam.Map(dedup_item)
        flags = []
        if cfg.exact:
            flags.append(
                items
                | "ExactKey" >> beam.Map(lambda item: (exact_hash(item.text), item.id))
                | "GroupExact" >> beam.GroupByKey()
                | "ExactDrops" >> beam.FlatMap(exact_group_drops)
            )
        if cfg.near.enabled:
            flags.append(items | "NearDupPairs" >> NearDupPairs(cfg.near))
        if cfg.semantic.enabled:
            flags.append(
                items
                | "BatchTexts" >> beam.BatchElements(min_batch_size=8, max_batch_size=64)
                | "Embed" >> beam.ParDo(EmbedFn())
                | "SemanticPairs" >> SemanticPairs(cfg.semantic)
            )
        keyed = trajectories | "KeyById" >> beam.Map(lambda t: (t.id, t))
        return (
            [keyed, *flags]
            | "FlattenFlags" >> beam.Flatten()
            | "JoinFlags" >> beam.GroupByKey()
            | "ApplyDrops"
            >> beam.ParDo(ApplyDropsFn(self.run_dir)).with_outputs(REJECTED, DEAD, main=KEPT)
        )
