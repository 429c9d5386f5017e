"""`load_conversations` reads the `messages` view of a real build, falls back to the canonical
columns for a run built without it, and both paths give identical conversations."""

from __future__ import annotations

import json

import pyarrow.parquet as pq
import pytest

from trajforge.finetune.data import has_messages_view, load_conversations
from trajforge.pipelines.cli import main
from trajforge.schemas import Message

BUILD = """
name: loader
domain: retail
num_tasks: 12
seed: 3
mode: blueprint
roles:
  agent: {{kind: scripted, responder: blueprint}}
quality: {{dedup: {{semantic: {{enabled: false}}}}}}
output:
  num_shards: 2
  views: {views}
  splits: {{train: 0.75, validation: 0.0, golden: 0.25}}
"""


def _build(base, views: str):
    (base / "build.yaml").write_text(BUILD.format(views=views))
    out = base / "run"
    args = ["build", "--config", str(base / "build.yaml"), "--output", str(out), "--no-progress"]
    assert main(args) == 0
    return out


@pytest.fixture(scope="module")
def with_view(tmp_path_factory):
    return _build(tmp_path_factory.mktemp("with-view"), "[messages]")


@pytest.fixture(scope="module")
def without_view(tmp_path_factory):
    return _build(tmp_path_factory.mktemp("without-view"), "[steps]")


@pytest.mark.parametrize("split", ["train", "golden"])
def test_view_and_canonical_columns_give_identical_conversations(with_view, split):
    from_view = load_conversations(with_view, split, source="view")
    from_columns = load_conversations(with_view, split, source="canonical")
    assert from_view and from_view == from_columns
    assert load_conversations(with_view, split) == from_view  # auto: the view
    calls = [c for conv in from_view for m in conv.messages for c in m.tool_calls]
    assert calls and all(isinstance(c.arguments, dict) for c in calls)
    assert all(isinstance(t["function"]["parameters"], dict) for t in from_view[0].tools)


def test_one_training_message_rule_for_both_paths(with_view):
    """The canonical rows may hold a user turn that said only ###STOP###; the view drops it,
    keeps each tool result's `name`, and the fallback applies the same rule."""
    from trajforge.generators.prompts import training_message
    from trajforge.pipelines.views import chat_message

    rows = pq.read_table(sorted((with_view / "data").glob("train-*.parquet"))[0]).to_pylist()
    assert any(m.get("name") for m in json.loads(rows[0]["messages_json"]) if m["role"] == "tool")
    loaded = load_conversations(with_view, "train", source="canonical")
    tools = [m for c in loaded for m in c.messages if m.role == "tool"]
    assert tools and all(m.name for m in tools)
    stop = Message(role="user", content="###STOP###")
    assert training_message(stop) is None and chat_message(stop) is None
    said = Message(role="user", content="Thanks! ###STOP###")
    assert training_message(said).content == chat_message(said)["content"] == "Thanks!"


def test_runs_without_the_view_fall_back_to_the_canonical_columns(with_view, without_view):
    assert has_messages_view(with_view) and not has_messages_view(without_view)
    for split in ("train", "golden"):
        assert load_conversations(without_view, split) == load_conversations(with_view, split)


def test_the_view_through_datasets_and_save_to_disk_loads_the_same(with_view, tmp_path):
    """What a trainer does with a build: `load_dataset(run)`, filter or not, `save_to_disk`;
    `finetune sft --data` on that folder trains on exactly the run's conversations."""
    import datasets

    from trajforge.finetune.sources import load_split

    loaded = datasets.load_dataset(str(with_view), cache_dir=str(tmp_path / "cache"))
    loaded.save_to_disk(str(tmp_path / "saved"))
    for split in ("train", "golden"):
        assert load_split(tmp_path / "saved", split) == load_conversations(with_view, split)
