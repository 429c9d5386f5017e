"""Forward passes of OPD: the teacher scores a rollout once; the student's update and the
held-out reverse KL.

Every forward's logits are cut to the tokenizer's vocabulary (`over_vocabulary`: embedding
rows past it are padding, and a teacher's may be wider than its student's). The teacher sees
the student's exact token sequence (the two must share a tokenizer) in one forward pass and returns, per position, the log-probability of the token there and its own
confidence (top-token probability, for Selective weights). One pass per trajectory, whatever
the number of turns: that is why the sequence is built once, token-exact, by the transcript.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import torch

from trajforge.finetune.modeling import Precision, autocast_for
from trajforge.finetune.opd.objective import (
    exact_reverse_kl,
    gather_logprobs,
    opd_loss,
    over_vocabulary,
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
from trajforge.finetune.opd.transcript import RolloutTokens


@dataclass(frozen=True)
class ScoredRollout:
    """A rollout with the teacher's scores and the (possibly gated) loss mask."""

    tokens: RolloutTokens
    input_ids: torch.Tensor  # [1, T]
    old_logprobs: torch.Tensor  # [1, T], sampling-time log p_old (0 off the mask)
    teacher_logprobs: torch.Tensor  # [1, T]
    confidence: torch.Tensor  # [1, T], teacher's top-token probability
    mask: torch.Tensor  # [1, T], student tokens of the turns the gate kept
    turns_kept: int
    turns: int

    def sampled_mask(self) -> torch.Tensor:
        """[1, T], every student token sampled (before any gate), on the scores' device."""
        return torch.tensor([self.tokens.mask], device=self.old_logprobs.device)


@torch.no_grad()
def teacher_scores(
    teacher: Any, input_ids: torch.Tensor, vocab_size: int | None = None
) -> tuple[torch.Tensor, torch.Tensor]:
    """(log p_teacher of each token, teacher's top-token probability), aligned with the ids."""
    logits = over_vocabulary(teacher(input_ids=input_ids).logits, vocab_size)
    logprobs = gather_logprobs(logits, input_ids)
    confidence = torch.softmax(shifted_logits(logits).float(), -1).amax(-1)
    return logprobs, confidence


@torch.no_grad()
def student_logprobs(
    student: Any,
    input_ids: torch.Tensor,
    precision: Precision | None = None,
    vocab_size: int | None = None,
) -> torch.Tensor:
    """log p_old recomputed: the student's forward as `accumulate_update` runs it (train mode,
    same autocast, same vocabulary cut), before the update, so the ratio starts at exactly 1."""
    student.train()
    with autocast_for(precision, input_ids):
        logits = student(input_ids=input_ids).logits
    return gather_logprobs(over_vocabulary(logits, vocab_size), input_ids)


def score_rollout(
    teacher: Any,
    tokens: RolloutTokens,
    device: str,
    selective: SelectiveConfig | None,
    vocab_size: int | None = None,
    *,
    student: Any | None = None,
    precision: Precision | None = None,
) -> ScoredRollout:
    """Teacher scores for one rollout; with Selective, the turns it would not train are masked.
    log p_old is what the sampler recorded, or, given `student`, recomputed by its forward
    (a sampler that is not the trained model: vLLM, whose log-probs differ in dtype and
    kernels)."""
    ids = torch.tensor([tokens.input_ids], device=device)
    teacher_lp, confidence = teacher_scores(teacher, ids, vocab_size)
    mask = torch.tensor([tokens.mask], device=device)
    if student is None:
        old = torch.tensor([tokens.sampled_logprobs], device=device)
    else:
        old = student_logprobs(student, ids, precision, vocab_size) * mask
    turns = len(tokens.feedback_error)
    kept = turns
    if selective is not None and turns:
        turn_ids = torch.tensor(tokens.turn_ids, device=device)
        disagreement = turn_disagreement(old[0], teacher_lp[0], turn_ids)
        gate = turn_gate(disagreement, tokens.feedback_error, selective)
        mask = gated_mask(mask, turn_ids.unsqueeze(0), gate)
        kept = sum(gate)
    return ScoredRollout(tokens, ids, old, teacher_lp, confidence, mask, kept, turns)


def sampler_gap(scored: Sequence[ScoredRollout]) -> float:
    """Mean |log p_sampler - log p_old| over the student's tokens: how far the sampler's own
    log-probs were from the trained forward's (0 when log p_old is the sampler's)."""
    total, count = 0.0, 0
    for s in scored:
        mask = s.sampled_mask()
        sampled = torch.tensor([s.tokens.sampled_logprobs], device=mask.device)
        total += float(((sampled - s.old_logprobs).abs() * mask).sum())
        count += int(mask.sum())
    return total / count if count else 0.0


def step_weights(scored: Sequence[ScoredRollout], selective: SelectiveConfig | None):
    """Per-rollout token weights with mean 1 over the step's trained tokens, or None."""
    if selective is None or not selective.confidence_weights:
        return [None] * len(scored)
    masks = [s.mask.flatten() for s in scored]
    flat = confidence_weights(torch.cat([s.confidence.flatten() for s in scored]), torch.cat(masks))
    out, start = [], 0
    for s, m in zip(scored, masks, strict=True):
        out.append(flat[start : start + m.numel()].view_as(s.mask))
        start += m.numel()
    return out


def accumulate_update(
    student: Any,
    scored: Sequence[ScoredRollout],
    weights: Sequence,
    precision: Precision | None = None,
    vocab_size: int | None = None,
) -> float:
    """Backpropagate the step's OPD loss rollout by rollout (N = the step's trained tokens);
    returns the step loss. The caller clips and steps the optimizer."""
    total_tokens = int(sum(int(s.mask.sum()) for s in scored))
    loss_sum = 0.0
    student.train()
    for s, w in zip(scored, weights, strict=True):
        if int(s.mask.sum()) == 0:
            continue
        with autocast_for(precision, s.input_ids):
            logits = student(input_ids=s.input_ids).logits
        logprobs = gather_logprobs(over_vocabulary(logits, vocab_size), s.input_ids)
        advantages = token_advantages(s.teacher_logprobs, s.old_logprobs)
        loss = opd_loss(logprobs, s.old_logprobs, advantages, s.mask, w, num_tokens=total_tokens)
        loss.backward()
        loss_sum += float(loss.item())
    return loss_sum


@torch.no_grad()
def heldout_reverse_kl(
    student: Any,
    teacher: Any,
    rollouts: Sequence[RolloutTokens],
    device: str,
    precision: Precision | None = None,
    vocab_size: int | None = None,
):
    """Full-vocabulary reverse KL(student || teacher) per student-sampled token, over rollouts
    the current student sampled on held-out tasks (token-weighted mean); the vocabulary is the
    tokenizer's (`vocab_size`), padding rows of either embedding ignored."""
    student.eval()
    total, count = 0.0, 0
    for tokens in rollouts:
        mask = torch.tensor([tokens.mask], device=device)
        n = int(mask.sum())
        if n == 0:
            continue
        ids = torch.tensor([tokens.input_ids], device=device)
        with autocast_for(precision, ids):
            s_logits = shifted_logits(over_vocabulary(student(input_ids=ids).logits, vocab_size))
        t_logits = shifted_logits(over_vocabulary(teacher(input_ids=ids).logits, vocab_size))
        total += exact_reverse_kl(s_logits, t_logits, mask) * n
        count += n
    return total / count if count else 0.0
