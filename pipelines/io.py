"""Dataset IO: the Parquet schema, run-directory layout, reading outputs back, the card.

All file access goes through `files`, so the same code works on local paths and on gs://
(Dataflow) paths, and imports no Beam (the finished-run tools use it).
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from typing import Any, get_args, get_origin

import pyarrow as pa
import pyarrow.parquet as pq

from trajforge.pipelines import files
from trajforge.pipelines.manifest import Outputs, SplitRows
from trajforge.schemas import DatasetRecord

SPLITS = ("train", "validation", "golden")
VIEWS_DIR = "views"
SPLITS_FILE = "splits.json"
REPORT_FILE = "report.html"
SUCCESS_MARKER = "_SUCCESS"
DATA_DIR, REJECTED_DIR, DEAD_LETTER_DIR = "data", "rejected", "dead_letter"
DIVERSITY_FILE = "diversity.json"
DIFFICULTY_FILE = "difficulty.json"  # rollout.attempts > 1: the tasks' pass rates
DIFFICULTY_DIR = "difficulty"  # ... and one line per task
JSONL_SUMMARY_FILE = "summary.json"  # rejected/ and dead_letter/: counts per stage and reason


def join(base: str, *parts: str) -> str:
    return files.join(base, *parts)


def _arrow_type(annotation: Any) -> pa.DataType:
    origin = get_origin(annotation)
    if origin is tuple:
        return pa.list_(_arrow_type(get_args(annotation)[0]))
    if annotation is bool:
        return pa.bool_()
    if annotation is int:
        return pa.int64()
    if annotation is float:
        return pa.float64()
    return pa.string()  # str and Literal[...] of strings


def _arrow_field(name: str, annotation: Any) -> pa.Field:
    """`X | None` is a nullable column of X (e.g. `pass_rate`, unmeasured in most builds)."""
    args = get_args(annotation)
    if type(None) in args:
        (inner,) = (a for a in args if a is not type(None))
        return pa.field(name, _arrow_type(inner), nullable=True)
    return pa.field(name, _arrow_type(annotation), nullable=False)


def dataset_arrow_schema() -> pa.Schema:
    """Arrow schema of DatasetRecord, derived from the record so the two never drift."""
    return pa.schema(
        [_arrow_field(name, field.annotation) for name, field in DatasetRecord.model_fields.items()]
    )


def dataset_row(record: DatasetRecord) -> dict[str, Any]:
    row = record.model_dump(mode="python")
    return {k: list(v) if isinstance(v, tuple) else v for k, v in row.items()}


# ---------------------------------------------------------------------------------------------
# Run directory


def is_nonempty_dir(path: str) -> bool:
    if "://" not in path:
        return os.path.isdir(path) and any(os.scandir(path))
    return bool(files.match(join(path, "*")))


def delete_tree(path: str) -> None:
    if files.exists(path):
        files.delete([path])


def ensure_dir(path: str) -> None:
    if "://" not in path:
        os.makedirs(path, exist_ok=True)


def write_text(path: str, text: str) -> None:
    with files.create(path) as f:
        f.write(text.encode("utf-8"))


def read_text(path: str) -> str:
    with files.open_read(path) as f:
        return f.read().decode("utf-8")


def exists(path: str) -> bool:
    return files.exists(path)


def matching(pattern: str) -> list[str]:
    return files.match(pattern)


# ---------------------------------------------------------------------------------------------
# Reading outputs back (for the manifest's counts and for tests)


def split_files(run_dir: str, split: str) -> list[str]:
    return matching(join(run_dir, DATA_DIR, f"{split}-*.parquet"))


def parquet_rows(path: str) -> int:
    with files.open_read(path) as f:
        return pq.ParquetFile(f).metadata.num_rows


def iter_parquet(path: str, columns: list[str], batch_rows: int = 1024) -> Iterator[dict]:
    """Rows of `columns`, read a batch at a time: a shard can hold hundreds of MB."""
    with files.open_read(path) as f:
        for batch in pq.ParquetFile(f).iter_batches(batch_size=batch_rows, columns=columns):
            yield from batch.to_pylist()


def jsonl_records(run_dir: str, sub: str) -> Iterator[dict[str, Any]]:
    """Records of every shard of `sub`, streamed line by line (shards can be large)."""
    for path in matching(join(run_dir, sub, "*.jsonl")):
        with files.open_read(path) as f:
            for line in f:
                if line.strip():
                    yield json.loads(line)


def jsonl_counts(run_dir: str, sub: str) -> dict[tuple[str, str], int]:
    """(stage, reason) -> rows of `sub`, from the per-shard summary the build writes
    (`<sub>/summary.json`); a run without one (older builds) is counted by streaming."""
    path = join(run_dir, sub, JSONL_SUMMARY_FILE)
    if files.exists(path):
        return {(s, r): n for s, r, n in json.loads(read_text(path))["counts"]}
    counts: dict[tuple[str, str], int] = {}
    for r in jsonl_records(run_dir, sub):
        key = (r["stage"], r.get("reason", ""))
        counts[key] = counts.get(key, 0) + 1
    return counts


def count_outputs(run_dir: str) -> Outputs:
    """Rows per split and shard (Parquet footers), rejections per stage/reason and dead letters
    per stage (the JSON Lines summaries): nothing is read whole into memory."""
    splits: dict[str, SplitRows] = {}
    for split in SPLITS:
        files = split_files(run_dir, split)
        if files:
            rows = [parquet_rows(p) for p in files]
            splits[split] = SplitRows(
                rows=sum(rows),
                shards={p.rsplit("/", 1)[-1]: n for p, n in zip(files, rows, strict=True)},
            )
    rejected: dict[str, dict[str, int]] = {}
    for (stage, reason), n in sorted(jsonl_counts(run_dir, REJECTED_DIR).items()):
        rejected.setdefault(stage, {})[reason] = n
    dead: dict[str, int] = {}
    for (stage, _), n in sorted(jsonl_counts(run_dir, DEAD_LETTER_DIR).items()):
        dead[stage] = dead.get(stage, 0) + n
    return Outputs(
        kept=sum(s.rows for s in splits.values()),
        rejected=sum(sum(v.values()) for v in rejected.values()),
        dead_lettered=sum(dead.values()),
        splits=splits,
        rejected_by_stage=rejected,
        dead_letter_by_stage=dead,
    )
