"""GPU paths of training on tiny models (opt-in with -m gpu; skipped without a CUDA GPU).

What only a GPU exercises: tensors that must share the model's device (OPD's gate and sampled
mask were CPU tensors meeting CUDA ones), `precision: auto` resolving to bf16-mixed (SFT with
gradient checkpointing; OPD with fp32 student weights, a bf16 teacher and the sampler under the
same autocast), and evaluation by the transformers agent on the GPU.
"""

from __future__ import annotations

import json
import math

import pytest

torch = pytest.importorskip("torch")
pytestmark = [
    pytest.mark.gpu,
    pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU"),
]


def test_opd_steps_on_cuda_with_selective_and_guided(tmp_path):
    from tests.finetune.opd_models import save_pair
    from tests.toy_domain import TOY, make_task
    from trajforge.finetune.opd.config import OPDConfig
    from trajforge.finetune.opd.guided import GuidedSchedule
    from trajforge.finetune.opd.selective import SelectiveConfig
    from trajforge.finetune.opd.train import OPDTrainer, load_models

    student, teacher = save_pair(tmp_path)
    cfg = OPDConfig(student=student, teacher=teacher, output=str(tmp_path / "out"),
                    family="qwen2.5", rollouts_per_step=2, max_new_tokens=8, max_turns=2,
                    eval_rollouts=1, eval_pass_k=False, device="cuda", steps=3,
                    learning_rate=2e-3, selective=SelectiveConfig(gate_threshold=-1e9),
                    guided=GuidedSchedule(start_p=0.5, end_step=2))  # fmt: skip
    models = load_models(cfg)
    assert next(models.student.parameters()).device.type == "cuda"
    assert models.precision.name == "bf16-mixed"  # auto on a GPU with bf16
    assert next(models.student.parameters()).dtype == torch.float32
    assert next(models.teacher.parameters()).dtype == torch.bfloat16
    result = OPDTrainer(cfg, models, TOY, [make_task()], [make_task()]).run()
    steps = [json.loads(x) for x in (tmp_path / "out" / "metrics.jsonl").open() if '"loss"' in x]
    assert len(steps) == 3 and all(math.isfinite(s["loss"]) for s in steps)
    assert sum(s["trained_tokens"] for s in steps) > 0
    assert math.isfinite(result.heldout_kl_after)
    assert (result.model_dir / "config.json").is_file()


def _sft(tmp_path, **kw):
    from tests.finetune.conftest import rendered_corpus, write_run
    from trajforge.finetune.config import SFTConfig
    from trajforge.finetune.families import get_family
    from trajforge.finetune.sft import run_sft
    from trajforge.finetune.tiny import save_tiny

    run = write_run(tmp_path / "run", {"train": 4, "validation": 1})
    base = save_tiny(tmp_path / "base", rendered_corpus("qwen2.5"), get_family("qwen2.5"))
    cfg = SFTConfig(data=str(run), model=str(base), output=str(tmp_path / "sft"), max_steps=3,
                    max_seq_len=1024, row_tokens=1024, progress=False, **kw)  # fmt: skip
    return base, run_sft(cfg)


def test_full_sft_auto_precision_on_cuda_is_bf16_mixed(tmp_path, monkeypatch):
    """auto = fp32 master weights and a bf16 forward, with gradient checkpointing; the small
    learning rate still moves every weight matrix (pure bf16 would round most updates away)."""
    from transformers import AutoModelForCausalLM

    from trajforge.finetune import modeling

    seen = {}
    load = modeling.load_for_training

    def spy(cfg, device):
        model, tokenizer, precision = load(cfg, device)
        seen.update(precision=precision.name, dtype=next(model.parameters()).dtype,
                    checkpointing=model.is_gradient_checkpointing, device=device)  # fmt: skip
        return model, tokenizer, precision

    monkeypatch.setattr("trajforge.finetune.sft.load_for_training", spy)
    base, result = _sft(tmp_path, method="full", learning_rate=1e-5)
    assert seen == {"precision": "bf16-mixed", "dtype": torch.float32, "checkpointing": True,
                    "device": "cuda"}  # fmt: skip
    assert math.isfinite(result.last_loss) and math.isfinite(result.eval_loss)
    tuned = AutoModelForCausalLM.from_pretrained(result.model_dir)
    original = AutoModelForCausalLM.from_pretrained(base)
    pairs = zip(tuned.parameters(), original.parameters(), strict=True)
    assert all(not torch.equal(a, b) for a, b in pairs if a.ndim == 2)


def test_lora_sft_on_cuda_then_transformers_eval_on_cuda(tmp_path):
    from trajforge.finetune.agents import parse_agent
    from trajforge.finetune.evaluate import EvalConfig, evaluate, held_out_tasks
    from trajforge.generators.domains import get_domain

    _, result = _sft(tmp_path, method="lora", learning_rate=1e-3)
    assert math.isfinite(result.last_loss)
    assert (result.output / "adapter").is_dir()
    cfg = EvalConfig(num_tasks=2, k=1, max_turns=2, max_tokens=16)
    domain = get_domain("retail")
    tasks, skipped = held_out_tasks(cfg, domain)
    report = evaluate(cfg, parse_agent(str(result.model_dir)), tasks, domain, skipped)
    assert report.overall.tasks == len(tasks)
