"""Training conversations from a run directory, through one loader.

Why one function: the dataset-products work adds a native `messages`+`tools` Parquet view; until
it lands, conversations come from the `messages_json`/`tools_json` columns (OpenAI wire format,
arguments as JSON strings) of `data/<split>-*.parquet`. Pointing `load_conversations` at the
native view is the only change the rest of finetune needs.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict

from trajforge.schemas import Message, Task, ToolCall, Trajectory

COLUMNS = ("id", "messages_json", "tools_json")


class Conversation(BaseModel):
    """One training conversation: typed messages and the OpenAI `tools=[...]` list it used."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    id: str
    messages: tuple[Message, ...]
    tools: tuple[dict[str, Any], ...]


def _call(raw: dict[str, Any]) -> ToolCall:
    fn = raw["function"]
    args = fn.get("arguments") or {}
    if isinstance(args, str):
        try:
            args = json.loads(args)
        except json.JSONDecodeError:
            return ToolCall(
                id=raw.get("id", ""), name=fn["name"], parse_error="bad JSON", raw_arguments=args
            )
    return ToolCall(id=raw.get("id", ""), name=fn["name"], arguments=args)


def message_from_wire(raw: dict[str, Any]) -> Message:
    """An OpenAI-format message dict as a typed Message (arguments parsed into dicts)."""
    return Message(
        role=raw["role"],
        content=raw.get("content"),
        tool_calls=tuple(_call(c) for c in raw.get("tool_calls") or ()),
        tool_call_id=raw.get("tool_call_id"),
        name=raw.get("name"),
    )


def split_files(run_dir: str | Path, split: str) -> list[Path]:
    return sorted((Path(run_dir) / "data").glob(f"{split}-*.parquet"))


def load_conversations(run_dir: str | Path, split: str) -> list[Conversation]:
    """Every conversation of `split` in the run directory, in file and row order."""
    import pyarrow.parquet as pq

    files = split_files(run_dir, split)
    if not files and not (Path(run_dir) / "data").is_dir():
        raise FileNotFoundError(f"{run_dir} has no data/ folder; is it a finished run directory?")
    out: list[Conversation] = []
    for path in files:
        table = pq.read_table(path, columns=list(COLUMNS))
        for row in table.to_pylist():
            out.append(
                Conversation(
                    id=row["id"],
                    messages=tuple(message_from_wire(m) for m in json.loads(row["messages_json"])),
                    tools=tuple(json.loads(row["tools_json"])),
                )
            )
    return out


def load_tasks(run_dir: str | Path, split: str = "test") -> list[Task]:
    """The tasks of a run's held-out split (`golden` when the build has one, else `split`)."""
    import pyarrow.parquet as pq

    chosen = "golden" if split_files(run_dir, "golden") else split
    tasks = []
    for path in split_files(run_dir, chosen):
        for row in pq.read_table(path, columns=["trajectory_json"]).to_pylist():
            tasks.append(Trajectory.model_validate_json(row["trajectory_json"]).task)
    if not tasks:
        raise FileNotFoundError(f"{run_dir} has no {chosen} rows to evaluate on")
    return tasks
