"""Trainer-ready views of the canonical records (pure functions, no Beam).

Each view turns one `DatasetRecord` into rows of a fixed `Features` schema (`features.py`, what
`datasets.Features` writes):

- `messages`: `messages` + `tools`, what `SFTTrainer` and
  `tokenizer.apply_chat_template(messages, tools=tools)` take unchanged;
- `step_prefix`: one `prompt`/`completion` row per assistant turn, the prompt being exactly the
  context the model saw at that step (step-level SFT and evaluation);
- `steps`: one row per tool execution with its state diff and reward components (RL);
- `sharegpt`: `conversations` of `from`/`value` turns (LLaMA-Factory's tool-use layout).

Tool-call `arguments`, tool `parameters` and state-diff values differ in shape per tool, and an
Arrow struct would union every tool's keys (filling the others with nulls). They are stored as
`Json()` (Arrow's JSON extension type over a string, as `datasets.Json()`): `load_dataset`
decodes them back to the exact dicts, so templates render `"arguments": {...}`, never a
double-encoded string. Each chat message is one `Json()` value for the same reason: as a struct,
Arrow would give every message every key (`tool_calls: None` on a user turn, `tool_call_id:
None` on an assistant turn), and Llama 3.x's (`'tool_calls' in message`) and Hermes' (`tool_calls
is not defined`) templates raise on those. A message carries only its own keys: `content` unless
an assistant turn only calls tools, `tool_calls`, a tool result's `tool_call_id` and `name`
(vLLM's Hermes template requires it). Call ids are 9 alphanumeric characters, which Mistral's
templates require (`generators.prompts.template_call_id`); tests/finetune/test_view_templates.py
renders every row of real builds with each pinned family's template and Mistral's.

The simulator's control tokens (`###STOP###` ...) are removed from the text, and a turn left
empty by that is dropped: a model must not learn to emit them.
"""

from __future__ import annotations

import functools
import json
import math
from collections.abc import Callable
from typing import Any, Literal

from trajforge.generators.prompts import training_message
from trajforge.pipelines.features import Features, Json, List, Value
from trajforge.schemas import DatasetRecord, Message, Trajectory

ViewName = Literal["messages", "step_prefix", "steps", "sharegpt"]
VIEW_NAMES: tuple[ViewName, ...] = ("messages", "step_prefix", "steps", "sharegpt")
#: Documented token estimate: ~4 characters per token of the JSON-rendered conversation
#: (within ~15% of BPE tokenizers such as Qwen2.5's and Llama-3's on English chat + JSON).
CHARS_PER_TOKEN = 4.0

#: One chat message as JSON (see the module doc): only the keys it has.
_MESSAGE = Json()
_TOOL = {
    "type": Value("string"),
    "function": {"name": Value("string"), "description": Value("string"), "parameters": Json()},
}
_KEYS = {"id": Value("string"), "task_id": Value("string"), "domain": Value("string")}
#: The task's difficulty (`rollout.attempts` > 1; null / empty when unmeasured): trainers
#: weight or filter training rows by it.
_DIFFICULTY = {"pass_rate": Value("float64"), "pass_hat_k": List(Value("float64"))}

FEATURES: dict[ViewName, Features] = {
    "messages": Features(
        {
            **_KEYS,
            "messages": List(_MESSAGE),
            "tools": List(_TOOL),
            "num_tokens": Value("int64"),
            **_DIFFICULTY,
        }
    ),
    "step_prefix": Features(
        {
            **_KEYS,
            "step_index": Value("int64"),
            "prompt": List(_MESSAGE),
            "completion": List(_MESSAGE),
            "tools": List(_TOOL),
            "num_tokens": Value("int64"),
            **_DIFFICULTY,
        }
    ),
    "steps": Features(
        {
            **_KEYS,
            "step_index": Value("int64"),
            "turn": Value("int64"),
            "tool_name": Value("string"),
            "arguments": Json(),
            "observation": Value("string"),
            "is_error": Value("bool"),
            "mutating": Value("bool"),
            "state_diff": List({"path": Value("string"), "before": Json(), "after": Json()}),
            "is_last": Value("bool"),
            "outcome_passed": Value("bool"),
            "state_match": Value("bool"),
            "outputs_communicated": Value("bool"),
            "judge_scores": Json(),
            **_DIFFICULTY,
        }
    ),
    "sharegpt": Features(
        {
            **_KEYS,
            "system": Value("string"),
            "tools": Value("string"),
            "conversations": List({"from": Value("string"), "value": Value("string")}),
        }
    ),
}


def chat_message(message: Message) -> dict[str, Any] | None:
    """One message in the HF chat shape with arguments as dicts and only the keys it has; None
    when only a control token was said (the turn is dropped). The rule is `training_message`'s."""
    trained = training_message(message)
    if trained is None:
        return None
    return trained.chat_dict()


def chat_messages(trajectory: Trajectory) -> list[dict[str, Any]]:
    out = [chat_message(m) for m in trajectory.messages]
    return [m for m in out if m is not None]


def estimate_tokens(*parts: Any) -> int:
    """`CHARS_PER_TOKEN` estimate of the rendered length of messages and tools."""
    chars = sum(len(json.dumps(p, ensure_ascii=False)) for p in parts)
    return math.ceil(chars / CHARS_PER_TOKEN)


def _json_chars(value: Any) -> int:
    return len(json.dumps(value, ensure_ascii=False))


def list_json_chars(item_chars: list[int]) -> int:
    """Length of `json.dumps` of a list from its items' lengths: "[" + ", ".join + "]"."""
    return 2 + sum(item_chars) + 2 * max(len(item_chars) - 1, 0)


def _keys(record: DatasetRecord) -> dict[str, Any]:
    return {"id": record.id, "task_id": record.task_id, "domain": record.domain}


def _difficulty(record: DatasetRecord) -> dict[str, Any]:
    return {"pass_rate": record.pass_rate, "pass_hat_k": list(record.pass_hat_k)}


@functools.lru_cache(maxsize=1)
def _parse(trajectory_json: str) -> Trajectory:
    """The last record's trajectory, parsed once: its views are built one after the other (to
    size them for the split plan, then to key them by shard) and each parsed the same JSON
    again (4 views, 4 validations of a whole trajectory per pass). A string caches its hash,
    so a hit costs no rehash; the Trajectory is frozen, so the views may share it."""
    return Trajectory.from_json(trajectory_json)


def trajectory_of(record: DatasetRecord) -> Trajectory:
    """The record's trajectory through the same one-entry cache: the split stage parses it
    for the views' sizes and, right after, for the near-duplicate flags (issue 30)."""
    return _parse(record.trajectory_json)


_trajectory = trajectory_of


@functools.lru_cache(maxsize=1)
def _chat(trajectory_json: str) -> tuple[dict[str, Any], ...]:
    """The last record's chat messages, built once for its three chat views and both passes
    (sizing, keying): `training_message` sanitises every text, ~5 ms a retail record each time.
    The views' rows share these dicts; nothing writes to a row, so sharing is safe (the
    Trajectory under them is frozen for the same reason)."""
    return tuple(chat_messages(_parse(trajectory_json)))


def _chat_messages(record: DatasetRecord) -> list[dict[str, Any]]:
    return list(_chat(record.trajectory_json))


def _tools(record: DatasetRecord) -> list[dict[str, Any]]:
    return json.loads(record.tools_json)


def messages_rows(record: DatasetRecord) -> list[dict[str, Any]]:
    messages, tools = _chat_messages(record), _tools(record)
    return [
        {
            **_keys(record),
            "messages": messages,
            "tools": tools,
            "num_tokens": estimate_tokens(messages, tools),
            **_difficulty(record),
        }
    ]


def step_prefix_rows(record: DatasetRecord) -> list[dict[str, Any]]:
    messages, tools = _chat_messages(record), _tools(record)
    sizes = [_json_chars(m) for m in messages]  # each message dumped once, not once per prefix
    tools_chars = _json_chars(tools)
    rows = []
    for i, message in enumerate(messages):
        if message["role"] != "assistant":
            continue
        prompt = messages[:i]
        chars = list_json_chars(sizes[:i]) + list_json_chars(sizes[i : i + 1]) + tools_chars
        rows.append(
            {
                **_keys(record),
                "id": f"{record.id}:{len(rows)}",
                "step_index": len(rows),
                "prompt": prompt,
                "completion": [message],
                "tools": tools,
                "num_tokens": math.ceil(chars / CHARS_PER_TOKEN),  # = estimate_tokens(...)
                **_difficulty(record),
            }
        )
    return rows


def steps_rows(record: DatasetRecord) -> list[dict[str, Any]]:
    trajectory = _trajectory(record)
    outcome = trajectory.outcome
    scores = json.loads(record.judge_scores_json)
    last = len(trajectory.steps) - 1
    return [
        {
            **_keys(record),
            "id": f"{record.id}:{step.index}",
            "step_index": step.index,
            "turn": step.turn,
            "tool_name": step.call.name,
            "arguments": dict(step.call.arguments),
            "observation": step.error if step.error is not None else (step.result or ""),
            "is_error": step.error is not None,
            "mutating": step.mutating,
            "state_diff": [
                {"path": d.path, "before": d.before, "after": d.after} for d in step.state_diff
            ],
            "is_last": i == last,
            "outcome_passed": bool(outcome and outcome.passed),
            "state_match": bool(outcome and outcome.state_match),
            "outputs_communicated": bool(outcome and outcome.outputs_communicated),
            "judge_scores": scores,
            **_difficulty(record),
        }
        for i, step in enumerate(trajectory.steps)
    ]


def _sharegpt_turns(messages: list[dict[str, Any]]) -> list[dict[str, str]]:
    """user -> human, assistant text -> gpt, each call -> function_call, tool -> observation."""
    turns = []
    for m in messages:
        if m["role"] == "user":
            turns.append({"from": "human", "value": m.get("content") or ""})
        elif m["role"] == "tool":
            turns.append({"from": "observation", "value": m.get("content") or ""})
        elif m["role"] == "assistant":
            if m.get("content"):
                turns.append({"from": "gpt", "value": m["content"]})
            for call in m.get("tool_calls", ()):
                fn = call["function"]
                value = json.dumps({"name": fn["name"], "arguments": fn["arguments"]})
                turns.append({"from": "function_call", "value": value})
    return turns


def sharegpt_rows(record: DatasetRecord) -> list[dict[str, Any]]:
    messages = _chat_messages(record)
    system = "\n".join(m.get("content") or "" for m in messages if m["role"] == "system")
    return [
        {
            **_keys(record),
            "system": system,
            "tools": json.dumps([t["function"] for t in _tools(record)]),
            "conversations": _sharegpt_turns([m for m in messages if m["role"] != "system"]),
        }
    ]


ROW_BUILDERS: dict[ViewName, Callable[[DatasetRecord], list[dict[str, Any]]]] = {
    "messages": messages_rows,
    "step_prefix": step_prefix_rows,
    "steps": steps_rows,
    "sharegpt": sharegpt_rows,
}


def view_rows(view: ViewName, record: DatasetRecord) -> list[dict[str, Any]]:
    return ROW_BUILDERS[view](record)
