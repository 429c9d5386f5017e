"""Judgements (LLM judges) and rejections (every record a stage refuses)."""

from __future__ import annotations

from typing import Literal

from trajforge.schemas.base import Record

JudgeAxis = Literal[
    "task_success",
    "policy_compliance",
    "grounding",
    "tool_use",
    "efficiency",
    "user_fidelity",
]

Stage = Literal[
    "synthesize",
    "verify_task",
    "baseline",
    "rollout",
    "blueprint",
    "outcome",
    "judge",
    "shortcut",
    "dedup",
    "split",
]

RejectionReason = Literal[
    # task synthesis / pre-rollout verification
    "no_feasible_task",
    "gold_action_failed",
    "gold_no_state_change",
    "already_solved",
    "prefix_solves",
    "exposed_constant",
    "no_tool_answer_succeeds",
    # generation
    "entity_mismatch",
    "role_confusion",
    "max_turns_reached",
    "generation_failed",
    # untrusted-text boundary (schemas/sanitize.py) and size bounds (build config `limits`)
    "oversized_content",
    "oversized_arguments",
    "control_token",
    # outcome
    "state_mismatch",
    "outputs_not_communicated",
    "bad_termination",
    # judges
    "judge_below_threshold",
    "judge_ungradeable",
    # shortcut resistance
    "answer_before_evidence",
    "hallucinated_value",
    "no_agent_tool_call",
    "narrated_action",
    "loop_or_repeat",
    "user_hallucination",
    "shortcut_prone_task",
    # dedup
    "exact_duplicate",
    "near_duplicate",
    "semantic_duplicate",
    # split
    "split_leakage",
]


class CriterionResult(Record):
    criterion: str
    passed: bool
    rationale: str = ""


class AxisScore(Record):
    axis: JudgeAxis
    score: float  # 0..1: fraction of criteria passed (or committee mean)
    criteria: tuple[CriterionResult, ...] = ()


class Judgement(Record):
    judge: str  # model name or committee id
    status: Literal["graded", "ungradeable"]
    axes: tuple[AxisScore, ...] = ()
    disagreement: float | None = None  # committee spread, when several judges voted
    detail: str = ""


class Rejection(Record):
    """A record a stage refused, with a typed reason. The payload keeps it: no data is lost."""

    record_id: str
    stage: Stage
    reason: RejectionReason
    detail: str
    payload_json: str


class Rejected(Exception):
    """Raised by a stage's logic to refuse a record with a typed reason (becomes a Rejection)."""

    def __init__(self, reason: RejectionReason, detail: str):
        super().__init__(f"{reason}: {detail}")
        self.reason = reason
        self.detail = detail
