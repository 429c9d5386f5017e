"""The exported row: flat, Parquet-friendly, loadable with `datasets.load_dataset("parquet")`."""

from __future__ import annotations

from typing import Literal

from trajforge.schemas.base import SCHEMA_VERSION, Record

Split = Literal["train", "validation", "golden"]


class DatasetRecord(Record):
    id: str
    schema_version: int = SCHEMA_VERSION
    split: Split  # "train" until the split stage assigns the record's cluster a split
    domain: str
    task_id: str
    task_types: tuple[str, ...]
    complexity: int
    persona_id: str
    mode: str
    messages_json: str  # OpenAI chat format, tool-call arguments as JSON strings
    tools_json: str  # OpenAI `tools=[...]` list
    num_turns: int
    num_tool_calls: int
    termination: str
    outcome_passed: bool
    final_state_hash: str
    judge_scores_json: str = "{}"
    trajectory_json: str  # the full Trajectory record, for lossless round trips
    template_id: str = ""  # domain/task types/complexity: the task's template
    split_keys: tuple[str, ...] = ()  # cluster keys that must not straddle splits
    cluster_id: str = ""  # the leakage cluster the split was assigned by
    # Difficulty (rollout builds with `rollout.attempts` K > 1; unmeasured: 0, 0, None, []):
    attempts: int = 0  # K rollouts of this row's task
    successes: int = 0  # how many of them passed every gate
    pass_rate: float | None = None  # successes / attempts
    pass_hat_k: tuple[float, ...] = ()  # pass^k for k = 1..K (tau2-bench), from successes of K
