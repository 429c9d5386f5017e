"""The OPD objective, Guided schedule and Selective gate/weights: pure math, hand-checked."""

import math

import pytest
import torch
from pydantic import ValidationError

from trajforge.finetune.opd.guided import GuidedSchedule, teacher_takes_turn
from trajforge.finetune.opd.objective import (
    exact_reverse_kl,
    gather_logprobs,
    opd_loss,
    sampled_reverse_kl,
    shifted_logits,
    token_advantages,
)
from trajforge.finetune.opd.selective import (
    SelectiveConfig,
    confidence_weights,
    gated_mask,
    turn_disagreement,
    turn_gate,
)


def _logprobs(seed, shape=(2, 6)):
    g = torch.Generator().manual_seed(seed)
    return -torch.rand(shape, generator=g) * 3


def test_teacher_equal_to_student_gives_zero_advantage_loss_and_gradient():
    old = _logprobs(0)
    theta = old.clone().requires_grad_(True)
    adv = token_advantages(old.clone(), old)
    mask = torch.ones_like(old)
    loss = opd_loss(theta, old, adv, mask)
    loss.backward()
    assert torch.equal(adv, torch.zeros_like(adv))
    assert loss.item() == 0.0
    assert torch.equal(theta.grad, torch.zeros_like(old))


def test_no_student_tokens_gives_zero_loss_that_still_backpropagates():
    old = _logprobs(1)
    theta = old.clone().requires_grad_(True)
    adv = token_advantages(_logprobs(2), old)
    loss = opd_loss(theta, old, adv, torch.zeros_like(old))
    loss.backward()
    assert loss.item() == 0.0 and torch.equal(theta.grad, torch.zeros_like(old))


def test_loss_matches_hand_computation_and_ignores_unmasked_tokens():
    old = torch.tensor([[-1.0, -2.0, -0.5]])
    theta = torch.tensor([[-1.0, -1.5, -0.5]], requires_grad=True)
    teacher = torch.tensor([[-0.5, -1.0, -9.0]])
    mask = torch.tensor([[1, 1, 0]])
    adv = token_advantages(teacher, old)
    loss = opd_loss(theta, old, adv, mask)
    expected = -(1.0 * 0.5 + math.exp(0.5) * 1.0) / 2
    assert loss.item() == pytest.approx(expected)
    loss.backward()
    # d/dtheta of -(1/N) exp(theta-old) A = -(1/N) ratio A; zero where the mask is 0
    assert theta.grad[0, 2].item() == 0.0
    assert theta.grad[0, 0].item() == pytest.approx(-0.5 / 2)


def test_advantage_is_a_constant_no_gradient_reaches_the_teacher_or_old_policy():
    teacher = _logprobs(3).requires_grad_(True)
    old = _logprobs(4).requires_grad_(True)
    theta = old.detach().clone().requires_grad_(True)
    loss = opd_loss(theta, old, token_advantages(teacher, old), torch.ones(2, 6))
    loss.backward()
    assert teacher.grad is None and old.grad is None and theta.grad is not None


def test_num_tokens_makes_micro_batches_sum_to_the_full_batch_loss():
    old, teacher = _logprobs(5, (4, 5)), _logprobs(6, (4, 5))
    mask = (torch.arange(20).reshape(4, 5) % 3 != 0).long()
    adv = token_advantages(teacher, old)
    full = opd_loss(old, old, adv, mask)
    n = int(mask.sum())
    halves = sum(
        opd_loss(old[s], old[s], adv[s], mask[s], num_tokens=n) for s in (slice(0, 2), slice(2, 4))
    )
    assert halves.item() == pytest.approx(full.item())


def test_gather_logprobs_aligns_with_input_ids():
    logits = torch.randn(1, 4, 7)
    ids = torch.tensor([[3, 1, 6, 2]])
    out = gather_logprobs(logits, ids)
    assert out[0, 0].item() == 0.0
    expected = torch.log_softmax(logits[0, 1], -1)[6]
    assert out[0, 2].item() == pytest.approx(expected.item())
    picked = torch.log_softmax(shifted_logits(logits), -1).gather(-1, ids.unsqueeze(-1))
    assert torch.allclose(picked[0, 1:, 0], out[0, 1:])


def test_reverse_kl_estimates():
    logits = torch.randn(1, 5, 9)
    mask = torch.tensor([[0, 1, 1, 1, 0]])
    assert exact_reverse_kl(logits, logits.clone(), mask) == pytest.approx(0.0, abs=1e-6)
    assert exact_reverse_kl(logits, torch.randn(1, 5, 9), mask) > 0
    s, t = torch.tensor([[-1.0, -2.0]]), torch.tensor([[-1.5, -1.0]])
    assert sampled_reverse_kl(s, t, torch.tensor([[1, 1]])) == pytest.approx((0.5 - 1.0) / 2)
    assert sampled_reverse_kl(s, t, torch.zeros(1, 2)) == 0.0


# --- Guided ---------------------------------------------------------------------------------


@pytest.mark.parametrize("shape", ["linear", "cosine"])
def test_guided_schedule_decays_to_exactly_zero(shape):
    schedule = GuidedSchedule(start_p=0.8, end_step=10, shape=shape)
    ps = [schedule.probability(s) for s in range(15)]
    assert ps[0] == pytest.approx(0.8)
    assert all(a >= b for a, b in zip(ps, ps[1:], strict=False))
    assert ps[10:] == [0.0] * 5
    assert 0 < ps[5] < 0.8


def test_teacher_turns_follow_the_probability_and_stop_at_end_step():
    schedule = GuidedSchedule(start_p=1.0, end_step=4)
    assert all(teacher_takes_turn(schedule, 0, f"r{i}", 0) for i in range(20))
    assert not any(teacher_takes_turn(schedule, 4, f"r{i}", t) for i in range(20) for t in range(5))
    half = GuidedSchedule(start_p=0.5, end_step=1000)
    share = sum(teacher_takes_turn(half, 0, f"r{i}", 0) for i in range(2000)) / 2000
    assert 0.45 < share < 0.55
    assert teacher_takes_turn(half, 3, "x", 1) == teacher_takes_turn(half, 3, "x", 1)
    assert not teacher_takes_turn(None, 0, "x", 0)


def test_guided_schedule_config_names_the_bad_field():
    with pytest.raises(ValidationError, match="end_step"):
        GuidedSchedule(end_step=0)
    with pytest.raises(ValidationError, match="start_p"):
        GuidedSchedule(start_p=1.5)


# --- Selective ------------------------------------------------------------------------------


def test_turn_gate_intervenes_on_disagreement_or_error():
    cfg = SelectiveConfig(gate_threshold=0.2)
    assert turn_gate([0.5, 0.1, 0.0], [False, False, True], cfg) == [True, False, True]
    quiet = SelectiveConfig(gate_threshold=0.2, gate_on_error=False)
    assert turn_gate([0.5, 0.1, 0.0], [False, False, True], quiet) == [True, False, False]


def test_turn_disagreement_and_gated_mask():
    student = torch.tensor([-1.0, -1.0, -2.0, -0.5, -3.0])
    teacher = torch.tensor([-1.0, -0.5, -1.0, -0.5, -1.0])
    turn_ids = torch.tensor([-1, 0, 0, -1, 1])
    assert turn_disagreement(student, teacher, turn_ids) == pytest.approx([-0.75, -2.0])
    mask = (turn_ids >= 0).long()
    assert gated_mask(mask, turn_ids, [False, True]).tolist() == [0, 0, 0, 0, 1]


def test_selective_weights_average_to_one_over_trained_tokens():
    g = torch.Generator().manual_seed(0)
    confidence = torch.rand(3, 8, generator=g)
    mask = (torch.rand(3, 8, generator=g) > 0.4).long()
    w = confidence_weights(confidence, mask)
    assert (w[mask == 0] == 0).all()
    assert w[mask == 1].mean().item() == pytest.approx(1.0)
    ratios = w[mask == 1] / confidence[mask == 1]
    assert torch.allclose(ratios, ratios[0].expand_as(ratios))
    assert confidence_weights(confidence, torch.zeros_like(mask)).sum().item() == 0.0


def test_unit_weights_leave_the_standard_loss_unchanged():
    old, teacher = _logprobs(7), _logprobs(8)
    mask = torch.ones_like(old)
    adv = token_advantages(teacher, old)
    flat = confidence_weights(torch.full_like(old, 0.3), mask)
    assert opd_loss(old, old, adv, mask, flat).item() == pytest.approx(
        opd_loss(old, old, adv, mask).item()
    )
