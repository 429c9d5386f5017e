r"""Assign splits by leakage cluster, then write every output's shards (Beam composite).

    records -> rows spilled -> SplitKeys                          \ one combine: (keys,
            -> near-duplicate band entries -> flags in bounded    / pairs) -> SplitPlan
               MinHash buckets
            -> SplitPlan (side input) + splits.json
    spilled rows' references + plan -> (output, split, shard) -> GroupByKey of references
            -> Parquet (canonical rows given their split and cluster) -> spill cleared

Only the small per-record keys meet on one worker; each shard's rows meet on the worker that
writes the shard, read back from the run directory (`spill.py`). Shards of a split are filled
by rank (id order), so they differ by at most one record.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Callable, Iterable, Iterator
from typing import Any

import apache_beam as beam

from trajforge.generators import data_caches
from trajforge.pipelines import heap, io, packed_rows, shards, spill, splits, views
from trajforge.pipelines.config import BuildConfig, NearDupConfig
from trajforge.pipelines.json_size import Seen, json_length
from trajforge.pipelines.split_figures import FIGURES_KEY, row_figures, split_figures
from trajforge.pipelines.transforms.dedup import (
    DedupItem,
    NearDupPairs,
    dedup_item,
    near_band_entries,
)
from trajforge.pipelines.transforms.global_combine import CombineAll
from trajforge.pipelines.transforms.text_file import write_line
from trajforge.schemas import DatasetRecord

MESSAGES_VIEW = "messages"  # the view whose token counts the card reports


#: The tagged outputs of `SpillRows`: per record, where its rows of each output were
#: spilled, and its near-duplicate band entries (when the split looks for near duplicates).
SPILLED = "spilled"
NEAR_BANDS = "near_bands"


def split_keys(record: DatasetRecord, outputs: tuple[str, ...]) -> splits.SplitKeys:
    """The record's cluster keys and bytes per output: all the plan gathers of a record (its
    near-duplicate edges are found in bounded buckets, `near_flags`)."""
    return _split_keys(record, {o: shards.rows_of(o, record) for o in outputs})


def spill_rows(
    record: DatasetRecord,
    outputs: tuple[str, ...],
    run_dir: str,
    folder: str,
    near: NearDupConfig | None = None,
) -> Iterator[Any]:
    """The record's `split_keys` and, tagged `SPILLED`, its rows of every output packed (one
    blob per output, `packed_rows` says why) and spilled to its file under `folder` (`spill`
    says why): one reference per output, in order. The rows are built once for both: they
    were built again for the spill once the plan was known (~1.8 ms of a retail record's
    CPU, and the record itself waited for the plan, packed, ~9 KB each; issue 30). Views do
    not depend on the split; the canonical row, spilled with the record's placeholder split
    and cluster, is given the plan's when the shard is written (`_assigned`). With `near`, the
    record's near-duplicate band entries too, tagged `NEAR_BANDS` (`near_flags` says why)."""
    rows = {o: shards.rows_of(o, record) for o in outputs}
    yield _split_keys(record, rows)
    blobs = [packed_rows.pack(rows[o]) for o in outputs]
    yield beam.pvalue.TaggedOutput(SPILLED, spill.write(run_dir, folder, record.id, blobs))
    del rows, blobs
    if near is not None:
        for entry in near_band_entries(_near_item(record), near):
            yield beam.pvalue.TaggedOutput(NEAR_BANDS, entry)


def _split_keys(record: DatasetRecord, rows: dict[str, list[dict[str, Any]]]) -> splits.SplitKeys:
    """`split_keys` from the record's rows already built (`spill_rows` packs the same rows)."""
    seen: Seen = {}  # shared prefix messages measured once (json_size.py)
    sizes = {o: sum(json_length(r, seen) for r in rs) for o, rs in rows.items()}
    tokens = [r["num_tokens"] for r in rows.get(MESSAGES_VIEW, ())]
    return splits.SplitKeys(
        id=record.id,
        keys=record.split_keys,
        bytes_by_output=sizes,
        figures=row_figures(record, tokens),
    )


def near_flags(band_entries, near: NearDupConfig, threshold: float):
    """Near-duplicate flags for the split clusters from the records' band entries (`spill_rows`
    makes them): found by the same bounded-bucket MinHash transform as dedup, verified at
    `threshold`. The entries were made from the records in a stage of their own, which read
    every record again (the local runner kept the records for it, and sent them to a worker
    process at once) and parsed each trajectory again (the views had just parsed it, one
    record at a time): at 1,600 blueprint tasks the largest worker's peak, 534 MB, was that
    stage's (issue 30)."""
    return band_entries | "SplitNearPairs" >> NearDupPairs(
        near, verify_at=threshold, family="split_near", banded=True
    )


def _near_item(record: DatasetRecord) -> DedupItem:
    """The record's trajectory as dedup saw it, under the record's id."""
    return dedup_item(views.trajectory_of(record), record.id)


class GatherSplitInputs(beam.CombineFn):
    """SplitKeys and near-duplicate flags (larger id, (reason, smaller id)) -> (the keys by
    id, the sorted distinct (smaller, larger) pairs): what the plan needs, in one combine (two
    ToLists, a Distinct and a pair map before; `plan_splits` sorts its items and pairs itself,
    so the plan is the same)."""

    def create_accumulator(self) -> tuple[list[splits.SplitKeys], set[tuple[str, str]]]:
        return [], set()

    def add_input(self, acc, value):
        if isinstance(value, splits.SplitKeys):
            acc[0].append(value)
        else:
            acc[1].add((value[1][1], value[0]))
        return acc

    def merge_accumulators(self, accs):
        items, pairs = self.create_accumulator()
        for acc in accs:
            items += acc[0]
            pairs |= acc[1]
        return items, pairs

    def extract_output(self, acc) -> tuple[list[splits.SplitKeys], list[tuple[str, str]]]:
        return sorted(acc[0], key=lambda i: i.id), sorted(acc[1])


def plan_json(
    plan: splits.SplitPlan, items: list[splits.SplitKeys], fractions: dict[str, float]
) -> str:
    """splits.json: the leakage report, cluster statistics and the kept rows' per-split
    figures (read into the manifest; `figures` goes to its own sections)."""
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
            "balance": splits.split_balance(plan, fractions).model_dump(mode="json"),
            FIGURES_KEY: split_figures(
                (plan.split_of[i.id], i.figures) for i in items if i.figures is not None
            ),
        },
        sort_keys=True,
    )


class WriteOutputs(beam.PTransform):
    """DatasetRecords -> leakage-guarded splits -> data/ and views/<name>/ Parquet shards."""

    def __init__(self, run_dir: str, config: BuildConfig, staging: str = ""):
        super().__init__()
        self.run_dir = run_dir
        self.staging = staging
        out = config.output
        self.outputs = (shards.CANONICAL, *out.views)
        self.fractions = out.splits.model_dump(include={"train", "validation", "golden"})
        self.seed = out.splits.seed
        self.golden_templates = out.splits.golden_templates
        self.cap_golden = out.splits.cap_golden
        threshold = out.splits.near_dup_threshold
        self.near = None if threshold is None else config.quality.dedup.near
        self.near_threshold = threshold or 0.0
        self.target_bytes = out.shard_mb * 1024 * 1024
        self.train_shards = out.num_shards

    def _plan(self, gathered) -> splits.SplitPlan:
        items, pairs = gathered
        return splits.plan_splits(
            items,
            self.fractions,
            self.seed,
            None,
            self.target_bytes,
            self.train_shards,
            pairs,
            golden_templates=self.golden_templates,
            cap_golden=self.cap_golden,
        )

    def _plan_and_report(self, gathered) -> splits.SplitPlan:
        """The plan, with splits.json written where it is made (the end of the gathering
        combine: no Map for the plan, the report and the file each, ~8 ms of a build's CPU
        apiece in the local runner, `global_combine` says why)."""
        plan = self._plan(gathered)
        write_line(plan_json(plan, gathered[0], self.fractions), io.SPLITS_FILE, self.run_dir)
        return plan

    def expand(self, records):
        folder = spill.folder_of(self.staging)
        spilled = records | "SpillRows" >> beam.FlatMap(
            spill_rows, self.outputs, self.run_dir, folder, self.near
        ).with_outputs(SPILLED, NEAR_BANDS, main="keys")
        inputs = [spilled.keys]
        if self.near is not None:
            inputs.append(near_flags(spilled[NEAR_BANDS], self.near, self.near_threshold))
        plan = (
            inputs
            | "FlattenSplitInputs" >> beam.Flatten()
            | "GatherSplitInputs" >> CombineAll(GatherSplitInputs(), self._plan_and_report)
        )
        (  # one keying, one GroupByKey and one writer for every output: the local runner pays
            # set-up per transform and per fused stage, and five outputs had five of each
            spilled[SPILLED]  # references wait for the plan, not the records (`spill_rows`)
            | "KeyRows" >> beam.FlatMap(_keyed_refs, self.outputs, beam.pvalue.AsSingleton(plan))
            | "GroupShards" >> beam.GroupByKey()
            | "WriteShards"
            >> beam.Map(_write, self.run_dir, self.staging, beam.pvalue.AsSingleton(plan))
            | "ShardsWritten"  # every shard counted, then the spill cleared
            >> CombineAll(beam.combiners.CountCombineFn(), _clear_spill, self.run_dir, folder)
        )
        return records


ShardKey = tuple[str, str, int, int]  # (output, split, shard, number of shards)


def _keyed_refs(
    refs: list[spill.SpillRef], outputs: tuple[str, ...], plan: splits.SplitPlan
) -> list[tuple[ShardKey, spill.SpillRef]]:
    """A record's spilled rows of every output (`spill_rows`, in `outputs`' order), each
    reference keyed by the shard that holds them."""
    return [
        ((o, *plan.shard_of(o, ref.record_id)), ref) for o, ref in zip(outputs, refs, strict=True)
    ]


def _write(
    group: tuple[ShardKey, Iterable[spill.SpillRef]],
    run_dir: str,
    base: str,
    plan: splits.SplitPlan | None = None,
) -> str:
    """One shard, into the run's staging folder `base` (renamed to `data/`, `views/` when the
    build ends, so no reader sees a split still being written); `base` "": straight into
    `data/` and `views/` (the transform used on its own, in tests). The rows stay spilled, one
    record's at a time read and unpacked while the shard is measured and again while it is
    written: unpacked all at once, the largest `step_prefix` shard of a 1,600-task build held its
    10,275 rows next to a 64 MB row group at the build's peak (issue 30). `plan`: the split
    plan, which gives canonical rows their split and cluster (`_assigned`; needed for them).
    `group`'s references are typed `Iterable`, as `GroupByKey` gives them: Beam 2.78 resolves
    this module's string annotations and its construction type check refused `list` there."""
    (output, split, shard, n), refs = group
    data_caches.release_generation_caches()  # generating is over (data_caches.py says why)
    heap.release_free_heap()
    rel = shards.shard_rel(output, split, shard, n)
    rel = f"{base}/{rel}" if base else rel
    ordered = sorted(refs, key=lambda r: r.record_id)
    assign = _assigned(split, plan) if output == shards.CANONICAL else None
    source = functools.partial(_rows_in_order, ordered, run_dir, spill.folder_of(base), assign)
    shards.write_streamed(rel, source, shards.features_of(output), run_dir)
    heap.release_free_heap()  # the next shard starts from what is live (heap.py says why)
    return io.join(run_dir, rel)


def _clear_spill(_shards: int, run_dir: str, folder: str) -> int:
    """Once every shard is written (the count is their barrier): the spill files go."""
    return spill.clear(run_dir, folder)


def _rows_in_order(
    refs: list[spill.SpillRef],
    run_dir: str,
    folder: str,
    assign: Callable[[dict[str, Any]], dict[str, Any]] | None = None,
) -> Iterator[dict[str, Any]]:
    """The rows of records in id order, each record's sorted by id: ids are `<record id>` or
    `<record id>:<n>` and record ids have one length, so this is the shard's id order
    (`shards.write_streamed` checks it and sorts the whole shard if not). `assign`: applied
    to each row (the canonical rows' split and cluster)."""
    for ref in refs:
        rows = sorted(spill.read_rows(run_dir, folder, ref), key=lambda r: r["id"])
        yield from rows if assign is None else map(assign, rows)


def _assigned(
    split: str, plan: splits.SplitPlan | None
) -> Callable[[dict[str, Any]], dict[str, Any]]:
    """A canonical row (spilled before the plan, `spill_rows`) with the split and cluster
    the plan gave its record: the row of the record with them set, as `io.dataset_row`
    dumps it (the fields keep their places)."""
    if plan is None:
        raise ValueError("canonical rows need the split plan (`_write(..., plan=)`)")

    def assign(row: dict[str, Any]) -> dict[str, Any]:
        row["split"], row["cluster_id"] = split, plan.cluster_of[row["id"]]
        return row

    return assign
