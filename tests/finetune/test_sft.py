"""SFT end to end on a tiny model: the loss goes down, and save/load/resume round-trips."""

from __future__ import annotations

import json

import pytest
import torch

from tests.finetune.conftest import rendered_corpus, write_run
from trajforge.finetune.checkpoint import latest_checkpoint
from trajforge.finetune.config import SFTConfig
from trajforge.finetune.families import get_family
from trajforge.finetune.sft import run_sft
from trajforge.finetune.tiny import save_tiny
from trajforge.pipelines.cli import main


@pytest.fixture(scope="module")
def base(tmp_path_factory):
    root = tmp_path_factory.mktemp("sft")
    run = write_run(root / "run", {"train": 6, "validation": 2, "test": 1})
    model = save_tiny(root / "base", rendered_corpus("qwen2.5"), get_family("qwen2.5"))
    return run, model


def _cfg(base, out, **kw):
    run, model = base
    defaults = dict(data=str(run), model=str(model), output=str(out), progress=False, seed=3)
    return SFTConfig(**{**defaults, **kw})


def test_sft_cli_reduces_training_loss(base, tmp_path, capsys):
    """The README command, shrunk: a few full fine-tuning steps on CPU lower the loss."""
    run, model = base
    out = tmp_path / "out"
    argv = ["finetune", "sft", "--data", str(run), "--model", str(model), "--output", str(out),
            "--method", "full", "--learning-rate", "3e-3", "--epochs", "6", "--row-tokens", "1024",
            "--max-seq-len", "1024", "--no-progress"]  # fmt: skip
    assert main(argv) == 0
    lines = [json.loads(line) for line in (out / "metrics.jsonl").read_text().splitlines()]
    losses = [m["loss"] for m in lines if "loss" in m]
    assert len(losses) >= 6 and losses[-1] < losses[0] - 0.5
    assert any("eval_loss" in m for m in lines)  # validation split evaluated
    assert (out / "model" / "config.json").is_file()
    train_stats = json.loads((out / "data.json").read_text())[0]
    assert train_stats == {
        "split": "train",
        "conversations": 6,
        "kept": 6,
        "truncated": 0,
        "dropped": {},
    }
    assert "train loss" in capsys.readouterr().out


def test_lora_save_load_round_trip(base, tmp_path):
    """The merged model saved at the end computes what the trained adapter model computed."""
    from transformers import AutoModelForCausalLM

    result = run_sft(_cfg(base, tmp_path / "lora", max_steps=2, learning_rate=1e-2))
    assert (tmp_path / "lora" / "adapter" / "adapter_config.json").is_file()
    reloaded = AutoModelForCausalLM.from_pretrained(result.model_dir)
    base_model = AutoModelForCausalLM.from_pretrained(base[1])
    ids = torch.tensor([[5, 9, 17, 33, 2]])
    with torch.no_grad():
        assert not torch.allclose(reloaded(ids).logits, base_model(ids).logits)


def test_resume_reaches_the_same_weights_as_an_uninterrupted_run(base, tmp_path):
    import shutil

    kw = dict(
        max_steps=4, epochs=4, method="full", learning_rate=1e-3, row_tokens=512, max_seq_len=512
    )
    straight = run_sft(_cfg(base, tmp_path / "a", **kw))
    interrupted = tmp_path / "b"
    run_sft(_cfg(base, interrupted, save_every=2, **kw))
    # an interruption after step 2: only the step-2 checkpoint survives
    shutil.rmtree(interrupted / "checkpoints" / "step-0000004")
    assert latest_checkpoint(interrupted).name == "step-0000002"
    with pytest.raises(FileExistsError):
        run_sft(_cfg(base, interrupted, **kw))
    resumed = run_sft(_cfg(base, interrupted, resume=True, **kw))
    a = torch.load(straight.output / "checkpoints/step-0000004/trainable.pt")
    b = torch.load(resumed.output / "checkpoints/step-0000004/trainable.pt")
    assert a.keys() == b.keys()
    for name in a:
        torch.testing.assert_close(a[name], b[name])


def test_eval_runs_a_local_model_directory_with_its_family_template(base, tmp_path):
    """A model directory is an agent: prompted with its family's template, calls parsed."""
    out = tmp_path / "eval.json"
    argv = ["eval", "--model", str(base[1]), "--num-tasks", "1", "--max-turns", "2",
            "--max-tokens", "8", "--json", str(out)]  # fmt: skip
    assert main(argv) == 0
    (report,) = json.loads(out.read_text())
    assert report["overall"]["tasks"] == 1
    assert report["overall"]["pass_hat"]["1"] == 0.0  # an untrained model solves nothing
    assert report["tasks"][0]["reasons"][0] != ""
