"""OPD with a teacher whose embedding is padded past the tokenizer (a multiple of 128, as the
larger members of a family often are): logits meet over the shared tokenizer vocabulary."""

from __future__ import annotations

import pytest
import torch

from tests.finetune.opd_models import save_pair, toy_tokenizer
from tests.finetune.test_opd_train import TINY, metrics, trainer
from trajforge.finetune.opd.rollouts import sample_rollouts, step_jobs
from trajforge.finetune.opd.scoring import heldout_reverse_kl


def pad_teacher(path: str, multiple: int = 128, padding_logit: float = 50.0) -> int:
    """Resize the saved teacher's embeddings to a multiple of `multiple`; the padding rows of
    its output layer get a huge logit, so any place that lets them in changes every number."""
    from transformers import AutoModelForCausalLM

    teacher = AutoModelForCausalLM.from_pretrained(path, dtype=torch.float32)
    vocab = len(toy_tokenizer())
    teacher.resize_token_embeddings(vocab, pad_to_multiple_of=multiple)
    with torch.no_grad():
        head = teacher.get_output_embeddings().weight
        head[vocab:] = 0.0
        head[vocab:, 0] = padding_logit  # hidden states' first feature is not zero
    teacher.save_pretrained(path)
    return head.shape[0]


def test_one_opd_step_and_the_heldout_kl_run_with_a_padded_teacher(tmp_path):
    student, teacher = save_pair(tmp_path)
    rows = pad_teacher(teacher)
    assert rows % 128 == 0 and rows > len(toy_tokenizer())
    result = trainer(tmp_path, student, teacher, **TINY, steps=1).run()
    lines = metrics(tmp_path)
    assert [line["step"] for line in lines] == [0, 1, 1]
    assert lines[1]["trained_tokens"] > 0
    assert result.heldout_kl_before > 0 and result.heldout_kl_after > 0


def test_padding_rows_change_nothing(tmp_path):
    """Scores, loss and KL with the padded teacher equal those with the unpadded one."""
    student, teacher = save_pair(tmp_path / "plain")
    plain = trainer(tmp_path / "a", student, teacher, **TINY, steps=1)
    _, padded_dir = save_pair(tmp_path / "padded")
    pad_teacher(padded_dir)
    padded = trainer(tmp_path / "b", student, padded_dir, **TINY, steps=1)
    jobs = step_jobs(plain.tasks, 0, 1, "opd")
    rollouts = [r.tokens for r in sample_rollouts(jobs, plain.setup()).rollouts]
    (a,), (b,) = plain.score(rollouts), padded.score(rollouts)
    assert torch.allclose(a.teacher_logprobs, b.teacher_logprobs, atol=1e-5)
    assert torch.allclose(a.confidence, b.confidence, atol=1e-5)
    kls = [
        heldout_reverse_kl(
            t.models.student, t.models.teacher, rollouts, "cpu", None, len(toy_tokenizer())
        )
        for t in (plain, padded)
    ]
    assert kls[0] == pytest.approx(kls[1], abs=1e-5)
    assert plain.train_step(0).loss == pytest.approx(padded.train_step(0).loss, abs=1e-5)


def test_a_teacher_narrower_than_the_tokenizer_is_refused(tmp_path):
    from transformers import AutoModelForCausalLM

    from trajforge.finetune.opd.config import OPDConfig
    from trajforge.finetune.opd.train import load_models

    student, teacher = save_pair(tmp_path)
    model = AutoModelForCausalLM.from_pretrained(teacher)
    model.resize_token_embeddings(len(toy_tokenizer()) - 8)
    model.save_pretrained(teacher)
    cfg = OPDConfig(student=student, teacher=teacher, output=str(tmp_path / "out"), **TINY)
    with pytest.raises(ValueError, match="teacher: its output layer has"):
        load_models(cfg)


def test_kl_only_measures_what_a_run_logs_before_its_first_step_and_writes_nothing(
    tmp_path, capsys
):
    """`finetune opd --kl-only`: how a student trained another way is compared with OPD's."""
    from trajforge.pipelines.cli import main

    student, teacher = save_pair(tmp_path)
    flags = ["finetune", "opd", "--student", student, "--teacher", teacher, "--family",
             "qwen2.5", "--domain", "toy", "--num-tasks", "1", "--steps", "1",
             "--rollouts-per-step", "1", "--max-new-tokens", "4", "--max-turns", "2",
             "--no-pass-k"]  # fmt: skip
    assert main([*flags, "--output", str(tmp_path / "kl"), "--kl-only"]) == 0
    measured = float(capsys.readouterr().out.split("held-out reverse KL")[1])
    assert not (tmp_path / "kl").exists()
    assert main([*flags, "--output", str(tmp_path / "run")]) == 0
    before = float(capsys.readouterr().out.split("held-out reverse KL")[1].split("->")[0])
    assert measured > 0 and measured == pytest.approx(before, abs=1e-4)
