"""Data-parallel SFT: N processes with accumulation g train exactly as 1 process with N x g.

The fast tests check the pieces in one process (each rank's share of a step, the loss scale
that makes DDP's gradient average the token mean over all processes, the launcher settings
that are refused); the slow one runs two real processes on the CPU (gloo) through
`accelerate launch` and compares losses and final weights with one process.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from tests.finetune.conftest import TOOLS, conversation, rendered_corpus, write_run
from trajforge.finetune.batching import IGNORE, micro_batches, share_of_step
from trajforge.finetune.config import FinetuneConfigError, SFTConfig
from trajforge.finetune.families import get_family
from trajforge.finetune.loss import accumulate_step, backward_share
from trajforge.finetune.render import render_and_mask
from trajforge.finetune.tiny import save_tiny, tiny_model

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def micro(tokenizers):
    """Three padded micro-batches of different lengths (so different trained-token counts)."""
    tokenizer = tokenizers["qwen2.5"]
    family = get_family("qwen2.5")
    texts = ["Where is #W1?", "Hi, where are my orders #W1 and #W2 please, quickly?", "#W2?"]
    samples = [
        render_and_mask(str(i), conversation(t), TOOLS, family, tokenizer)
        for i, t in enumerate(texts)
    ]
    return micro_batches(
        samples, packing=False, tokens=4096, batch_size=1, pad_id=tokenizer.pad_token_id
    )


def test_each_process_takes_every_nth_micro_batch_and_pads_a_short_share(micro):
    first, second = share_of_step(micro, 0, 2), share_of_step(micro, 1, 2)
    assert first == [micro[0], micro[2]]
    assert len(second) == 2 and second[0] is micro[1]
    padding = second[1]
    assert padding.num_trained == 0 and bool((padding.labels == IGNORE).all())
    assert torch.equal(padding.input_ids, micro[0].input_ids)
    assert share_of_step(micro, 0, 1) == list(micro)


def test_process_shares_averaged_as_ddp_does_give_the_one_process_gradient(micro, tokenizers):
    """Each rank backpropagates its share scaled by processes / step tokens; the mean of the
    ranks' gradients (DDP's all-reduce) is the gradient of the token mean over the whole step."""
    model = tiny_model(len(tokenizers["qwen2.5"]), seed=1)
    whole_loss, total = accumulate_step(model, micro)
    whole = {n: p.grad.clone() for n, p in model.named_parameters()}
    ranks, loss_sum = [], 0.0
    for rank in range(2):
        model.zero_grad()
        loss_sum += backward_share(model, share_of_step(micro, rank, 2), total, processes=2)
        ranks.append({n: p.grad.clone() for n, p in model.named_parameters()})
    assert loss_sum / total == pytest.approx(whole_loss, rel=1e-6)
    for name, grad in whole.items():
        averaged = (ranks[0][name] + ranks[1][name]) / 2
        torch.testing.assert_close(averaged, grad, rtol=1e-4, atol=1e-7)


class _FakeAccelerator:
    def __init__(self, kind: str, mixed_precision: str = "no", **_: object) -> None:
        self.distributed_type = type("Kind", (), {"name": kind})()
        self.mixed_precision = mixed_precision


@pytest.mark.parametrize(
    ("kind", "mixed", "named"),
    [("FSDP", "no", "FSDP"), ("DEEPSPEED", "no", "DEEPSPEED"), ("MULTI_GPU", "bf16", "bf16")],
)
def test_launcher_settings_the_loop_cannot_honour_are_refused(monkeypatch, kind, mixed, named):
    import accelerate

    from trajforge.finetune.distributed import start_accelerator

    monkeypatch.setattr(accelerate, "Accelerator", lambda **kw: _FakeAccelerator(kind, mixed))
    with pytest.raises(FinetuneConfigError, match=named):
        start_accelerator()


def test_one_process_unless_a_launcher_set_a_world_size(monkeypatch):
    """Without a launcher no accelerate state is made (it is process-wide: a TRL Trainer made
    earlier in the same process would impose its bf16 on SFT); with one, the Accelerator."""
    from trajforge.finetune import distributed

    for name in distributed.WORLD_SIZE_VARS:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setattr(distributed, "start_accelerator", lambda: "accelerator")
    alone = distributed.start_processes()
    assert isinstance(alone, distributed.OneProcess) and alone.num_processes == 1
    monkeypatch.setenv("WORLD_SIZE", "1")
    assert isinstance(distributed.start_processes(), distributed.OneProcess)
    monkeypatch.setenv("WORLD_SIZE", "2")
    assert distributed.start_processes() == "accelerator"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _losses(out: Path) -> tuple[list[float], list[float]]:
    lines = [json.loads(x) for x in (out / "metrics.jsonl").read_text().splitlines()]
    return [x["loss"] for x in lines if "loss" in x], [
        x["eval_loss"] for x in lines if "eval_loss" in x
    ]


@pytest.mark.slow
def test_two_processes_train_as_one_process_with_doubled_accumulation(tmp_path):
    """`accelerate launch` with 2 CPU processes (gloo), grad_accum 1, vs 1 process with
    grad_accum 2: the same per-step losses, eval losses and final weights. 7 conversations per
    epoch, one per micro-batch, so each epoch's last step leaves process 1 a padded share."""
    from safetensors.torch import load_file

    from trajforge.finetune.sft import run_sft

    run = write_run(tmp_path / "run", {"train": 7, "validation": 3})
    base = save_tiny(tmp_path / "base", rendered_corpus("qwen2.5"), get_family("qwen2.5"))
    args = ["--data", str(run), "--model", str(base), "--method", "full", "--learning-rate",
            "3e-3", "--no-packing", "--epochs", "2", "--max-seq-len", "1024", "--row-tokens",
            "1024", "--no-progress"]  # fmt: skip
    # `--cpu` alone runs one process (accelerate's CPU multi-process path is mpirun); the DDP
    # launcher with ACCELERATE_USE_CPU starts two gloo processes, as on GPUs without it
    launch = [sys.executable, "-m", "accelerate.commands.launch", "--multi_gpu",
              "--num_processes", "2", "--num_machines", "1", "--mixed_precision", "no",
              "--dynamo_backend", "no", "--main_process_port", str(_free_port()),
              "-m", "trajforge.pipelines.cli", "finetune", "sft", "--output",
              str(tmp_path / "two"), *args]  # fmt: skip
    env = {**os.environ, "ACCELERATE_USE_CPU": "true", "OMP_NUM_THREADS": "1"}
    done = subprocess.run(launch, env=env, cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.count("steps 8 ") == 2  # both processes ran the 8 shared steps
    one = run_sft(
        SFTConfig(
            data=str(run),
            model=str(base),
            output=str(tmp_path / "one"),
            method="full",
            learning_rate=3e-3,
            packing=False,
            epochs=2,
            max_seq_len=1024,
            row_tokens=1024,
            grad_accum=2,
            progress=False,
        )  # fmt: skip
    )
    two_losses, two_eval = _losses(tmp_path / "two")
    one_losses, one_eval = _losses(one.output)
    assert len(two_losses) == len(one_losses) == 8
    assert two_losses == pytest.approx(one_losses, rel=1e-5)
    assert two_eval == pytest.approx(one_eval, rel=1e-5)
    a = load_file(one.model_dir / "model.safetensors")
    b = load_file(tmp_path / "two" / "model" / "model.safetensors")
    assert a.keys() == b.keys()
    for name in a:
        torch.testing.assert_close(a[name], b[name], rtol=1e-5, atol=1e-6)
