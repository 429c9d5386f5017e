"""Selective OPD: train only the turns where the teacher would intervene, weighted by its
confidence.

Gate: after the teacher has scored the whole trajectory (one pass), each student turn gets the
teacher's judgment of it: its disagreement (mean `log p_student - log p_teacher` over the turn's
tokens, i.e. the turn's sampled reverse KL) and whether the environment answered the turn with
an error. A turn is trained ("intervene") when the disagreement exceeds `gate_threshold` or,
with `gate_on_error`, when the turn's feedback was an error; other turns are skipped (their
mask goes to zero). Weights: each kept token is weighted by the teacher's confidence at that
position (its top-token probability), renormalised so the weights average 1 over the trained
tokens: the loss keeps the standard scale, only its distribution over tokens changes.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch
from pydantic import BaseModel, ConfigDict, Field


class SelectiveConfig(BaseModel):
    """Selective OPD options (off unless the run config has a `selective` section)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    gate_threshold: float = Field(
        default=0.0,
        description="train a turn when its mean teacher disagreement (nats/token) exceeds this",
    )
    gate_on_error: bool = Field(
        default=True, description="always train a turn the environment answered with an error"
    )
    confidence_weights: bool = Field(
        default=True, description="weight tokens by the teacher's top-token probability"
    )


def turn_gate(
    disagreement: Sequence[float], feedback_error: Sequence[bool], config: SelectiveConfig
) -> list[bool]:
    """Per student turn: True to train it (the teacher intervenes), False to skip it."""
    if len(disagreement) != len(feedback_error):
        raise ValueError("turn_gate: one feedback flag per turn is needed")
    return [
        d > config.gate_threshold or (config.gate_on_error and err)
        for d, err in zip(disagreement, feedback_error, strict=True)
    ]


def turn_disagreement(
    student_logprobs: torch.Tensor, teacher_logprobs: torch.Tensor, turn_ids: torch.Tensor
) -> list[float]:
    """Mean `log p_student - log p_teacher` per turn; `turn_ids` is the turn index of each
    student token and -1 elsewhere (1-D, one sequence)."""
    n_turns = int(turn_ids.max().item()) + 1 if turn_ids.numel() else 0
    out = []
    for k in range(n_turns):
        sel = turn_ids == k
        diff = (student_logprobs[sel] - teacher_logprobs[sel]).float()
        out.append(float(diff.mean().item()) if diff.numel() else 0.0)
    return out


def gated_mask(mask: torch.Tensor, turn_ids: torch.Tensor, gate: Sequence[bool]) -> torch.Tensor:
    """The loss mask with the tokens of skipped turns zeroed."""
    kept = [k for k, on in enumerate(gate) if on]
    kept_turns = torch.tensor(kept, dtype=turn_ids.dtype, device=turn_ids.device)
    return mask * torch.isin(turn_ids, kept_turns).to(mask.dtype)


def confidence_weights(confidence: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """Per-token weights proportional to the teacher's confidence, with mean 1 over the masked
    tokens (0 elsewhere); all zeros when nothing is masked."""
    masked = confidence.float() * mask.float()
    n = mask.sum()
    total = masked.sum()
    if n.item() == 0 or total.item() <= 0:
        return mask.float()
    return masked * (n / total)
