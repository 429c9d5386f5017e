"""`finetune sft --data` takes any conversational dataset: a `save_to_disk` folder (Dataset or
DatasetDict), a folder in the Hub's parquet layout, a JSONL file, a Hub id in the local cache,
or a run directory; every one gives the same conversations, and a source it cannot use is one
line naming it and the fix (exit 2)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from trajforge.finetune.sources import DataSourceError, has_split, load_split
from trajforge.schemas import Message, ToolCall

TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "get_order",
            "description": "Look up an order by id.",
            "parameters": {
                "type": "object",
                "properties": {"order_id": {"type": "string", "description": "The order id."}},
                "required": ["order_id"],
            },
        },
    },
    {
        "type": "function",
        "function": {
            "name": "find_user",
            "description": "Find a user by email.",
            "parameters": {
                "type": "object",
                "properties": {"email": {"type": "string", "description": "The email."}},
                "required": ["email"],
            },
        },
    },
]


def _row(i: int, linked: bool = True) -> dict:
    """A TRL conversational row: two different tools (so Arrow unions their argument keys);
    with `linked` False the tool results carry neither `tool_call_id` nor `name`."""
    calls = [
        {"id": f"a{i}", "type": "function", "function": {"name": "find_user", "arguments": {"email": f"u{i}@x.org"}}},
        {"id": f"b{i}", "type": "function", "function": {"name": "get_order", "arguments": {"order_id": f"#W{i}"}}},
    ]  # fmt: skip
    results = [{"role": "tool", "content": f"user_{i}"}, {"role": "tool", "content": "shipped"}]
    if linked:
        for result, call in zip(results, calls, strict=True):
            result.update(tool_call_id=call["id"], name=call["function"]["name"])
    return {
        "messages": [
            {"role": "system", "content": "You are a support agent."},
            {"role": "user", "content": f"Where is order #W{i}? I am u{i}@x.org."},
            {"role": "assistant", "tool_calls": calls},
            *results,
            {"role": "assistant", "content": f"Order #W{i} has shipped."},
        ],
        "tools": TOOLS,
    }


def _expected(i: int) -> list[Message]:
    calls = (
        ToolCall(id=f"a{i}", name="find_user", arguments={"email": f"u{i}@x.org"}),
        ToolCall(id=f"b{i}", name="get_order", arguments={"order_id": f"#W{i}"}),
    )
    return [
        Message(role="system", content="You are a support agent."),
        Message(role="user", content=f"Where is order #W{i}? I am u{i}@x.org."),
        Message(role="assistant", tool_calls=calls),
        Message(role="tool", content=f"user_{i}", tool_call_id=f"a{i}", name="find_user"),
        Message(role="tool", content="shipped", tool_call_id=f"b{i}", name="get_order"),
        Message(role="assistant", content=f"Order #W{i} has shipped."),
    ]


ROWS = {"train": [_row(i) for i in range(3)], "validation": [_row(7)]}


@pytest.fixture(autouse=True)
def own_datasets_cache(tmp_path, monkeypatch):
    """`load_dataset(folder)` caches by folder name: every test gets its own cache."""
    import datasets

    monkeypatch.setattr(datasets.config, "HF_DATASETS_CACHE", str(tmp_path / "hf-datasets"))


def _check(source, splits=("train", "validation")) -> None:
    for split in splits:
        loaded = load_split(source, split)
        assert loaded is not None and has_split(source, split)
        indices = [0, 1, 2] if split == "train" else [7]
        assert [list(c.messages) for c in loaded] == [_expected(i) for i in indices]
        assert [list(c.tools) for c in loaded] == [TOOLS] * len(indices)  # no padded keys
    assert load_split(source, "golden") is None and not has_split(source, "golden")


def _dict():
    import datasets

    return datasets.DatasetDict({s: datasets.Dataset.from_list(r) for s, r in ROWS.items()})


def test_save_to_disk_dataset_dict(tmp_path):
    _dict().save_to_disk(str(tmp_path / "saved"))
    _check(tmp_path / "saved")


def test_save_to_disk_dataset_is_the_train_split(tmp_path):
    import datasets

    datasets.Dataset.from_list(ROWS["train"]).save_to_disk(str(tmp_path / "saved"))
    _check(tmp_path / "saved", splits=("train",))
    assert load_split(tmp_path / "saved", "validation") is None


def test_hub_layout_parquet_folder(tmp_path):
    for split, ds in _dict().items():
        ds.to_parquet(str(tmp_path / "hub" / "data" / f"{split}-00000-of-00001.parquet"))
    _check(tmp_path / "hub")


def test_jsonl_file_written_by_datasets_and_by_hand(tmp_path):
    """`to_json` writes Arrow's padding (`tool_calls: null`, `"email": null` in get_order's
    arguments); a hand-written file has arguments as JSON strings and unlinked tool results."""
    import datasets

    datasets.Dataset.from_list(ROWS["train"]).to_json(str(tmp_path / "padded.jsonl"))
    assert '"tool_calls":null' in (tmp_path / "padded.jsonl").read_text()
    _check(tmp_path / "padded.jsonl", splits=("train",))

    by_hand = []
    for i in range(3):
        row = _row(i, linked=False)
        for call in row["messages"][2]["tool_calls"]:
            call["function"]["arguments"] = json.dumps(call["function"]["arguments"])
        by_hand.append(json.dumps(row))
    (tmp_path / "hand.jsonl").write_text("\n".join(by_hand) + "\n")
    _check(tmp_path / "hand.jsonl", splits=("train",))


def test_hub_id_in_the_local_caches_offline(tmp_path, monkeypatch):
    """A snapshot in the Hub cache is read like a folder; a dataset only `load_dataset(id)`
    prepared before comes from the datasets cache; neither touches the network."""
    import datasets
    from huggingface_hub import constants

    hub_cache = tmp_path / "hub-cache"
    monkeypatch.setattr(constants, "HF_HUB_CACHE", str(hub_cache))
    repo = hub_cache / "datasets--acme--toolchat"
    snapshot = repo / "snapshots" / ("0" * 40)
    for split, ds in _dict().items():
        ds.to_parquet(str(snapshot / "data" / f"{split}-00000-of-00001.parquet"))
    (repo / "refs").mkdir()
    (repo / "refs" / "main").write_text("0" * 40)
    _check("acme/toolchat")

    # A dataset prepared by an earlier `load_dataset("acme/prepared")`: its Arrow cache only.
    source = tmp_path / "src"
    for split, ds in _dict().items():
        ds.to_parquet(str(source / f"{split}-00000-of-00001.parquet"))
    files = {s: str(source / f"{s}-00000-of-00001.parquet") for s in ROWS}
    cache = Path(datasets.config.HF_DATASETS_CACHE)
    datasets.load_dataset("parquet", data_files=files, cache_dir=str(tmp_path / "prep"))
    prepared = next(p for p in (tmp_path / "prep" / "parquet").glob("*/*/*") if p.is_dir())
    target = cache / "acme___prepared" / "default" / "0.0.0" / "abc"
    shutil.copytree(prepared, target)
    for f in list(target.glob("parquet-*.arrow")):
        f.rename(target / f.name.replace("parquet-", "prepared-", 1))  # <name>-<split>.arrow
    _check("acme/prepared")
    assert not datasets.config.HF_HUB_OFFLINE or constants.HF_HUB_OFFLINE  # restored

    with pytest.raises(DataSourceError, match="acme/absent: .*local cache.*hf download"):
        load_split("acme/absent", "train")


def test_run_directory_still_loads(tmp_path):
    from tests.finetune.conftest import write_run

    run = write_run(tmp_path / "run", {"train": 2})  # canonical shards, no manifest
    assert len(load_split(run, "train")) == 2 and load_split(run, "validation") is None


@pytest.mark.parametrize(
    ("make", "message"),
    [
        (lambda p: p.write_text('{"text": "hi"}\n'), r"row 0\): no `messages` key"),
        (lambda p: p.write_text('{"messages": [\n'), r"line 1: not valid JSON"),
        (
            lambda p: p.write_text(json.dumps({"messages": [{"role": "robot", "content": "x"}]})),
            r"row 0\): role: Input should be",
        ),
    ],
    ids=["no-messages", "bad-json", "bad-role"],
)
def test_unusable_jsonl_is_one_line_naming_it(tmp_path, make, message):
    path = tmp_path / "data.jsonl"
    make(path)
    with pytest.raises(DataSourceError, match=message) as err:
        load_split(path, "train")
    assert str(path) in str(err.value) and "\n" not in str(err.value)


def test_a_dataset_without_messages_names_the_column(tmp_path):
    import datasets

    datasets.Dataset.from_list([{"prompt": "a", "completion": "b"}]).save_to_disk(
        str(tmp_path / "d")
    )
    with pytest.raises(
        DataSourceError, match=r"no `messages` column \(columns: prompt, completion\)"
    ):
        load_split(tmp_path / "d", "train")
    (tmp_path / "empty").mkdir()
    with pytest.raises(DataSourceError, match="cannot be read as a dataset"):
        load_split(tmp_path / "empty", "train")
    with pytest.raises(DataSourceError, match="no such file or folder"):
        load_split(tmp_path / "missing" / "x.jsonl", "train")


@pytest.fixture(scope="module")
def tiny_model(tmp_path_factory):
    from trajforge.finetune.canonical import canonical_messages
    from trajforge.finetune.families import get_family
    from trajforge.finetune.render import render_text
    from trajforge.finetune.tiny import save_tiny

    family = get_family("qwen2.5")
    texts = [render_text(canonical_messages(_expected(i), family), TOOLS, family) for i in range(8)]
    return save_tiny(tmp_path_factory.mktemp("tiny") / "base", texts, family)


def test_sft_trains_a_few_steps_from_a_save_to_disk_folder(tmp_path, tiny_model):
    from trajforge.finetune.config import SFTConfig
    from trajforge.finetune.sft import run_sft

    _dict().save_to_disk(str(tmp_path / "saved"))
    cfg = SFTConfig(
        data=str(tmp_path / "saved"),
        model=str(tiny_model),
        output=str(tmp_path / "out"),
        max_steps=2,
        epochs=2,  # three short rows may pack into one 1,024-token row
        row_tokens=1024,
        max_seq_len=1024,
        progress=False,
    )
    result = run_sft(cfg)
    assert result.steps == 2 and result.eval_loss is not None
    stats = json.loads((tmp_path / "out" / "data.json").read_text())
    assert [(s["split"], s["kept"]) for s in stats] == [("train", 3), ("validation", 1)]


def test_sft_cli_exits_2_on_a_dataset_without_messages(tmp_path, tiny_model, capsys):
    import datasets

    from trajforge.pipelines.cli import main

    datasets.Dataset.from_list([{"text": "hello"}]).save_to_disk(str(tmp_path / "plain"))
    capsys.readouterr()  # save_to_disk's progress bar
    argv = ["finetune", "sft", "--data", str(tmp_path / "plain"), "--model", str(tiny_model),
            "--output", str(tmp_path / "out"), "--no-progress"]  # fmt: skip
    assert main(argv) == 2
    errors = [line for line in capsys.readouterr().err.splitlines() if "error" in line]
    assert len(errors) == 1 and errors[0].startswith("error: ")
    assert "no `messages` column (columns: text)" in errors[0]
