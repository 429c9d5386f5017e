"""Assign splits by leakage cluster, then write every output's shards (Beam composite).

    records -> SplitKeys -> (one list) -> SplitPlan (side input) + splits.json
    records + plan -> record with split -> per output: (split, shard) -> GroupByKey -> Parquet

Only the small per-record keys meet on one worker; each shard's rows meet on the worker that
writes the shard. Shards of a split are filled by rank (id order), so they differ by at most
one record.
"""

from __future__ import annotations

import json

import apache_beam as beam

from trajforge.pipelines import io, shards, splits
from trajforge.pipelines.config import BuildConfig
from trajforge.schemas import DatasetRecord, Trajectory


def split_keys(
    record: DatasetRecord, outputs: tuple[str, ...], near: tuple | None
) -> splits.SplitKeys:
    """The record's cluster keys, MinHash (when near-dup grouping is on) and bytes per output."""
    signature: tuple[int, ...] = ()
    if near is not None:
        from trajforge.pipelines.transforms.dedup import dedup_text
        from trajforge.verifiers.dedup import minhash_signature

        text = dedup_text(Trajectory.from_json(record.trajectory_json))
        signature = minhash_signature(text, num_perm=near[0])
    sizes = {
        o: sum(len(json.dumps(r, default=str)) for r in shards.rows_of(o, record)) for o in outputs
    }
    return splits.SplitKeys(
        id=record.id, keys=record.split_keys, signature=signature, bytes_by_output=sizes
    )


def plan_json(plan: splits.SplitPlan, items: list[splits.SplitKeys]) -> str:
    """splits.json: the leakage report and cluster statistics (read into the manifest)."""
    sizes: dict[str, int] = {}
    for cluster in plan.cluster_of.values():
        sizes[cluster] = sizes.get(cluster, 0) + 1
    rows = {s: sum(1 for v in plan.split_of.values() if v == s) for s in splits.SPLIT_NAMES}
    return json.dumps(
        {
            "leakage": splits.leakage_report(items, plan),
            "clusters": len(sizes),
            "largest_cluster": max(sizes.values(), default=0),
            "near_duplicate_pairs": len(plan.near_dup_pairs),
            "rows": rows,
            "shards": plan.shards,
        },
        sort_keys=True,
    )


class WriteOutputs(beam.PTransform):
    """DatasetRecords -> leakage-guarded splits -> data/ and views/<name>/ Parquet shards."""

    def __init__(self, run_dir: str, config: BuildConfig):
        super().__init__()
        self.run_dir = run_dir
        out = config.output
        self.outputs = (shards.CANONICAL, *out.views)
        self.fractions = out.splits.model_dump(include={"train", "validation", "golden"})
        self.seed = out.splits.seed
        near = config.quality.dedup.near
        self.near = (
            None
            if out.splits.near_dup_threshold is None
            else (near.num_perm, out.splits.near_dup_threshold, near.bands, near.rows)
        )
        self.target_bytes = out.shard_mb * 1024 * 1024
        self.train_shards = out.num_shards

    def _plan(self, items: list[splits.SplitKeys]) -> splits.SplitPlan:
        near = None if self.near is None else self.near[1:]
        return splits.plan_splits(
            items, self.fractions, self.seed, near, self.target_bytes, self.train_shards
        )

    def expand(self, records):
        keys = (
            records
            | "SplitKeys" >> beam.Map(split_keys, self.outputs, self.near)
            | "GatherKeys" >> beam.combiners.ToList()
        )
        plan = keys | "PlanSplits" >> beam.Map(self._plan)
        (
            plan
            | "SplitsReport" >> beam.Map(plan_json, beam.pvalue.AsSingleton(keys))
            | "WriteSplitsReport"
            >> beam.io.WriteToText(
                io.join(self.run_dir, io.SPLITS_FILE), num_shards=1, shard_name_template=""
            )
        )
        plan_side = beam.pvalue.AsSingleton(plan)
        for output in self.outputs:
            (
                records
                | f"Key{output}" >> beam.FlatMap(_keyed_rows, output, plan_side)
                | f"Group{output}" >> beam.GroupByKey()
                | f"Write{output}" >> beam.Map(_write, output, self.run_dir)
            )
        return records


def _keyed_rows(record: DatasetRecord, output: str, plan: splits.SplitPlan):
    split, shard, n = plan.shard_of(output, record.id)
    assigned = record.model_copy(update={"split": split, "cluster_id": plan.cluster_of[record.id]})
    for row in shards.rows_of(output, assigned):
        yield (split, shard, n), row


def _write(group: tuple[tuple[str, int, int], list], output: str, run_dir: str) -> str:
    (split, shard, n), rows = group
    path = shards.shard_path(run_dir, output, split, shard, n)
    shards.write_shard(path, list(rows), shards.features_of(output))
    return path
