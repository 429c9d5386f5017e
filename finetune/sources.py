"""Training conversations from any conversational dataset, behind one function.

`load_split(source, split)` takes what a trainer has at hand (`SFTConfig.data`):

- a trajforge run directory (`manifest.json` + `data/`): `data.load_conversations`;
- a `Dataset.save_to_disk` folder (a `Dataset`: its rows are the train split, or a
  `DatasetDict`);
- a folder in the Hub's layout (`data/<split>-*.parquet`, `.jsonl`, ... or a README with
  `configs`), read by `datasets.load_dataset(folder)`;
- a JSONL file (or a `.json` list): its rows are the train split, read with `json`, exactly;
- a Hub dataset id already in the local cache (a snapshot in the Hub cache, or a dataset
  `datasets.load_dataset(id)` prepared before). Nothing is downloaded: the lookup runs with
  the Hub offline, and an id that is not cached is an error saying how to fetch it.

Rows are TRL's conversational format: a `messages` column (role, content, `tool_calls` whose
`function.arguments` is an object or its JSON text, tool results with or without
`tool_call_id` / `name`) and an optional `tools` column (OpenAI tool list, as objects or JSON
text). A source that cannot be read, a missing column or a malformed row is one
`DataSourceError` line naming it and the fix (`trajforge finetune sft` exits 2).

Why a None-valued key counts as absent (in messages, call arguments and tool schemas, at any
depth; run directories are read exactly): `Dataset.from_list` stores them as structs that union
every row's keys, filling the absent ones with None, and `to_json` / `to_parquet` /
`save_to_disk` keep that padding. A template given `tool_calls: None` raises, and arguments
padded with `"email": null` would teach the model to pass parameters it never passed; in such
data an absent key and a None one cannot be told apart.
"""

from __future__ import annotations

import contextlib
import json
import re
from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path
from typing import Any

from huggingface_hub import constants, snapshot_download
from pydantic import ValidationError

from trajforge.finetune.data import (
    Conversation,
    has_messages_view,
    load_conversations,
    split_files,
)
from trajforge.schemas import Message, ToolCall

#: `owner/name` (or `name`) of a Hub dataset, when the source is no local path.
_HUB_ID = re.compile(r"[A-Za-z0-9][\w.-]*(/[\w.-]+)?")
_FORMAT = (
    "rows need a `messages` list of {role, content, tool_calls?, tool_call_id?, name?} "
    "(TRL's conversational format) and may have `tools`"
)


class DataSourceError(ValueError):
    """The training data cannot be used; the message names the source and the fix."""


def load_split(source: str | Path, split: str) -> list[Conversation] | None:
    """The conversations of `split` in `source` (any of the module doc's kinds), in row
    order; None when the source has no such split."""
    path = Path(source)
    if path.exists():
        return _local(path, str(source), split)
    return _cached_hub_dataset(str(source), split)


def has_split(source: str | Path, split: str) -> bool:
    """Whether `source` has `split`, without reading rows where the layout tells."""
    path = Path(source)
    if path.is_file():
        return split == "train"
    if is_run_dir(path):
        return bool(split_files(path, split))
    if (path / "dataset_dict.json").is_file():
        return split in json.loads((path / "dataset_dict.json").read_text()).get("splits", [])
    if (path / "state.json").is_file():
        return split == "train"
    return load_split(source, split) is not None


def load_training_conversations(source: str | Path, split: str = "train") -> list[Conversation]:
    """`load_split`, the split required."""
    found = load_split(source, split)
    if found is None:
        raise DataSourceError(f"{source}: no {split!r} split; {_splits_hint(split)}")
    return found


def _splits_hint(split: str) -> str:
    return (
        f"name the files {split}-*.parquet / {split}.jsonl, or save a DatasetDict with a "
        f"{split!r} split (a single Dataset or JSONL file is the train split)"
    )


def is_run_dir(path: Path) -> bool:
    """A trajforge run: `data/` beside its manifest, or canonical shards (`messages_json`)."""
    if not (path / "data").is_dir():
        return False
    if (path / "manifest.json").is_file() or has_messages_view(path):
        return True
    shards = sorted((path / "data").glob("*.parquet"))
    if not shards:
        return False
    # lazy, measured start-up cost: pyarrow ~100 ms
    import pyarrow.parquet as pq

    return "messages_json" in pq.read_schema(shards[0]).names


def _local(path: Path, name: str, split: str) -> list[Conversation] | None:
    if is_run_dir(path):
        if not split_files(path, split):
            return None
        return load_conversations(path, split)
    if path.is_file():
        return _file(path, name, split)
    if (path / "dataset_dict.json").is_file() or (path / "state.json").is_file():
        return _saved_to_disk(path, name, split)
    return _hub_layout(path, name, split)


def _file(path: Path, name: str, split: str) -> list[Conversation] | None:
    if path.suffix not in (".jsonl", ".json", ".parquet"):
        raise DataSourceError(
            f"{name}: not a JSONL, JSON or Parquet file; give a .jsonl file, a folder or a run"
        )
    if split != "train":
        return None  # one file is one split
    if path.suffix == ".parquet":
        with _offline():
            # lazy, measured start-up cost: datasets ~720 ms
            import datasets

            table = _readable(name, lambda: datasets.Dataset.from_parquet(str(path)))
        return _conversations(table, name, split)
    return _conversations(_json_rows(path, name), name, split)


def _json_rows(path: Path, name: str) -> list[dict[str, Any]]:
    """A JSONL file's rows (or a `.json` file holding one list), decoded exactly."""
    text = path.read_text()
    if path.suffix == ".json" and text.lstrip().startswith("["):
        try:
            return json.loads(text)
        except json.JSONDecodeError as err:
            raise DataSourceError(f"{name}: not valid JSON ({err})") from None
    rows = []
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            rows.append(json.loads(line))
        except json.JSONDecodeError as err:
            raise DataSourceError(f"{name} line {number}: not valid JSON ({err})") from None
    return rows


def _saved_to_disk(path: Path, name: str, split: str) -> list[Conversation] | None:
    # lazy, measured start-up cost: datasets ~720 ms
    import datasets

    loaded = _readable(name, lambda: datasets.load_from_disk(str(path)))
    return _pick(loaded, name, split)


def _hub_layout(path: Path, name: str, split: str) -> list[Conversation] | None:
    # lazy, measured start-up cost: datasets ~720 ms
    import datasets

    with _offline():
        loaded = _readable(name, lambda: datasets.load_dataset(str(path)))
    return _pick(loaded, name, split)


def _cached_hub_dataset(name: str, split: str) -> list[Conversation] | None:
    """A Hub id: its snapshot in the Hub cache (read like a local folder), else the dataset
    `load_dataset(id)` prepared earlier; the Hub stays offline either way."""
    if not _HUB_ID.fullmatch(name):
        raise DataSourceError(f"{name}: no such file or folder")
    # lazy, measured start-up cost: datasets ~720 ms
    import datasets

    with _offline():
        try:
            snapshot = snapshot_download(name, repo_type="dataset", local_files_only=True)
        except Exception:  # noqa: BLE001 - not in the Hub cache, whatever the reason
            snapshot = None
        if snapshot is not None:
            return _local(Path(snapshot), name, split)
        try:
            loaded = datasets.load_dataset(name)
        except Exception:  # noqa: BLE001 - not in the datasets cache either
            raise DataSourceError(
                f"{name}: no such file or folder, and no Hub dataset of that id in the local "
                f"cache (HF_HOME); nothing is downloaded here: fetch it first with "
                f"`hf download --repo-type dataset {name}` or give a local path"
            ) from None
    return _pick(loaded, name, split)


@contextlib.contextmanager
def _offline() -> Iterator[None]:
    """The Hub unreachable while `datasets` resolves a source: a cached id must never turn
    into a download (both libraries read their flag when called)."""
    # lazy, measured start-up cost: datasets ~720 ms
    import datasets

    saved = datasets.config.HF_HUB_OFFLINE, constants.HF_HUB_OFFLINE
    datasets.config.HF_HUB_OFFLINE = constants.HF_HUB_OFFLINE = True
    try:
        yield
    finally:
        datasets.config.HF_HUB_OFFLINE, constants.HF_HUB_OFFLINE = saved


def _readable(name: str, read: Any) -> Any:
    try:
        return read()
    except Exception as err:  # noqa: BLE001 - any reader failure is the same user error
        first = str(err).strip().splitlines()[0] if str(err).strip() else type(err).__name__
        raise DataSourceError(
            f"{name}: cannot be read as a dataset ({type(err).__name__}: {first}); give a run "
            "directory, a save_to_disk folder, a folder of data/<split>-*.parquet, a JSONL "
            "file or a cached Hub id"
        ) from None


def _pick(loaded: Any, name: str, split: str) -> list[Conversation] | None:
    """A split of a DatasetDict; a lone Dataset is the train split."""
    # lazy, measured start-up cost: datasets ~720 ms
    import datasets

    if isinstance(loaded, datasets.DatasetDict):
        if split not in loaded:
            return None
        return _conversations(loaded[split], name, split)
    return _conversations(loaded, name, split) if split == "train" else None


def _conversations(rows: Iterable[Mapping[str, Any]], name: str, split: str) -> list[Conversation]:
    columns = getattr(rows, "column_names", None)
    if columns is not None:
        if "messages" not in columns:
            raise DataSourceError(
                f"{name}: no `messages` column (columns: {', '.join(columns)}); {_FORMAT}"
            )
        rows = rows.select_columns([c for c in ("id", "messages", "tools") if c in columns])
    out = []
    for index, row in enumerate(rows):
        where = f"{name} ({split} row {index})"
        if "messages" not in row:
            raise DataSourceError(f"{where}: no `messages` key; {_FORMAT}")
        try:
            out.append(conversation_from_row(row, f"{split}-{index}"))
        except (ValidationError, ValueError, KeyError, TypeError) as err:
            raise DataSourceError(f"{where}: {_problem(err)}; {_FORMAT}") from None
    return out


def _problem(err: Exception) -> str:
    if isinstance(err, ValidationError):
        first = err.errors()[0]
        return f"{'.'.join(str(p) for p in first['loc'])}: {first['msg']}"
    if isinstance(err, KeyError):
        return f"missing key {err}"
    return str(err)


def conversation_from_row(row: Mapping[str, Any], fallback_id: str) -> Conversation:
    """One row in TRL's conversational format as a Conversation (see the module doc)."""
    messages = _decoded(row["messages"])
    if not isinstance(messages, list):
        raise ValueError("`messages` is not a list")
    tools = _decoded(row.get("tools")) or []
    row_id = row.get("id")
    return Conversation(
        id=row_id if isinstance(row_id, str) and row_id else fallback_id,
        messages=tuple(_linked([_message(m) for m in messages])),
        tools=tuple(_tool(t) for t in tools),
    )


def _decoded(value: Any) -> Any:
    """A JSON text (a `Json` column read by pyarrow, or data stored as strings) -> its value."""
    return json.loads(value) if isinstance(value, str) else value


def _no_nones(value: Any) -> Any:
    """`value` without None-valued dict keys, at any depth (Arrow's padding, see module doc)."""
    if isinstance(value, dict):
        return {k: _no_nones(v) for k, v in value.items() if v is not None}
    if isinstance(value, list):
        return [_no_nones(v) for v in value]
    return value


def _text(content: Any) -> str | None:
    """Message content: a string, a list of parts whose text parts are joined, or an object
    (a tool result some datasets keep as one) as its JSON text."""
    if content is None or isinstance(content, str):
        return content
    if isinstance(content, dict):
        return json.dumps(content, ensure_ascii=False)
    if isinstance(content, list):
        return "".join(p.get("text") or "" for p in content if isinstance(p, dict))
    raise ValueError(f"content is a {type(content).__name__}, not text")


def _call(raw: Mapping[str, Any]) -> ToolCall:
    fn = raw.get("function") or raw  # OpenAI's nesting, or a flat {name, arguments}
    args = fn.get("arguments")
    if args is None:
        args = {}
    if isinstance(args, str):
        try:
            args = json.loads(args)
        except json.JSONDecodeError:
            return ToolCall(
                id=raw.get("id") or "", name=fn["name"], parse_error="bad JSON", raw_arguments=args
            )
    return ToolCall(id=raw.get("id") or "", name=fn["name"], arguments=_no_nones(args))


def _message(raw: Any) -> Message:
    raw = _decoded(raw)
    if not isinstance(raw, dict):
        raise ValueError(f"a message is a {type(raw).__name__}, not an object")
    return Message(
        role=raw["role"],
        content=_text(raw.get("content")),
        tool_calls=tuple(_call(c) for c in raw.get("tool_calls") or ()),
        tool_call_id=raw.get("tool_call_id") or None,
        name=raw.get("name") or None,
        actor=raw.get("actor") or "agent",  # "user": dual control's marker (dropped in render)
    )


def _linked(messages: list[Message]) -> list[Message]:
    """Calls without an id get `call_<n>`; a tool result without `tool_call_id` answers the
    next unanswered call of the turn before it (OpenAI's order), and without `name` takes its
    call's. Templates that pair results with calls (Llama's one call per turn split, Mistral)
    need both."""
    out: list[Message] = []
    pending: list[ToolCall] = []
    names: dict[str, str] = {}
    count = 0
    for message in messages:
        if message.tool_calls:
            calls = []
            for call in message.tool_calls:
                if not call.id:
                    call = call.model_copy(update={"id": f"call_{count}"})
                count += 1
                calls.append(call)
                names[call.id] = call.name
            pending = list(calls)
            message = message.model_copy(update={"tool_calls": tuple(calls)})
        elif message.role == "tool":
            call_id = message.tool_call_id
            if call_id is None and pending:
                call_id = pending[0].id
            pending = [c for c in pending if c.id != call_id]
            name = message.name or names.get(call_id or "")
            message = message.model_copy(update={"tool_call_id": call_id, "name": name})
        out.append(message)
    return out


def _tool(raw: Any) -> dict[str, Any]:
    """One `tools` entry as `{"type": "function", "function": {...}}`, parameters an object."""
    raw = _decoded(raw)
    fn = dict(raw.get("function") or raw)
    fn["parameters"] = _decoded(fn.get("parameters")) or {"type": "object", "properties": {}}
    return {"type": "function", "function": _no_nones(fn)}
