"""Rejected and dead-letter records as sharded JSON Lines, with a per-shard summary.

    records -> canonical JSON -> total bytes (one number per folder) -> shard count
            -> (shard by id hash) -> GroupByKey -> one file per shard, lines sorted
            -> per-shard summary (rows, counts by stage and reason) -> summary.json

Several folders (the build's `rejected/` and `dead_letter/`) go through one set of transforms,
keyed by folder (`folder_of` each record): each folder's files are what it would get alone, and
the local runner pays its per-ParDo set-up (~8 ms of CPU each, issue 30) once instead of once
per folder. The records come in as one PCollection: a Flatten of each folder's lines held them
all a second time (+20 MB at 1,600 blueprint tasks).

Rejections carry whole trajectories (~11-24 KB each), so at 1M tasks these outputs reach tens
of GB: one shard per `JSONL_SHARD_MB` keeps each file (and the worker that writes it) bounded.
The summary is what the manifest counts from, so nothing reads the records back to count them.
"""

from __future__ import annotations

import functools
import hashlib
import json
import math
from collections import Counter
from collections.abc import Callable
from typing import Any

import apache_beam as beam

from trajforge.pipelines import io, ownership
from trajforge.pipelines.transforms.global_combine import CombineEachKey
from trajforge.pipelines.transforms.text_file import write_line
from trajforge.schemas import Record

#: Target uncompressed size of one JSON Lines shard.
JSONL_SHARD_MB = 64


class ShardSummary(Record):
    """What one shard (or, summed, the whole folder) holds: counts by (stage, reason)."""

    shards: tuple[tuple[str, int], ...] = ()  # (file name, rows)
    counts: tuple[tuple[str, str, int], ...] = ()  # (stage, reason or "", rows)

    def merged(self, other: ShardSummary) -> ShardSummary:
        counts = Counter({(s, r): n for s, r, n in self.counts})
        counts.update({(s, r): n for s, r, n in other.counts})
        return ShardSummary(
            shards=tuple(sorted(self.shards + other.shards)),
            counts=tuple((s, r, n) for (s, r), n in sorted(counts.items())),
        )


def num_shards(total_bytes: int, shard_bytes: int) -> int:
    """One shard per `shard_bytes` (at least one)."""
    return max(1, math.ceil(total_bytes / shard_bytes))


def shard_of(record_id: str, line: str, shards: int) -> int:
    """A stable shard for a record: the same on every worker and rerun (never Python's hash)."""
    digest = hashlib.blake2b(f"{record_id}\n{line}".encode(), digest_size=8).digest()
    return int.from_bytes(digest, "little") % shards


def shard_file(sub: str, shard: int, shards: int) -> str:
    return f"{sub}-{shard:05d}-of-{shards:05d}.jsonl"


def write_shard(group, run_dir: str) -> tuple[str, ShardSummary]:
    """Write one shard (lines sorted, so a retried write is identical); its folder and its
    summary."""
    (sub, shard, shards), entries = group
    entries = sorted(entries)
    name = shard_file(sub, shard, shards)
    with ownership.create(run_dir, f"{sub}/{name}") as f:
        for _, line in entries:
            f.write(line.encode("utf-8") + b"\n")
    counts = Counter((stage, reason) for (stage, reason), _ in entries)
    return sub, ShardSummary(
        shards=((name, len(entries)),),
        counts=tuple((s, r, n) for (s, r), n in sorted(counts.items())),
    )


def summary_json(summaries: list[ShardSummary]) -> str:
    total = ShardSummary()
    for s in summaries:
        total = total.merged(s)
    return json.dumps(total.model_dump(mode="json"), sort_keys=True)


def _entry(record, folder_of: Callable[[Any], str]):
    """(its folder, (record id, (stage, reason), its line))."""
    line = record.to_json()
    return folder_of(record), (
        record.record_id,
        (record.stage, getattr(record, "reason", "")),
        line,
    )


def _keyed(entry, total_bytes: dict[str, int], shard_bytes: int):
    sub, (rid, key, line) = entry
    n = num_shards(total_bytes[sub], shard_bytes)
    return (sub, shard_of(rid, line, n), n), (key, line)


def _write_summary(sub: str, text: str, run_dir: str) -> str:
    return write_line(text, f"{sub}/{io.JSONL_SUMMARY_FILE}", run_dir)


class WriteJsonlFolders(beam.PTransform):
    """Rejection / DeadLetter records -> for each folder of `folders`,
    <run_dir>/<folder>/<folder>-SSSSS-of-NNNNN.jsonl and its summary.json (for no records too:
    no shard, an empty summary); `folder_of(record)` is one of `folders`."""

    def __init__(
        self,
        run_dir: str,
        folder_of: Callable[[Any], str],
        folders: tuple[str, ...],
        shard_bytes: int = JSONL_SHARD_MB * 2**20,
    ):
        super().__init__()
        self.run_dir = run_dir
        self.folder_of = folder_of
        self.folders = folders
        self.shard_bytes = shard_bytes

    def expand(self, records):
        lines = records | "ToJson" >> beam.Map(_entry, self.folder_of)
        # A folder with no records has no total: nothing of it is keyed, so none is read.
        totals = beam.pvalue.AsDict(lines | "TotalBytes" >> beam.CombinePerKey(LineBytes()))
        return (
            lines
            | "KeyByShard" >> beam.Map(_keyed, totals, self.shard_bytes)
            | "GroupByShard" >> beam.GroupByKey()
            | "WriteShard" >> beam.Map(write_shard, self.run_dir)
            | "Summaries"
            >> CombineEachKey(SummaryJson(), self.folders, _write_summary, self.run_dir)
        )


def _one_folder(_record, sub: str) -> str:
    return sub


class WriteShardedJsonl(beam.PTransform):
    """Rejection / DeadLetter records -> <run_dir>/<sub>/<sub>-SSSSS-of-NNNNN.jsonl + summary
    (`WriteJsonlFolders` with one folder)."""

    def __init__(self, run_dir: str, sub: str, shard_bytes: int = JSONL_SHARD_MB * 2**20):
        super().__init__()
        self.run_dir = run_dir
        self.sub = sub
        self.shard_bytes = shard_bytes

    def expand(self, records):
        folder_of = functools.partial(_one_folder, sub=self.sub)
        return records | WriteJsonlFolders(self.run_dir, folder_of, (self.sub,), self.shard_bytes)


class LineBytes(beam.CombineFn):
    """Bytes of the JSON Lines output (each line and its newline) of (id, key, line) entries."""

    def create_accumulator(self) -> int:
        return 0

    def add_input(self, total: int, entry) -> int:
        return total + len(entry[2].encode("utf-8")) + 1

    def merge_accumulators(self, totals) -> int:
        return sum(totals)

    def extract_output(self, total: int) -> int:
        return total


class SummaryJson(beam.CombineFn):
    """Shard summaries -> the folder's summary.json text (`summary_json`); written for no
    shards too (empty counts), so every run has one to count from."""

    def create_accumulator(self) -> list[ShardSummary]:
        return []

    def add_input(self, acc: list[ShardSummary], summary: ShardSummary) -> list[ShardSummary]:
        acc.append(summary)
        return acc

    def merge_accumulators(self, accs) -> list[ShardSummary]:
        return [s for acc in accs for s in acc]

    def extract_output(self, acc: list[ShardSummary]) -> str:
        return summary_json(acc)
