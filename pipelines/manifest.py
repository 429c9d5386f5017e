"""`manifest.json`: what a build did, as one typed record built once at the end of the build.

The sections are typed where the build decides them (counts, accounting, models, status);
the summaries other modules write as side files during the build (`splits.json`,
`diversity.json`, `difficulty.json`) stay their writers' JSON objects. On disk the manifest is
`Manifest.to_json()`: sorted keys, and the optional sections (`diversity`, `difficulty`) left
out when the build did not produce them, the same shape readers have always read. The card and
the report take the typed record (the build hands over its own; `read_manifest` reads a finished
run's); `trajforge show` and data_value read the JSON, from any trajforge version.
"""

from __future__ import annotations

import json
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, ValidationError

from trajforge.pipelines import files

MANIFEST_FILE = "manifest.json"

#: How a build ended; the manifest is written only once it has.
Status = Literal["succeeded", "failed"]


class _Part(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class SplitRows(_Part):
    """Rows of one split, in total and per shard file name (from the Parquet footers)."""

    rows: int
    shards: dict[str, int]


class Outputs(_Part):
    """What the run directory holds: kept rows per split, rejections per stage and reason,
    dead letters per stage."""

    kept: int
    rejected: int
    dead_lettered: int
    splits: dict[str, SplitRows]
    rejected_by_stage: dict[str, dict[str, int]]
    dead_letter_by_stage: dict[str, int]


class Accounting(_Part):
    """inputs = kept + rejected + dead_lettered, in attempts when `rollout.attempts` > 1."""

    unit: Literal["attempt", "task"]
    attempts_per_task: int
    inputs: int
    kept: int
    rejected: int
    dead_lettered: int
    tasks_refused_before_attempts: int
    tasks_without_passing_attempt: int
    holds: bool


class ModelRef(_Part):
    kind: str
    model: str


class FilterCount(_Part):
    """One configured filter: rows it kept and its rejections by reason."""

    name: str
    kept: int
    rejected: dict[str, int]


class LocalProcesses(_Part):
    """The local worker processes the build ran with, and why that many."""

    processes: int
    source: str
    reason: str


class Manifest(_Part):
    name: str
    config: dict[str, Any]  # the BuildConfig as JSON (readers load it with any version)
    config_hash: str
    versions: dict[str, str]
    models: dict[str, ModelRef]  # agent, user, judge
    runner: str
    inputs: int
    outputs: Outputs
    accounting: Accounting
    stage_counts: dict[str, int]
    filters: list[FilterCount]
    tokens: dict[str, int]
    llm: dict[str, dict[str, Any]]  # per role: calls, cached_calls, retries.<cause>, latency_ms
    dedup_scale: dict[str, dict[str, int | float]]  # LSH families' pairs and bucket sizes
    local_processes: LocalProcesses
    splits: dict[str, Any]  # splits.json (balance, leakage, shards) plus the gap table
    diversity: dict[str, Any] | None = None  # diversity.json, when the stage ran
    difficulty: dict[str, Any] | None = None  # difficulty.json (`rollout.attempts` > 1)
    wall_time_s: float
    finished_at: str
    status: Status
    failure: str | None

    def to_dict(self) -> dict[str, Any]:
        """The JSON object written to disk (absent optional sections left out)."""
        absent = {k for k in ("diversity", "difficulty") if getattr(self, k) is None}
        return self.model_dump(mode="json", exclude=absent)

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), indent=2, sort_keys=True)


class ManifestError(ValueError):
    """A run's manifest.json that this trajforge's `Manifest` cannot read."""


def read_manifest(run_dir: str) -> Manifest:
    """A finished run's manifest.json as the typed record; one clear error naming the first
    field that does not fit (a run written by another trajforge version) and the fix."""
    with files.open_read(files.join(run_dir, MANIFEST_FILE)) as f:
        text = f.read()
    try:
        return Manifest.model_validate_json(text)
    except ValidationError as err:
        first = err.errors()[0]
        field = ".".join(str(p) for p in first["loc"]) or "(the whole file)"
        raise ManifestError(
            f"{run_dir}/manifest.json: field `{field}`: {first['msg']} ({err.error_count()} "
            "problem(s)); it was written by another trajforge version: read it with that "
            "version, or rebuild the run with this one (`trajforge build --resume` answers "
            "every call from the run's cache)"
        ) from None


class _StatusOnly(BaseModel):
    """The one field `read_status` needs; the rest of a manifest (any version's) is ignored."""

    model_config = ConfigDict(frozen=True, extra="ignore")

    status: Status


def read_status(run_dir: str) -> Status | None:
    """How the run's build ended, from its manifest.json; None when it has none, or one that
    cannot be read (half written, or no known `status`): a build that did not end. Only the
    status, so a failed run of another trajforge version can still be shown."""
    path = files.join(run_dir, MANIFEST_FILE)
    if not files.exists(path):
        return None
    with files.open_read(path) as f:
        text = f.read()
    try:
        return _StatusOnly.model_validate_json(text).status
    except ValidationError:
        return None
