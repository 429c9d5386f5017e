"""Multi-axis LLM judge over a whole trajectory, with atomic rubric criteria per axis.

Why atomic criteria: a judge asked "rate this 1-10" is noisy and uncalibrated; a judge asked a
handful of yes/no questions per axis is easier to check, to aggregate across a committee and to
calibrate against the programmatic outcome. The answer must be JSON validated against a schema:
a malformed answer is retried with a new seed and finally recorded as `ungradeable`, which the
gate rejects; nothing malformed ever passes.
"""

from __future__ import annotations

import json
import re
import statistics
from collections.abc import Mapping, Sequence
from types import MappingProxyType
from typing import ClassVar, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    StrictBool,
    ValidationError,
    field_validator,
    model_validator,
)

from trajforge.schemas import (
    AxisScore,
    ChatRequest,
    CriterionResult,
    JudgeAxis,
    Judgement,
    LLMClient,
    LLMError,
    Message,
    RejectionReason,
    SamplingParams,
    Trajectory,
    derive_seed,
)
from trajforge.verifiers.protocol import FilterContext, FilterModel
from trajforge.verifiers.result import FilterResult
from trajforge.verifiers.rubric import RUBRIC, Rubric, load_rubric

__all__ = ["RUBRIC", "JudgeConfig", "JudgeGate", "TrajectoryJudge", "criterion_ids", "judge_gate"]

Aggregation = Literal["majority", "mean"]


#: Pass thresholds where `thresholds` does not override them (other axes: 0.5).
DEFAULT_THRESHOLDS: Mapping[str, float] = MappingProxyType({"task_success": 1.0, "grounding": 1.0})


class JudgeConfig(BaseModel):
    """Judge settings: the rubric (built-in, or `package.module:NAME` from the user's package),
    which of its axes to grade (all by default), per-axis threshold overrides, committee and
    retries."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    rubric: str | None = None
    axes: tuple[JudgeAxis, ...] | None = None
    thresholds: dict[JudgeAxis, float] = Field(default_factory=dict)
    committee_size: int = Field(default=1, ge=1)
    aggregation: Aggregation = "majority"
    max_attempts: int = Field(default=3, ge=1)  # per committee member, malformed answers retried
    temperature: float = Field(default=0.0, ge=0.0, le=2.0)
    max_tokens: int = Field(default=1024, ge=64)

    @field_validator("thresholds")
    @classmethod
    def _thresholds_on_the_scale(cls, thresholds: dict[str, float]) -> dict:
        """Axis scores are fractions of criteria passed (0..1): a threshold of 5.0 would reject
        everything, silently."""
        bad = {axis: t for axis, t in thresholds.items() if not 0.0 <= t <= 1.0}
        if bad:
            raise ValueError(
                f"judge thresholds are on the 0..1 axis scale, got {bad}; use e.g. 0.5 or 1.0"
            )
        return thresholds

    @model_validator(mode="after")
    def _axes_in_rubric(self) -> JudgeConfig:
        known = self.criteria()  # imports a plugin rubric now, not on a worker
        unknown = sorted({*(self.axes or ()), *self.thresholds} - set(known))
        if unknown:
            raise ValueError(
                f"axes {', '.join(unknown)} are not in the rubric; its axes: {', '.join(known)}"
            )
        return self

    def criteria(self) -> Rubric:
        """The rubric this config grades with (resolved once per process)."""
        try:
            return load_rubric(self.rubric)
        except ValueError as err:
            raise ValueError(f"rubric: {err}") from None

    def graded_axes(self) -> tuple[str, ...]:
        return tuple(self.axes) if self.axes else tuple(self.criteria())

    def threshold(self, axis: str) -> float:
        return self.thresholds.get(axis, DEFAULT_THRESHOLDS.get(axis, 0.5))


# ---------------------------------------------------------------------------------------------
# The answer schema


class CriterionVerdict(BaseModel):
    model_config = ConfigDict(extra="forbid")

    passed: StrictBool
    rationale: str = ""


class JudgeAnswer(BaseModel):
    """What the judge must return: `{"criteria": {"<id>": {"passed": bool, "rationale": str}}}`."""

    model_config = ConfigDict(extra="forbid")

    criteria: dict[str, CriterionVerdict]


class MalformedAnswer(ValueError):
    """The judge's text is not valid JSON, misses criteria, or has wrong types."""


def parse_answer(text: str, criterion_ids: Sequence[str]) -> JudgeAnswer:
    """Validate the judge's JSON text; every rubric criterion must be answered."""
    stripped = re.sub(r"^```(?:json)?\s*|\s*```$", "", text.strip())
    try:
        answer = JudgeAnswer.model_validate_json(stripped)
    except ValidationError as err:
        raise MalformedAnswer(str(err).splitlines()[0]) from err
    missing = [c for c in criterion_ids if c not in answer.criteria]
    if missing:
        raise MalformedAnswer(f"missing criteria: {', '.join(missing)}")
    return answer


# ---------------------------------------------------------------------------------------------
# The prompt


def criterion_ids(axes: Sequence[str], rubric: Rubric = RUBRIC) -> list[str]:
    return [f"{axis}.{cid}" for axis in axes for cid, _ in rubric[axis]]


def render_transcript(trajectory: Trajectory) -> str:
    """The conversation as numbered lines, tool calls and results included."""
    lines = []
    for i, m in enumerate(trajectory.messages):
        if m.content:
            lines.append(f"[{i}] {m.role.upper()}: {m.content}")
        for c in m.tool_calls:
            lines.append(f"[{i}] AGENT CALLS {c.name}({json.dumps(c.arguments, sort_keys=True)})")
    return "\n".join(lines)


def _system_prompt(axes: Sequence[str], rubric: Rubric) -> str:
    questions = "\n".join(
        f"- {axis}.{cid}: {question}" for axis in axes for cid, question in rubric[axis]
    )
    example = json.dumps({"criteria": {"<criterion id>": {"passed": True, "rationale": "..."}}})
    return (
        "You grade a conversation between a simulated user and a tool-using agent that serves "
        "it. Answer each yes/no criterion strictly; when unsure, answer no.\n"
        f"Criteria:\n{questions}\n"
        f"Reply with one JSON object only, shaped like {example}, with every criterion id."
    )


def _user_prompt(trajectory: Trajectory, policy: str) -> str:
    task = trajectory.task
    scenario = task.scenario
    known = json.dumps(scenario.known_info, sort_keys=True)
    gold = "; ".join(
        f"{a.name}({json.dumps(a.arguments, sort_keys=True)})" for a in task.gold_actions
    )
    return (
        f"# Domain policy\n{policy}\n\n"
        f"# User scenario\nReason: {scenario.reason_for_contact}\nKnown info: {known}\n"
        f"Unknown info: {', '.join(scenario.unknown_info)}\nInstructions: {scenario.instructions}\n\n"
        f"# Reference\nExpected outputs: {', '.join(task.expected_outputs) or '(none)'}\n"
        f"Reference actions: {gold or '(none)'}\n\n"
        f"# Conversation\n{render_transcript(trajectory)}"
    )


def judge_request(
    trajectory: Trajectory, policy: str, model: str, seed: int, config: JudgeConfig
) -> ChatRequest:
    return ChatRequest(
        model=model,
        messages=(
            Message(role="system", content=_system_prompt(config.graded_axes(), config.criteria())),
            Message(role="user", content=_user_prompt(trajectory, policy)),
        ),
        sampling=SamplingParams(temperature=config.temperature, max_tokens=config.max_tokens),
        seed=seed,
        response_format="json_object",
    )


# ---------------------------------------------------------------------------------------------
# Scoring and aggregation


def _axis_scores(answer: JudgeAnswer, axes: Sequence[str], rubric: Rubric) -> tuple[AxisScore, ...]:
    scores = []
    for axis in axes:
        results = tuple(
            CriterionResult(
                criterion=f"{axis}.{cid}",
                passed=answer.criteria[f"{axis}.{cid}"].passed,
                rationale=answer.criteria[f"{axis}.{cid}"].rationale,
            )
            for cid, _ in rubric[axis]
        )
        scores.append(
            AxisScore(
                axis=axis, score=sum(r.passed for r in results) / len(results), criteria=results
            )
        )
    return tuple(scores)


def aggregate(
    members: Sequence[tuple[AxisScore, ...]], aggregation: Aggregation
) -> tuple[tuple[AxisScore, ...], float | None]:
    """Committee verdict per axis and the disagreement (mean over axes of the score stdev).

    "majority": each criterion passes when more than half the members passed it (ties fail);
    "mean": the axis score is the mean of the members' scores.
    """
    axes = [s.axis for s in members[0]]
    combined = []
    spreads = []
    for i, axis in enumerate(axes):
        votes = [m[i] for m in members]
        member_scores = [v.score for v in votes]
        spreads.append(statistics.pstdev(member_scores))
        criteria = tuple(
            CriterionResult(
                criterion=c.criterion,
                passed=sum(v.criteria[j].passed for v in votes) * 2 > len(votes),
                rationale=" | ".join(
                    v.criteria[j].rationale for v in votes if v.criteria[j].rationale
                ),
            )
            for j, c in enumerate(votes[0].criteria)
        )
        score = (
            sum(c.passed for c in criteria) / len(criteria)
            if aggregation == "majority"
            else statistics.fmean(member_scores)
        )
        combined.append(AxisScore(axis=axis, score=score, criteria=criteria))
    disagreement = statistics.fmean(spreads) if len(members) > 1 else None
    return tuple(combined), disagreement


class TrajectoryJudge:
    """Grades trajectories with one judge or a committee (member i uses client/model i mod n)."""

    def __init__(self, clients: Sequence[LLMClient], models: Sequence[str], config: JudgeConfig):
        if not clients or len(clients) != len(models):
            raise ValueError("TrajectoryJudge needs one model name per client (at least one)")
        self._clients = tuple(clients)
        self._models = tuple(models)
        self.config = config

    @property
    def name(self) -> str:
        n = self.config.committee_size
        return self._models[0] if n == 1 else f"committee[{n}]:" + "+".join(self._models)

    async def judge(self, trajectory: Trajectory, policy: str, seed: int) -> Judgement:
        """One Judgement: graded when a majority of members answered well-formed JSON."""
        members = [
            await self._member(trajectory, policy, seed, i)
            for i in range(self.config.committee_size)
        ]
        graded = [m for m in members if isinstance(m, tuple)]
        failures = [m for m in members if isinstance(m, str)]
        if len(graded) * 2 <= len(members):
            return Judgement(
                judge=self.name, status="ungradeable", detail="; ".join(failures)[:2000]
            )
        axes, disagreement = aggregate(graded, self.config.aggregation)
        detail = (
            f"{len(failures)} member(s) ungradeable: " + "; ".join(failures) if failures else ""
        )
        return Judgement(
            judge=self.name, status="graded", axes=axes, disagreement=disagreement, detail=detail
        )

    async def _member(
        self, trajectory: Trajectory, policy: str, seed: int, member: int
    ) -> tuple[AxisScore, ...] | str:
        """A member's axis scores, or the reason its last attempt failed."""
        client = self._clients[member % len(self._clients)]
        model = self._models[member % len(self._models)]
        axes, rubric = self.config.graded_axes(), self.config.criteria()
        ids = criterion_ids(axes, rubric)
        error = "no attempt"
        for attempt in range(self.config.max_attempts):
            attempt_seed = derive_seed(seed, "judge", member, attempt)
            request = judge_request(trajectory, policy, model, attempt_seed, self.config)
            try:
                response = await client.complete(request)
                answer = parse_answer(response.message.content or "", ids)
            except (MalformedAnswer, LLMError) as err:
                error = f"{model} attempt {attempt + 1}: {err}"
                continue
            return _axis_scores(answer, axes, rubric)
        return error


def judge_gate(judgement: Judgement, config: JudgeConfig) -> FilterResult:
    """Reject ungradeable judgements and any axis scored below its threshold (named)."""
    if judgement.status != "graded":
        return FilterResult.reject("judge_ungradeable", judgement.detail or "ungradeable")
    scores = {a.axis: a.score for a in judgement.axes}
    low = [
        f"{axis} {scores[axis]:.2f} < {config.threshold(axis):.2f}"
        for axis in config.graded_axes()
        if axis in scores and scores[axis] < config.threshold(axis)
    ]
    missing = [axis for axis in config.graded_axes() if axis not in scores]
    if missing:
        return FilterResult.reject("judge_ungradeable", f"axes not graded: {', '.join(missing)}")
    if low:
        return FilterResult.reject("judge_below_threshold", "; ".join(low))
    return FilterResult.ok()


class JudgeGate(FilterModel):
    """The latest attached judgement is graded and every axis meets its threshold."""

    name: ClassVar[str] = "judge"
    reasons: ClassVar[tuple[RejectionReason, ...]] = ("judge_below_threshold", "judge_ungradeable")

    settings: JudgeConfig = JudgeConfig()

    def check(self, trajectory: Trajectory, context: FilterContext) -> FilterResult:
        if not trajectory.judgements:
            return FilterResult.reject("judge_ungradeable", "no judgement attached")
        return judge_gate(trajectory.judgements[-1], self.settings)
