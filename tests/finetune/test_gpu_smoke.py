"""GPU smoke (`make gpu-smoke`, opt-in with -m gpu): SFT a few steps with bf16 and gradient
checkpointing, then evaluate the tuned model with in-process vLLM.

The model is $TRAJFORGE_GPU_SMOKE_MODEL (a small local model directory, e.g. Qwen2.5-0.5B-Instruct
copied onto the machine) when set, else a tiny model built from a config with vLLM-friendly
head size. Skipped without a CUDA GPU; the vLLM half is skipped without vllm installed.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests.finetune.conftest import rendered_corpus, write_run

pytestmark = pytest.mark.gpu
torch = pytest.importorskip("torch")


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")
def test_gpu_sft_then_vllm_eval(tmp_path):
    from trajforge.finetune.agents import parse_agent
    from trajforge.finetune.config import SFTConfig
    from trajforge.finetune.evaluate import EvalConfig, evaluate, held_out_tasks
    from trajforge.finetune.families import get_family
    from trajforge.finetune.sft import run_sft
    from trajforge.finetune.tiny import save_tiny
    from trajforge.generators.domains import get_domain

    run = write_run(tmp_path / "run", {"train": 8, "validation": 2})
    model = os.environ.get("TRAJFORGE_GPU_SMOKE_MODEL")
    if model is None:
        # hidden 256 over 4 heads: head_dim 64, a size vLLM's attention kernels take
        corpus, family = rendered_corpus("qwen2.5"), get_family("qwen2.5")
        model = str(save_tiny(tmp_path / "base", corpus, family, hidden=256))
    result = run_sft(
        SFTConfig(
            data=str(run),
            model=model,
            output=str(tmp_path / "sft"),
            max_steps=3,
            max_seq_len=2048,
            row_tokens=2048,
            progress=False,
        )  # fmt: skip
    )
    assert result.last_loss == result.last_loss  # finite, not NaN
    assert (Path(result.model_dir) / "config.json").is_file()
    pytest.importorskip("vllm")
    cfg = EvalConfig(num_tasks=2, k=1, max_turns=3, max_tokens=64)
    domain = get_domain("retail")
    tasks, skipped = held_out_tasks(cfg, domain)
    report = evaluate(cfg, parse_agent(f"vllm:{result.model_dir}"), tasks, domain, skipped)
    assert report.overall.tasks == len(tasks)
