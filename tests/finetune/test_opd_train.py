"""The OPD loop on a tiny student and a fixed tiny teacher (CPU, toy domain)."""

import json

import pytest
import torch

from tests.finetune.opd_models import save_pair
from tests.toy_domain import TOY, make_task
from trajforge.finetune.checkpoint import latest_checkpoint
from trajforge.finetune.opd.config import OPDConfig
from trajforge.finetune.opd.guided import GuidedSchedule
from trajforge.finetune.opd.selective import SelectiveConfig
from trajforge.finetune.opd.train import OPDTrainer, load_models

TINY = dict(
    family="qwen2.5",
    rollouts_per_step=1,
    max_new_tokens=4,
    max_turns=2,
    eval_rollouts=1,
    eval_pass_k=False,
    device="cpu",
)


def trainer(tmp_path, student, teacher, **overrides):
    cfg = OPDConfig(student=student, teacher=teacher, output=str(tmp_path / "out"), **overrides)
    return OPDTrainer(cfg, load_models(cfg), TOY, [make_task()], [make_task()])


def metrics(tmp_path):
    return [json.loads(line) for line in (tmp_path / "out" / "metrics.jsonl").open()]


@pytest.mark.slow  # a whole build or long run: the tier CI also runs
def test_a_few_opd_steps_reduce_heldout_reverse_kl(tmp_path):
    """The README's numbers: `pytest tests/finetune/test_opd_train.py -k reduce -s`."""
    student, teacher = save_pair(tmp_path)
    result = trainer(
        tmp_path,
        student,
        teacher,
        **{**TINY, "max_new_tokens": 16, "rollouts_per_step": 4, "eval_rollouts": 2},
        steps=8,
        learning_rate=2e-3,
    ).run()
    print(f"held-out reverse KL: {result.heldout_kl_before:.3f} -> {result.heldout_kl_after:.3f}")
    assert result.heldout_kl_after < 0.85 * result.heldout_kl_before
    lines = metrics(tmp_path)
    assert [line["step"] for line in lines] == [0, *range(1, 9), 8]
    assert all(line["trained_tokens"] > 0 for line in lines[1:-1])
    assert (result.model_dir / "config.json").is_file()


def test_teacher_equal_to_student_gives_zero_loss_and_kl(tmp_path):
    student, _ = save_pair(tmp_path)
    t = trainer(tmp_path, student, student, **TINY, steps=1)
    before = [p.detach().clone() for p in t.models.student.parameters()]
    m = t.train_step(0)
    assert m.trained_tokens > 0
    assert abs(m.loss) < 1e-4 and abs(m.sampled_reverse_kl) < 1e-4
    drift = max(
        (p - b).abs().max().item()
        for p, b in zip(t.models.student.parameters(), before, strict=True)
    )
    assert drift < 1e-3  # AdamW on a ~0 gradient: nothing systematic to learn


def test_guided_teacher_turns_carry_no_loss_until_the_schedule_ends(tmp_path):
    student, teacher = save_pair(tmp_path)
    guided = GuidedSchedule(start_p=1.0, end_step=1)
    t = trainer(tmp_path, student, teacher, **TINY, steps=2, guided=guided)
    first, second = t.train_step(0), t.train_step(1)
    assert first.teacher_turns > 0 and first.trained_tokens == 0 and first.loss == 0.0
    assert first.guided_p == 1.0 and second.guided_p == 0.0
    assert second.teacher_turns == 0 and second.trained_tokens > 0


def test_selective_gate_can_skip_every_turn(tmp_path):
    student, teacher = save_pair(tmp_path)
    never = SelectiveConfig(gate_threshold=1e9, gate_on_error=False)
    skipped = trainer(tmp_path, student, teacher, **TINY, steps=1, selective=never).train_step(0)
    assert skipped.student_turns > 0 and skipped.turns_trained == 0
    assert skipped.trained_tokens == 0 and skipped.loss == 0.0
    always = SelectiveConfig(gate_threshold=-1e9)
    kept = trainer(tmp_path, student, teacher, **TINY, steps=1, selective=always).train_step(0)
    assert kept.turns_trained == kept.student_turns > 0


def test_resume_continues_exactly_where_the_checkpoint_left_off(tmp_path):
    student, teacher = save_pair(tmp_path)
    straight = trainer(tmp_path / "a", student, teacher, **TINY, steps=3, save_every=1)
    straight.run()
    interrupted = trainer(tmp_path / "b", student, teacher, **TINY, steps=2, save_every=1)
    interrupted.run()
    assert latest_checkpoint(tmp_path / "b" / "out").name == "step-0000002"
    resumed = trainer(tmp_path / "b", student, teacher, **TINY, steps=3, resume=True)
    resumed.run()
    for p, q in zip(
        straight.models.student.parameters(), resumed.models.student.parameters(), strict=True
    ):
        assert torch.allclose(p, q)
    with pytest.raises(FileExistsError, match="--resume"):
        trainer(tmp_path / "b", student, teacher, **TINY, steps=3).run()


def test_config_errors_name_the_field(tmp_path):
    with pytest.raises(ValueError, match="student"):
        OPDConfig(student=str(tmp_path / "missing"), teacher=str(tmp_path), output="x")


def test_an_llm_user_from_a_backend_config_plays_the_customer(tmp_path):
    student, teacher = save_pair(tmp_path)
    user = {"kind": "scripted", "responder": "rollout_dry_run"}  # says its piece, then stops
    scripted_customer = trainer(tmp_path / "a", student, teacher, **TINY, steps=1)
    llm_customer = trainer(tmp_path / "b", student, teacher, **TINY, steps=1, user=user)
    assert scripted_customer.train_step(0).student_turns == 2  # max_turns: it never stops
    assert llm_customer.train_step(0).student_turns == 1  # the dry-run user stops after one


def test_evaluation_reports_pass_hat_1_through_trajforge_eval(tmp_path):
    student, teacher = save_pair(tmp_path)
    t = trainer(tmp_path, student, teacher, **{**TINY, "eval_pass_k": True}, steps=1)
    line = t.evaluate(0)
    assert line.eval_pass_hat_1 == 0.0  # a random tiny student solves nothing
    assert line.heldout_reverse_kl > 0
    assert (tmp_path / "out" / "eval" / "step-0" / "model" / "config.json").is_file()


def _as_bf16_checkpoints(paths):
    from transformers import AutoModelForCausalLM

    for path in paths:
        model = AutoModelForCausalLM.from_pretrained(path, dtype=torch.float32)
        model.to(torch.bfloat16).save_pretrained(path)


def test_a_bf16_checkpoint_trains_as_fp32_student_under_auto_on_cpu(tmp_path):
    """transformers 5 loads a checkpoint's own dtype by default: a bf16 student would train in
    pure bf16, where updates at OPD's learning rates mostly round away."""
    student, teacher = save_pair(tmp_path)
    _as_bf16_checkpoints((student, teacher))
    cfg = OPDConfig(student=student, teacher=teacher, output=str(tmp_path / "out"), **TINY)
    models = load_models(cfg)
    assert models.precision.name == "fp32"
    assert {p.dtype for p in models.student.parameters()} == {torch.float32}
    assert {p.dtype for p in models.teacher.parameters()} == {torch.float32}


def test_bf16_mixed_keeps_fp32_masters_a_bf16_teacher_and_saves_the_checkpoint_dtype(tmp_path):
    student, _ = save_pair(tmp_path)
    _as_bf16_checkpoints((student,))
    t = trainer(tmp_path, student, student, **{**TINY, "precision": "bf16-mixed"}, steps=1)
    assert {p.dtype for p in t.models.student.parameters()} == {torch.float32}
    assert {p.dtype for p in t.models.teacher.parameters()} == {torch.bfloat16}
    m = t.train_step(0)
    assert m.trained_tokens > 0
    # the sampler's log p_old comes from the same bf16 forward as the update's: the teacher
    # (the same network, its weights rounded to bf16) is then close to, not exactly, the student
    assert abs(m.sampled_reverse_kl) < 0.05 and abs(m.loss) < 0.05
    saved = json.loads((t.run().model_dir / "config.json").read_text())
    assert (saved.get("dtype") or saved.get("torch_dtype")) == "bfloat16"


def test_evaluating_pass_k_under_bf16_mixed_leaves_the_student_fp32(tmp_path):
    """Each evaluation saves the student in its checkpoint's dtype for `trajforge eval`; the
    student that goes on training keeps its fp32 weights."""
    student, teacher = save_pair(tmp_path)
    _as_bf16_checkpoints((student,))
    options = {**TINY, "precision": "bf16-mixed", "eval_pass_k": True}
    t = trainer(tmp_path, student, teacher, **options, steps=1)
    metrics = t.evaluate(0)
    assert metrics.eval_pass_hat_1 is not None
    assert {p.dtype for p in t.models.student.parameters()} == {torch.float32}
