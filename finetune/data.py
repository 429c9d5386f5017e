"""Training conversations from a run directory, through one loader.

Why the view first: a build writes a `messages`+`tools` Parquet view for trainers
(`views/messages/<split>-*.parquet`: each message as JSON text with only its own keys, older
runs as padded structs; tool `parameters` as JSON text that decodes to the exact objects), so
the loader reads what every other trainer reads, without parsing the canonical wire-format
strings. Runs built
without that view (`output.views` lacking `messages`) fall back to the canonical
`messages_json`/`tools_json` columns of `data/<split>-*.parquet`, normalised by the same
training-message rule the view applies (`generators.prompts.training_message`), so both paths
give identical conversations (tests/finetune/test_data_loader.py proves it on a real build).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict

from trajforge.generators.prompts import training_message
from trajforge.schemas import Difficulty, Message, ToolCall, Trajectory

COLUMNS = ("id", "messages_json", "tools_json")
#: Where pipelines write the `messages` view (pipelines.shards.output_dir("messages")).
MESSAGES_VIEW = "views/messages"
VIEW_COLUMNS = ("id", "messages", "tools")


class Conversation(BaseModel):
    """One training conversation: typed messages and the OpenAI `tools=[...]` list it used."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    id: str
    messages: tuple[Message, ...]
    tools: tuple[dict[str, Any], ...]


def _call(raw: dict[str, Any]) -> ToolCall:
    fn = raw["function"]
    args = fn.get("arguments") or {}
    call_id = raw.get("id") or ""
    if isinstance(args, str):
        try:
            args = json.loads(args)
        except json.JSONDecodeError:
            return ToolCall(id=call_id, name=fn["name"], parse_error="bad JSON", raw_arguments=args)
    return ToolCall(id=call_id, name=fn["name"], arguments=args)


def message_from_wire(raw: dict[str, Any]) -> Message:
    """An OpenAI-format message dict as a typed Message (arguments parsed into dicts; a key
    that is absent or None is the same thing)."""
    return Message(
        role=raw["role"],
        content=raw.get("content"),
        tool_calls=tuple(_call(c) for c in raw.get("tool_calls") or ()),
        tool_call_id=raw.get("tool_call_id"),
        name=raw.get("name"),
    )


def split_files(run_dir: str | Path, split: str, folder: str = "data") -> list[Path]:
    return sorted((Path(run_dir) / folder).glob(f"{split}-*.parquet"))


def has_messages_view(run_dir: str | Path) -> bool:
    return any((Path(run_dir) / MESSAGES_VIEW).glob("*.parquet"))


def _decoded(value: Any) -> Any:
    """A `datasets.Json` cell as pyarrow reads it (JSON text) -> the object it encodes."""
    return json.loads(value) if isinstance(value, str) else value


def message_from_view(raw: dict[str, Any] | str) -> Message:
    """A row's message of the `messages` view as a typed Message: a JSON text per message
    (runs since messages are stored as `Json`, see `pipelines.views`) or, in older runs, a
    struct padded with every key (None where absent) whose `arguments` are JSON text."""
    return message_from_wire(_decoded(raw))


def tool_from_view(raw: dict[str, Any]) -> dict[str, Any]:
    fn = raw["function"]
    return {"type": raw["type"], "function": {**fn, "parameters": _decoded(fn["parameters"])}}


def _view_conversations(run_dir: str | Path, split: str) -> list[Conversation]:
    # lazy, measured start-up cost: pyarrow ~100 ms
    import pyarrow.parquet as pq

    out = []
    for path in split_files(run_dir, split, MESSAGES_VIEW):
        for row in pq.read_table(path, columns=list(VIEW_COLUMNS)).to_pylist():
            out.append(
                Conversation(
                    id=row["id"],
                    messages=tuple(message_from_view(m) for m in row["messages"]),
                    tools=tuple(tool_from_view(t) for t in row["tools"]),
                )
            )
    return out


def _canonical_conversations(run_dir: str | Path, split: str) -> list[Conversation]:
    # lazy, measured start-up cost: pyarrow ~100 ms
    import pyarrow.parquet as pq

    out = []
    for path in split_files(run_dir, split):
        for row in pq.read_table(path, columns=list(COLUMNS)).to_pylist():
            wire = (message_from_wire(m) for m in json.loads(row["messages_json"]))
            out.append(
                Conversation(
                    id=row["id"],
                    messages=tuple(m for w in wire if (m := training_message(w)) is not None),
                    tools=tuple(json.loads(row["tools_json"])),
                )
            )
    return out


def load_conversations(
    run_dir: str | Path, split: str, source: Literal["auto", "view", "canonical"] = "auto"
) -> list[Conversation]:
    """Every conversation of `split` in the run directory, in file and row order: from the
    `messages` view when the run has one (`auto`), else from the canonical columns."""
    if not (Path(run_dir) / "data").is_dir():
        raise FileNotFoundError(f"{run_dir} has no data/ folder; is it a finished run directory?")
    if source == "view" or (source == "auto" and has_messages_view(run_dir)):
        return _view_conversations(run_dir, split)
    return _canonical_conversations(run_dir, split)


def split_trajectories(run_dir: str | Path, split: str) -> list[Trajectory]:
    """One trajectory per task of exactly `split` of a run, in file and row order (a build
    with k attempts per task may keep several rows of one task). Exactly `split`, never a
    `golden` split in its place: `--split test` evaluates, and compares against, the test
    split. One clear error naming the run's splits when it has no such rows."""
    # lazy, measured start-up cost: pyarrow ~100 ms
    import pyarrow.parquet as pq

    files = split_files(run_dir, split)
    if not files:
        present = sorted({p.name.split("-")[0] for p in (Path(run_dir) / "data").glob("*.parquet")})
        raise FileNotFoundError(
            f"--split {split}: {run_dir} has no data/{split}-*.parquet; its splits: "
            f"{', '.join(present) or 'none'}"
        )
    by_task: dict[str, Trajectory] = {}
    for path in files:
        for row in pq.read_table(path, columns=["trajectory_json"]).to_pylist():
            trajectory = Trajectory.model_validate_json(row["trajectory_json"])
            by_task.setdefault(trajectory.task.id, trajectory)
    if not by_task:
        raise FileNotFoundError(f"--split {split}: {run_dir} has no {split} rows to evaluate on")
    return list(by_task.values())


def load_task_difficulty(run_dir: str | Path, split: str = "golden") -> dict[str, Difficulty]:
    """task id -> the build's measured difficulty on exactly `split` (builds with
    `rollout.attempts` > 1), the baseline an evaluated model is compared against; empty when
    the build measured none."""
    return {t.task.id: t.difficulty for t in split_trajectories(run_dir, split) if t.difficulty}
