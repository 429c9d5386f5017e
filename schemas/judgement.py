"""Judgements (LLM judges) and rejections (every record a stage refuses).

Rejection reasons are typed in two layers: `BuiltinReason` is the closed set the package's own
stages emit (checked statically), and a filter or domain from the user's own package may declare
more (`DeclaredReason`: a validated snake_case identifier, optionally dotted like
`policy.confirm_before_write`). Either way a reason is declared up front by whoever emits it,
validated on every record, and counted by name.
"""

from __future__ import annotations

import re
from typing import Annotated, Literal, get_args

from pydantic import StringConstraints

from trajforge.schemas.base import Record

BuiltinAxis = Literal[
    "task_success",
    "policy_compliance",
    "grounding",
    "tool_use",
    "efficiency",
    "user_fidelity",
]

#: A rubric from the user's package may grade its own axes (snake_case ids).
JudgeAxis = BuiltinAxis | Annotated[str, StringConstraints(pattern=r"^[a-z][a-z0-9_]{0,47}$")]

Stage = Literal[
    "synthesize",
    "verify_task",
    "baseline",
    "rollout",
    "blueprint",
    "outcome",
    "judge",
    "shortcut",
    "attempts",
    "dedup",
    "split",
]

BuiltinReason = Literal[
    # task synthesis / pre-rollout verification
    "no_feasible_task",
    "gold_action_failed",
    "gold_no_state_change",
    "already_solved",
    "prefix_solves",
    "exposed_constant",
    "no_tool_answer_succeeds",
    # search-domain question synthesis: one typed reason per shortcut risk
    "evidence_co_coverage",
    "single_clue_selective",
    "prior_knowledge_binding",
    "guessable_answer",
    # generation
    "entity_mismatch",
    "role_confusion",
    "max_turns_reached",
    "generation_failed",
    # untrusted-text boundary (schemas/sanitize.py) and size bounds (build config `limits`)
    "oversized_content",
    "oversized_arguments",
    "control_token",
    "prompt_injection",  # instructions addressed to the model in user or tool text
    # outcome
    "state_mismatch",
    "outputs_not_communicated",
    "bad_termination",
    "evidence_not_covered",
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
    "user_states_answer",
    "degenerate_turn",
    "shortcut_prone_task",
    "outcome_not_told",
    "ungrounded_claim",
    # policy as code (generators/policy_rules.py RULE_IDS)
    "policy.one_call_at_a_time",
    "policy.authenticate_first",
    "policy.own_records_only",
    "policy.write_after_refusal",
    "policy.confirm_before_write",
    "policy.one_write_per_confirmation",
    "policy.status_not_allowed",
    "policy.needless_transfer",
    "policy.cite_read_documents",
    "policy.claimed_user_action",
    # k attempts per task (rollout.attempts): a passing attempt whose messages repeat an
    # earlier one of its task, and a task no attempt of which passed (its pass rate recorded)
    "duplicate_attempt",
    "no_passing_attempt",
    # dedup
    "exact_duplicate",
    "near_duplicate",
    "semantic_duplicate",
    # split
    "split_leakage",
]

BUILTIN_REASONS: frozenset[str] = frozenset(get_args(BuiltinReason))

#: A declared reason: lowercase snake_case words joined by dots, at most 64 characters.
REASON_PATTERN = r"^[a-z][a-z0-9_]*(\.[a-z][a-z0-9_]*)*$"
_REASON_RE = re.compile(REASON_PATTERN)

DeclaredReason = Annotated[str, StringConstraints(pattern=REASON_PATTERN, max_length=64)]

#: What a Rejection carries: a built-in reason, or one a plugin filter or domain declared.
RejectionReason = BuiltinReason | DeclaredReason


def is_reason_id(value: object) -> bool:
    """True when `value` can name a rejection reason (what `DeclaredReason` validates)."""
    return isinstance(value, str) and len(value) <= 64 and bool(_REASON_RE.match(value))


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
    filter: str | None = None  # the trajectory filter that refused it, when one did


class Rejected(Exception):
    """Raised by a stage's logic to refuse a record with a typed reason (becomes a Rejection)."""

    def __init__(self, reason: RejectionReason, detail: str, filter_name: str | None = None):
        super().__init__(f"{reason}: {detail}")
        self.reason = reason
        self.detail = detail
        self.filter_name = filter_name
