"""Copy pre-training (finetune/copying.py): the batch masks exactly the copyable targets, the
curriculum is validated, and training teaches a tiny model to copy (measured against chance)."""

from __future__ import annotations

import pytest
import torch
from pydantic import ValidationError

from trajforge.finetune.copying import (
    CopyCurriculum,
    copy_batch,
    copy_loss,
    pretrain_copying,
    space_variants,
)
from trajforge.finetune.tiny import main as tiny_main
from trajforge.finetune.tiny import tiny_model


def _rows(batch):
    for ids, attention, mask in zip(*batch, strict=True):
        length = int(attention.sum())
        assert attention[:length].all() and not attention[length:].any()  # right padding only
        assert not mask[length:].any()
        masked = mask.nonzero().flatten().tolist()
        assert masked == list(range(length - len(masked), length))  # the repeat ends the row
        yield ids[:length].tolist(), len(masked)


def _earlier_spans(ids: list[int], span: int) -> list[list[int]]:
    """The spans after each earlier occurrence of the cue (the token before the repeat); the
    cue may recur in the filler when the vocabulary is small."""
    cue, last = ids[-span - 1], len(ids) - 2 * span - 1
    return [ids[p + 1 : p + 1 + span] for p in range(last) if ids[p] == cue]


def test_the_loss_mask_covers_the_repeat_after_the_cue_and_nothing_else():
    curriculum = CopyCurriculum(steps=1, span=(2, 9), gap=(0, 7), variant_rate=0)
    batch = copy_batch(torch.Generator().manual_seed(3), 5, 4000, curriculum, rows=50)
    for ids, span in _rows(batch):
        assert 2 <= span <= 9 and 2 * span + 2 <= len(ids) <= 2 * span + 2 + 14
        assert ids[-span:] in _earlier_spans(ids, span)  # variant_rate 0: an exact repeat
        assert min(ids) >= 5 and max(ids) < 4000  # special ids never drawn


def test_the_repeat_swaps_tokens_for_their_space_variants_at_the_rate_asked():
    vocab = {"joss": 10, "Ġjoss": 11, "kest": 12, "Ġkest": 13, "rel": 14, "Ġ": 15, "x": 16}
    variants = space_variants(vocab)
    assert variants == {11: 10, 10: 11, 13: 12, 12: 13}  # "Ġ" alone has no word to vary
    curriculum = CopyCurriculum(steps=1, span=(3, 6), gap=(0, 3), variant_rate=1.0)
    batch = copy_batch(torch.Generator().manual_seed(0), 10, 17, curriculum, 40, variants)
    for ids, span in _rows(batch):
        swapped = [[variants.get(t, t) for t in s] for s in _earlier_spans(ids, span)]
        assert ids[-span:] in swapped


def test_a_curriculum_with_crossed_bounds_names_the_field():
    with pytest.raises(ValidationError, match="gap: bounds 9..2"):
        CopyCurriculum(steps=1, gap=(9, 2))
    with pytest.raises(ValidationError, match="span: bounds 1..4.*low >= 2"):
        CopyCurriculum(steps=1, span=(1, 4))


def _copy_accuracy(model, curriculum: CopyCurriculum) -> float:
    batch = copy_batch(torch.Generator().manual_seed(99), 4, 32, curriculum, rows=64)
    with torch.no_grad():
        return copy_loss(model, batch)[1]


def test_pretraining_teaches_a_tiny_model_to_copy_unseen_spans():
    torch.set_num_threads(1)
    curriculum = CopyCurriculum(
        steps=300, batch_size=16, span=(3, 6), gap=(0, 4), learning_rate=3e-3, seed=0
    )
    untrained = tiny_model(32, seed=0, hidden=32, layers=2)
    before = _copy_accuracy(untrained, curriculum)
    report = pretrain_copying(untrained, curriculum, first_id=4)
    after = _copy_accuracy(untrained, curriculum)
    assert before < 0.06  # chance is 1/28
    assert after > 0.1 and report.held_out_accuracy > 0.1, (before, after, report)  # ~3x chance


def test_tiny_refuses_negative_copy_steps(tmp_path, capsys):
    with pytest.raises(SystemExit):
        tiny_main(["--output", str(tmp_path / "m"), "--copy-steps", "-3"])
    assert "--copy-steps: -3 is negative" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        tiny_main(
            ["--output", str(tmp_path / "m"), "--copy-steps", "5", "--copy-learning-rate", "0"]
        )
    assert "--copy-learning-rate: 0.0 must be > 0" in capsys.readouterr().err
    assert not (tmp_path / "m").exists()


def test_tiny_copy_steps_train_the_saved_base_and_leave_the_tokenizer(tmp_path, capsys):
    from safetensors.torch import load_file

    for name, steps in (("plain", "0"), ("copy", "3")):
        tiny_main(["--output", str(tmp_path / name), "--hidden", "16", "--copy-steps", steps])
    assert "copy pre-training: 3 steps" in capsys.readouterr().out
    plain, copied = (load_file(tmp_path / n / "model.safetensors") for n in ("plain", "copy"))
    assert any(not torch.equal(plain[k], copied[k]) for k in plain)
    tokenizers = [(tmp_path / n / "tokenizer.json").read_text() for n in ("plain", "copy")]
    assert tokenizers[0] == tokenizers[1]
