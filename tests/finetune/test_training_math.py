"""Packing, accumulation and LoRA: the loss and gradients SFT relies on, on a tiny model."""

from __future__ import annotations

import pytest
import torch

from tests.finetune.conftest import TOOLS, conversation
from trajforge.finetune import sft
from trajforge.finetune.batching import micro_batches, packed_batch, padded_batch
from trajforge.finetune.config import SFTConfig
from trajforge.finetune.families import get_family
from trajforge.finetune.loss import accumulate_step, token_loss_sum
from trajforge.finetune.modeling import with_lora
from trajforge.finetune.render import render_and_mask
from trajforge.finetune.tiny import tiny_model


@pytest.fixture(scope="module")
def samples(tokenizers):
    tokenizer = tokenizers["qwen2.5"]
    family = get_family("qwen2.5")
    texts = ["Where is #W1?", "Hi, where are my orders #W1 and #W2 please?", "Status of #W2?"]
    return [
        render_and_mask(str(i), conversation(t), TOOLS, family, tokenizer)
        for i, t in enumerate(texts)
    ]


@pytest.fixture
def model(tokenizers):
    return tiny_model(len(tokenizers["qwen2.5"]), seed=1)


def _grads(model):
    return {n: p.grad.clone() for n, p in model.named_parameters() if p.grad is not None}


def test_packing_equals_padded_computation(model, samples, tokenizers):
    """Padding-free rows (positions restart per sample) give the padded batch's loss and grads."""
    pad = tokenizers["qwen2.5"].pad_token_id
    packed = token_loss_sum(model, packed_batch(samples))
    packed.backward()
    packed_grads = _grads(model)
    model.zero_grad()
    padded = token_loss_sum(model, padded_batch(samples, pad))
    padded.backward()
    assert packed.item() == pytest.approx(padded.item(), rel=1e-5)
    for name, grad in _grads(model).items():
        torch.testing.assert_close(packed_grads[name], grad, rtol=1e-4, atol=1e-6)


@pytest.mark.parametrize("packing", [True, False])
def test_two_micro_batches_with_accumulation_equal_one_big_batch(
    model, samples, tokenizers, packing
):
    pad = tokenizers["qwen2.5"].pad_token_id
    whole = micro_batches(samples, packing=packing, tokens=10**6, batch_size=3, pad_id=pad)
    split = micro_batches(
        samples, packing=packing, tokens=len(samples[0].input_ids) + 1, batch_size=1, pad_id=pad
    )
    assert len(whole) == 1 and len(split) == 3
    big_loss, big_n = accumulate_step(model, whole)
    big = _grads(model)
    model.zero_grad()
    acc_loss, acc_n = accumulate_step(model, split)
    assert acc_n == big_n
    assert acc_loss == pytest.approx(big_loss, rel=1e-5)
    for name, grad in _grads(model).items():
        torch.testing.assert_close(big[name], grad, rtol=1e-4, atol=1e-7)


def test_lora_trains_only_adapter_weights(model, samples):
    cfg = SFTConfig(data="d", model="m", output="o")
    lora = with_lora(model, cfg, checkpointing=False)
    trainable = [n for n, p in lora.named_parameters() if p.requires_grad]
    assert trainable and all("lora_" in n for n in trainable)
    adapted = {n.split(".lora_A")[0].rsplit(".", 1)[-1] for n in trainable if ".lora_A" in n}
    assert adapted == {"q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"}
    frozen = {n: p.detach().clone() for n, p in lora.named_parameters() if not p.requires_grad}
    optimizer = torch.optim.AdamW([p for p in lora.parameters() if p.requires_grad], lr=1e-2)
    for _ in range(2):
        accumulate_step(lora, [packed_batch(samples)])
        optimizer.step()
        optimizer.zero_grad()
    for name, p in lora.named_parameters():
        if not p.requires_grad:
            assert torch.equal(p, frozen[name]), name


@pytest.mark.parametrize("packing", [True, False])
@pytest.mark.parametrize(
    ("epochs", "max_steps", "grad_accum"), [(3, None, 1), (5, 4, 2), (2, 50, 1)]
)
def test_total_steps_is_the_schedules_length_capped_at_max_steps(
    samples, packing, epochs, max_steps, grad_accum
):
    cfg = SFTConfig(
        data="d", model="m", output="o", packing=packing, row_tokens=64, max_seq_len=64, batch_size=2,
        epochs=epochs, max_steps=max_steps, grad_accum=grad_accum,
    )  # fmt: skip
    whole = len(list(sft.step_schedule(cfg, samples * 3, pad_id=0)))
    assert sft.total_steps(cfg, samples * 3) == (min(whole, max_steps) if max_steps else whole)


def test_total_steps_builds_no_tensor_and_stops_at_max_steps(samples, monkeypatch):
    """`--epochs 1000 --max-steps N` used to build every epoch's tensors just to count steps."""
    monkeypatch.setattr(sft, "to_batch", lambda *a, **k: pytest.fail("built a batch to count"))
    cfg = SFTConfig(data="d", model="m", output="o", epochs=10**9, max_steps=7, batch_size=1)
    assert sft.total_steps(cfg, samples) == 7
