"""Training views: round trips from the canonical records, a real chat template, one SFT step."""

import json

import datasets
import pytest

from trajforge.generators.prompts import SIMULATOR_TOKENS
from trajforge.pipelines import views
from trajforge.schemas import Message, Trajectory


def canonical(run):
    ds = datasets.load_dataset(str(run), "data")
    return {r["id"]: (split, r) for split in ds for r in ds[split]}


def view(run, name):
    return datasets.load_dataset(str(run), "default" if name == "messages" else name)


def test_messages_view_round_trips_to_the_trajectory(built_run):
    records = canonical(built_run)
    ds = view(built_run, "messages")
    assert sum(ds[s].num_rows for s in ds) == len(records)
    for split in ds:
        for row in ds[split]:
            assert records[row["id"]][0] == split
            trajectory = Trajectory.from_json(records[row["id"]][1]["trajectory_json"])
            expected = views.chat_messages(trajectory)
            decoded = [Message.model_validate(_drop_none(m)) for m in row["messages"]]
            assert [_drop_none(m) for m in row["messages"]] == [_drop_none(m) for m in expected]
            assert len(decoded) >= len(trajectory.messages) - 1  # only a bare ###STOP### goes
            assert row["tools"] == json.loads(records[row["id"]][1]["tools_json"])
            text = json.dumps(row["messages"])
            assert not any(t in text for t in SIMULATOR_TOKENS)
            calls = [c for m in row["messages"] for c in m.get("tool_calls", ())]
            assert calls and all(isinstance(c["function"]["arguments"], dict) for c in calls)
            assert row["num_tokens"] == views.estimate_tokens(row["messages"], row["tools"])


def _drop_none(message):
    out = {k: v for k, v in message.items() if v is not None}
    if "tool_calls" in out:
        out["tool_calls"] = [{k: v for k, v in c.items() if k != "type"} for c in out["tool_calls"]]
        out["tool_calls"] = [
            {"id": c["id"], "name": c["function"]["name"], "arguments": c["function"]["arguments"]}
            for c in out["tool_calls"]
        ]
    return out


def test_step_prefix_steps_and_sharegpt_views_match_the_records(built_run):
    records = canonical(built_run)
    messages = view(built_run, "messages")
    full = {r["id"]: r["messages"] for s in messages for r in messages[s]}
    prefix = view(built_run, "step_prefix")
    for split in prefix:
        for row in prefix[split]:
            trajectory_id, _ = row["id"].split(":")
            conversation = full[trajectory_id]
            n = len(row["prompt"])
            assert row["prompt"] == conversation[:n]  # exactly what the model saw
            assert row["completion"] == [conversation[n]]
            assert conversation[n]["role"] == "assistant"
    assistant_turns = sum(m["role"] == "assistant" for c in full.values() for m in c)
    assert sum(prefix[s].num_rows for s in prefix) == assistant_turns

    steps = view(built_run, "steps")
    by_traj = {}
    for split in steps:
        for row in steps[split]:
            by_traj.setdefault(row["id"].split(":")[0], []).append(row)
    for rid, (_, rec) in records.items():
        trajectory = Trajectory.from_json(rec["trajectory_json"])
        rows = sorted(by_traj.get(rid, []), key=lambda r: r["step_index"])
        assert [r["tool_name"] for r in rows] == [s.call.name for s in trajectory.steps]
        assert [r["arguments"] for r in rows] == [dict(s.call.arguments) for s in trajectory.steps]
        diffs = [[(d["path"], d["before"], d["after"]) for d in r["state_diff"]] for r in rows]
        assert diffs == [
            [(d.path, d.before, d.after) for d in s.state_diff] for s in trajectory.steps
        ]
        assert all(r["outcome_passed"] for r in rows) and rows[-1]["is_last"]
        assert set(rows[0]["judge_scores"]) == set(json.loads(rec["judge_scores_json"]))

    sharegpt = view(built_run, "sharegpt")
    row = sharegpt["train"][0]
    assert {t["from"] for t in row["conversations"]} == {
        "human",
        "gpt",
        "function_call",
        "observation",
    }
    call = next(t for t in row["conversations"] if t["from"] == "function_call")
    assert isinstance(json.loads(call["value"])["arguments"], dict)
    assert json.loads(row["tools"])[0]["parameters"]["type"] == "object"


def test_messages_render_with_qwen25_template_arguments_as_objects(built_run):
    from trl.chat_template_utils import qwen2_5_chat_template

    tokenizer = _tokenizer([], qwen2_5_chat_template)
    ds = view(built_run, "messages")
    for split in ds:
        for row in ds[split]:
            text = tokenizer.apply_chat_template(
                row["messages"], tools=row["tools"], tokenize=False
            )
            calls = [c for m in row["messages"] for c in m.get("tool_calls", ())]
            assert text.count('<tool_call>\n{"name": "') == len(calls)
            for call in calls:
                rendered = json.dumps(
                    {"name": call["function"]["name"], "arguments": call["function"]["arguments"]}
                )
                assert rendered in text  # an object, not a JSON-encoded string
            assert '"arguments": "' not in text
            assert "###STOP###" not in text


def _tokenizer(texts, template):
    """A small BPE tokenizer trained here on the rendered rows (no hub download)."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    special = ["<|endoftext|>", "<|im_start|>", "<|im_end|>"]
    tk = Tokenizer(models.BPE(unk_token=None))
    tk.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tk.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=800, special_tokens=special, initial_alphabet=pre_tokenizers.ByteLevel.alphabet()
    )
    tk.train_from_iterator(texts or ["hello"], trainer=trainer)
    tok = PreTrainedTokenizerFast(
        tokenizer_object=tk, eos_token="<|im_end|>", pad_token="<|endoftext|>"
    )
    tok.chat_template = template
    return tok


@pytest.mark.timeout(600)
def test_sft_trainer_takes_the_messages_view_unchanged(built_run, tmp_path):
    import torch
    from transformers import Qwen2Config, Qwen2ForCausalLM
    from trl import SFTConfig, SFTTrainer
    from trl.chat_template_utils import qwen2_5_chat_template

    ds = view(built_run, "messages")["train"]
    bootstrap = _tokenizer([], qwen2_5_chat_template)
    texts = [
        bootstrap.apply_chat_template(r["messages"], tools=r["tools"], tokenize=False) for r in ds
    ]
    tokenizer = _tokenizer(texts, qwen2_5_chat_template)
    torch.manual_seed(0)
    config = Qwen2Config(
        vocab_size=len(tokenizer),
        hidden_size=32,
        intermediate_size=64,
        num_hidden_layers=1,
        num_attention_heads=2,
        num_key_value_heads=1,
        max_position_embeddings=8192,
    )
    model = Qwen2ForCausalLM(config)
    args = SFTConfig(
        output_dir=str(tmp_path / "sft"),
        max_steps=1,
        per_device_train_batch_size=2,
        max_length=1024,
        report_to=[],
        save_strategy="no",
        use_cpu=True,
        dataloader_num_workers=0,
    )
    trainer = SFTTrainer(model=model, args=args, train_dataset=ds, processing_class=tokenizer)
    result = trainer.train()
    assert result.global_step == 1 and result.training_loss > 0
