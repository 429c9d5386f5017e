"""The OPD objective: per-token advantages and the importance-weighted policy-gradient loss.

With `A_t = log p_teacher(y_t) - log p_old(y_t)` on each token the student sampled, the loss
`-(1/N) sum_t m_t * w_t * exp(logp_theta - logp_old) * sg(A_t)` is a policy gradient whose
reward is the negative per-token reverse KL to the teacher (tinker-cookbook's and the
on-policy-distillation papers' form). `m_t` is 1 only on student-sampled tokens (never on
prompt, tool, user or teacher-guided tokens), `w_t` are optional per-token weights (Selective),
and N counts the trained tokens of the whole optimizer step, so the loss scale does not depend
on how the step is split into micro-batches.

Pure tensor functions; no model, no I/O.
"""

from __future__ import annotations

import torch


def token_advantages(teacher_logprobs: torch.Tensor, old_logprobs: torch.Tensor) -> torch.Tensor:
    """`A_t = log p_teacher(y_t) - log p_old(y_t)`, detached: the advantage is a fixed reward."""
    return (teacher_logprobs - old_logprobs).detach()


def opd_loss(
    logprobs: torch.Tensor,
    old_logprobs: torch.Tensor,
    advantages: torch.Tensor,
    mask: torch.Tensor,
    weights: torch.Tensor | None = None,
    num_tokens: int | None = None,
) -> torch.Tensor:
    """The OPD loss of a batch: `-(1/N) sum_t m_t * w_t * exp(logp - logp_old) * sg(A_t)`.

    `num_tokens` is N when the optimizer step spans several micro-batches (the step's total of
    trained tokens); by default it is this batch's. With no trained token the loss is an exact
    zero that still backpropagates (a zero gradient), so a step never divides by zero.
    """
    trained = mask.to(logprobs.dtype)
    if weights is not None:
        trained = trained * weights.detach()
    n = int(mask.sum().item()) if num_tokens is None else num_tokens
    ratio = torch.exp(logprobs - old_logprobs.detach())
    total = (trained * ratio * advantages.detach()).sum()
    if n == 0:
        return total * 0.0
    return -total / n


def sampled_reverse_kl(
    student_logprobs: torch.Tensor, teacher_logprobs: torch.Tensor, mask: torch.Tensor
) -> float:
    """Monte-Carlo reverse KL per trained token: mean of `log p_student - log p_teacher` on the
    student's own samples (the negative mean advantage); 0.0 with no trained token."""
    n = mask.sum().item()
    if n == 0:
        return 0.0
    diff = (student_logprobs - teacher_logprobs) * mask.to(student_logprobs.dtype)
    return float(diff.sum().item() / n)


def exact_reverse_kl(
    student_logits: torch.Tensor, teacher_logits: torch.Tensor, mask: torch.Tensor
) -> float:
    """Full-vocabulary reverse KL `sum_v p_s (log p_s - log p_t)`, averaged over the masked
    positions (logits aligned with the tokens they predict, see `shifted_logits`). Exact, so a small evaluation
    set measures a change that the sampled estimate would bury in noise."""
    n = mask.sum().item()
    if n == 0:
        return 0.0
    log_s = torch.log_softmax(student_logits.float(), dim=-1)
    log_t = torch.log_softmax(teacher_logits.float(), dim=-1)
    per_position = (log_s.exp() * (log_s - log_t)).sum(dim=-1)
    return float((per_position * mask.to(per_position.dtype)).sum().item() / n)


def gather_logprobs(logits: torch.Tensor, input_ids: torch.Tensor) -> torch.Tensor:
    """Log-probability of each token given those before it, aligned with `input_ids` (and so
    with the loss mask): `out[:, t] = log p(ids[:, t] | ids[:, :t])`; position 0 has no
    context and gets 0 (it is never a sampled token)."""
    logp = torch.log_softmax(logits[:, :-1].float(), dim=-1)
    picked = logp.gather(-1, input_ids[:, 1:].unsqueeze(-1)).squeeze(-1)
    return torch.nn.functional.pad(picked, (1, 0))


def over_vocabulary(logits: torch.Tensor, vocab_size: int | None) -> torch.Tensor:
    """The logits of the tokenizer's `vocab_size` tokens only. Models of one family often pad
    the embedding matrix (to a multiple of 128 or 256) past the tokenizer: those rows are no
    token, their width differs between a student and its teacher, and their probability mass
    would only blur both distributions, so every place where teacher and student logits meet
    (sampling, scoring, the update, the KL) compares them over the shared vocabulary."""
    return logits if vocab_size is None else logits[..., :vocab_size]


def shifted_logits(logits: torch.Tensor) -> torch.Tensor:
    """Logits aligned with `input_ids` like `gather_logprobs`: row t predicts token t (row 0 is
    the first row repeated, and is never under the mask)."""
    return torch.cat([logits[:, :1], logits[:, :-1]], dim=1)
