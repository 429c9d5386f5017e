"""Evaluate an agent in the simulated environments: k attempts per held-out task.

Each attempt is a rollout (trajforge.generators.rollout) of the agent against the scripted
simulated user and the domain's tool simulator, verified by the programmatic outcome check
(state hash vs gold, expected outputs communicated, clean termination). Attempts run
concurrently on the runtime's shared loop (`run_all`). Held-out tasks are the test split
(or `golden`, when a build has one) of a run directory, or fresh tasks synthesised from seeds
in their own namespace ("eval"), disjoint from any build's.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Sequence
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field, model_validator

from trajforge.finetune.agents import AgentSpec, agent_factory
from trajforge.finetune.metrics import GroupScore, score
from trajforge.generators.agent import AgentPolicy
from trajforge.generators.llm.concurrency import run_all
from trajforge.generators.rollout import run_rollout
from trajforge.generators.tooling import Domain
from trajforge.generators.user import ScriptedUser
from trajforge.schemas import (
    LLMError,
    Provenance,
    Rejected,
    SamplingParams,
    Task,
    Trajectory,
    derive_seed,
)
from trajforge.verifiers.outcome import verify_outcome


class EvalConfig(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    tasks: str | None = None  # run directory with held-out tasks
    split: str = "test"
    domain: str = "retail"
    num_tasks: int = Field(default=8, ge=1)
    seed: int = 0
    k: int = Field(default=1, ge=1)
    max_turns: int = Field(default=20, ge=1)
    max_steps: int = Field(default=40, ge=1)
    max_in_flight: int = Field(default=8, ge=1)
    temperature: float = Field(default=0.0, ge=0, le=2)
    max_tokens: int = Field(default=512, ge=1)
    family: str | None = None
    base_url: str | None = None

    @model_validator(mode="after")
    def _tasks_or_domain(self) -> EvalConfig:
        if self.tasks is not None and not Path(self.tasks).is_dir():
            raise ValueError(f"tasks: {self.tasks} is not a directory; give a finished run dir")
        return self


class AttemptResult(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    task_id: str
    attempt: int
    passed: bool
    reason: str  # the outcome verifier's reason, or the error that ended the attempt


class TaskResult(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    task_id: str
    task_types: tuple[str, ...]
    complexity: int
    attempts: int
    successes: int
    reasons: tuple[str, ...]


class EvalReport(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    agent: str
    k: int
    overall: GroupScore
    by_task_type: dict[str, GroupScore]
    by_complexity: dict[str, GroupScore]
    tasks: tuple[TaskResult, ...]
    tasks_skipped: dict[str, int] = {}  # fresh tasks not synthesised or verified: reason -> count


def held_out_tasks(cfg: EvalConfig, domain: Domain) -> tuple[list[Task], dict[str, int]]:
    """(tasks, skipped by reason): a run's held-out split, or fresh tasks from eval-only seeds."""
    if cfg.tasks is not None:
        from trajforge.finetune.data import load_tasks

        tasks = load_tasks(cfg.tasks, cfg.split)
        return tasks[: cfg.num_tasks], {}
    return fresh_tasks(domain, "eval", cfg.seed, cfg.num_tasks)


def fresh_tasks(
    domain: Domain, namespace: str, seed: int, count: int
) -> tuple[list[Task], dict[str, int]]:
    """(tasks, skipped by typed reason): verified tasks from seeds in their own namespace
    ("eval", "opd", ...), so evaluation and training never share a task."""
    from trajforge.generators.personas import sample_persona
    from trajforge.generators.task_verification import verify_task

    tasks: list[Task] = []
    skipped: dict[str, int] = {}
    for i in range(count):
        persona = sample_persona(derive_seed(namespace, seed, i, "persona"))
        try:
            task = domain.synthesize_task(persona, derive_seed(namespace, seed, i, "task"))
            tasks.append(verify_task(domain, task))
        except Rejected as rejected:
            skipped[rejected.reason] = skipped.get(rejected.reason, 0) + 1
    return tasks, skipped


async def _attempt(
    task: Task, attempt: int, domain: Domain, agent: AgentPolicy, cfg: EvalConfig, label: str
) -> AttemptResult:
    seed = derive_seed(task.id, "eval", attempt)
    try:
        trajectory: Trajectory = await run_rollout(
            task,
            domain,
            agent,
            ScriptedUser(task),
            max_turns=cfg.max_turns,
            max_steps=cfg.max_steps,
            seed=seed,
            provenance=Provenance(models={"agent": label}, seeds={"eval": seed}),
        )
    except (LLMError, Rejected) as err:
        return AttemptResult(task_id=task.id, attempt=attempt, passed=False, reason=f"error: {err}")
    outcome = verify_outcome(trajectory, domain)
    return AttemptResult(
        task_id=task.id, attempt=attempt, passed=outcome.passed, reason=outcome.reason
    )


def _task_results(tasks: Sequence[Task], attempts: Sequence[AttemptResult]) -> list[TaskResult]:
    by_task: dict[str, list[AttemptResult]] = defaultdict(list)
    for a in attempts:
        by_task[a.task_id].append(a)
    return [
        TaskResult(
            task_id=t.id,
            task_types=tuple(dict.fromkeys(t.intent.task_types)),
            complexity=t.intent.complexity,
            attempts=len(by_task[t.id]),
            successes=sum(a.passed for a in by_task[t.id]),
            reasons=tuple(a.reason for a in by_task[t.id]),
        )
        for t in tasks
    ]


def build_report(
    label: str, k: int, results: Sequence[TaskResult], skipped: dict[str, int] | None = None
) -> EvalReport:
    """Scores overall, per task type (a task counts under each of its types), per complexity."""
    pairs = lambda rs: [(r.attempts, r.successes) for r in rs]  # noqa: E731
    types: dict[str, list[TaskResult]] = defaultdict(list)
    levels: dict[str, list[TaskResult]] = defaultdict(list)
    for r in results:
        for t in r.task_types:
            types[t].append(r)
        levels[str(r.complexity)].append(r)
    return EvalReport(
        agent=label,
        k=k,
        overall=score(pairs(results), k),
        by_task_type={t: score(pairs(rs), k) for t, rs in sorted(types.items())},
        by_complexity={c: score(pairs(rs), k) for c, rs in sorted(levels.items())},
        tasks=tuple(results),
        tasks_skipped=dict(skipped or {}),
    )


def evaluate(
    cfg: EvalConfig,
    spec: AgentSpec,
    tasks: Sequence[Task],
    domain: Domain,
    skipped: dict[str, int] | None = None,
) -> EvalReport:
    """k attempts of the agent on every task, concurrently; the scored report."""
    sampling = SamplingParams(temperature=cfg.temperature, max_tokens=cfg.max_tokens)
    make_agent: Callable[[Task], AgentPolicy] = agent_factory(
        spec, sampling, cfg.family, cfg.base_url
    )
    works = [
        (lambda t=task, a=attempt: _attempt(t, a, domain, make_agent(t), cfg, spec.label))
        for task in tasks
        for attempt in range(cfg.k)
    ]
    attempts = run_all(works, cfg.max_in_flight)
    return build_report(spec.label, cfg.k, _task_results(tasks, attempts), skipped)


def format_table(reports: Sequence[EvalReport]) -> str:
    """One row per group (overall, each task type, each complexity), one column block per agent."""
    k = reports[0].k
    metrics = ["success", *(f"pass^{j}" for j in range(1, k + 1)), f"pass@{k}"]
    groups: dict[str, list[GroupScore | None]] = {"overall": [r.overall for r in reports]}
    for attr, prefix in (("by_task_type", "type: "), ("by_complexity", "complexity ")):
        keys = sorted({key for r in reports for key in getattr(r, attr)})
        for key in keys:
            groups[prefix + key] = [getattr(r, attr).get(key) for r in reports]
    head = f"{'group':<28}{'tasks':>6}" + "".join(
        f"  {r.agent[-30:]:>{9 * len(metrics)}}" for r in reports
    )
    sub = " " * 34 + "".join("  " + "".join(f"{m:>9}" for m in metrics) for _ in reports)
    lines = [head, sub, "-" * len(sub)]
    for name, scores in groups.items():
        tasks = next((s.tasks for s in scores if s is not None), 0)
        cells = []
        for s in scores:
            values = (
                [s.success, *(s.pass_hat[j] for j in range(1, k + 1)), s.pass_at[k]]
                if s and s.tasks
                else []
            )
            cells.append("".join(f"{v:>9.3f}" for v in values) or f"{'-':>{9 * len(metrics)}}")
        lines.append(f"{name:<28}{tasks:>6}" + "".join("  " + c for c in cells))
    return "\n".join(lines)
