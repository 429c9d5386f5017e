"""Evaluate an agent in the simulated environments: k attempts per held-out task.

Each attempt is a rollout (trajforge.generators.rollout) of the agent against a simulated user
(the scripted one, or an LLM user with `user: llm`) and the domain's tool simulator, verified by
the programmatic outcome check (state hash vs gold, expected outputs communicated, clean
termination) AND the domain's policy rules (verifiers/policy.py: authentication, confirmation
before each write, ...), through the same gate as `trajforge verify` (verifiers/gate.py): an
agent that reaches the gold state by breaking the policy fails, with the rule as its typed
reason, and the report counts failing attempts per reason. Attempts run
concurrently on the runtime's shared loop (`run_all`). Held-out tasks are every task of a run
directory's `split` (`golden` by default; `max_tasks` caps them and the report says how many it
left out), or `num_tasks` fresh tasks synthesised from seeds in their own namespace ("eval"),
disjoint from any build's. Every score carries a 95% interval (finetune/metrics.py).

A score says how often an agent fails, not what it does: `write_transcripts` writes every
attempt's conversation with its typed failures (`trajforge eval --transcripts FILE.jsonl`).
"""

from __future__ import annotations

import os
from collections import Counter, defaultdict
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from trajforge.finetune.agents import (
    AgentSpec,
    UserFactory,
    agent_factory,
    parse_agent,
    user_factory,
)
from trajforge.finetune.config import FinetuneConfigError
from trajforge.finetune.data import load_task_difficulty, split_trajectories
from trajforge.finetune.metrics import GroupScore, score
from trajforge.generators.agent import AgentPolicy
from trajforge.generators.llm.concurrency import run_all
from trajforge.generators.personas import sample_persona
from trajforge.generators.rollout import run_rollout
from trajforge.generators.run_domains import RunDomains
from trajforge.generators.task_verification import verify_task
from trajforge.generators.tooling import Domain
from trajforge.schemas import (
    LLMError,
    Provenance,
    Rejected,
    RejectionReason,
    SamplingParams,
    Task,
    Trajectory,
    derive_seed,
)
from trajforge.verifiers.gate import gate_verdict
from trajforge.verifiers.policy import PolicyFilter

#: What an attempt must pass besides the outcome check: the domain's declared policy rules.
CHECKS = (PolicyFilter(),)


class EvalConfig(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    tasks: str | None = None  # run directory with held-out tasks
    split: str = "golden"  # the split of `tasks` to evaluate on, every task of it
    max_tasks: int | None = Field(default=None, ge=1)  # cap on `tasks`' split (the first N)
    domain: str = "retail"
    num_tasks: int = Field(default=8, ge=1)  # fresh tasks from seeds (without `tasks`)
    seed: int = 0
    k: int = Field(default=1, ge=1)
    max_turns: int = Field(default=20, ge=1)
    max_steps: int = Field(default=40, ge=1)
    max_in_flight: int = Field(default=8, ge=1)
    max_batch_size: int = Field(default=8, ge=1)  # rows per generate of a model directory
    temperature: float = Field(default=0.0, ge=0, le=2)
    max_tokens: int = Field(default=512, ge=1)
    family: str | None = None
    base_url: str | None = None
    user: Literal["scripted", "llm"] = "scripted"
    user_model: str = "local"  # `user: llm`: an agent spec (local, openai:MODEL, vllm:PATH, ...)

    @model_validator(mode="after")
    def _tasks_or_domain(self) -> EvalConfig:
        if self.tasks is not None and not Path(self.tasks).is_dir():
            raise ValueError(f"tasks: {self.tasks} is not a directory; give a finished run dir")
        if self.tasks is None and self.max_tasks is not None:
            raise ValueError(
                "max_tasks: caps the split of a run directory; give --tasks RUN, or use "
                "--num-tasks N for fresh tasks"
            )
        return self

    @model_validator(mode="after")
    def _user_model_is_a_model(self) -> EvalConfig:
        if self.user != "llm":
            return self
        if self.user_model == "oracle":
            raise ValueError(
                "user_model: the oracle is an agent, not a user; give local, openai:MODEL, "
                "vllm:PATH, scripted:RESPONDER or a model directory"
            )
        try:
            parse_agent(self.user_model)
        except ValueError as err:
            raise ValueError(str(err).replace("--model", "user_model (--user-model)")) from None
        return self


class AttemptResult(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    task_id: str
    attempt: int
    passed: bool
    reason: str  # what the checks said (or the error that ended the attempt)
    failures: tuple[RejectionReason, ...] = ()  # typed: outcome and policy rules that failed
    trajectory: Trajectory | None = None  # the conversation (None: an error ended it early)


class AttemptTranscript(BaseModel):
    """One line of `--transcripts`: an attempt of an agent, its verdict and its conversation."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    agent: str
    task_id: str
    attempt: int
    passed: bool
    failures: tuple[RejectionReason, ...]
    reason: str
    trajectory: Trajectory | None


class TaskResult(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    task_id: str
    task_types: tuple[str, ...]
    complexity: int
    attempts: int
    successes: int
    reasons: tuple[str, ...]
    failures: dict[str, int] = {}  # typed reason -> attempts of this task that failed it


class EvalReport(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    agent: str
    k: int
    overall: GroupScore
    by_task_type: dict[str, GroupScore]
    by_complexity: dict[str, GroupScore]
    tasks: tuple[TaskResult, ...]
    tasks_skipped: dict[str, int] = {}  # fresh tasks not synthesised or verified: reason -> count
    failures: dict[str, int] = {}  # typed reason -> failing attempts (one may fail several)
    user: str = "scripted"
    baseline: GroupScore | None = None  # the build agent's k attempts on these tasks, if any
    split: str | None = None  # the run's split evaluated on (None: fresh tasks)
    tasks_left_out: int = 0  # tasks of that split not evaluated (`--max-tasks`)


class HeldOut(BaseModel):
    """The tasks an evaluation runs and what it did not: fresh tasks that failed synthesis or
    verification (reason -> count), and tasks of a run's split beyond `max_tasks`."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    tasks: tuple[Task, ...]
    skipped: dict[str, int] = {}
    left_out: int = 0


def select_tasks(cfg: EvalConfig, domain: Domain) -> HeldOut:
    """Every task of a run's split (the first `max_tasks` if set), or fresh tasks from
    eval-only seeds. A caller that has read the split already (`read_split`, for its domain)
    takes `first_tasks` of it instead of reading it again."""
    if cfg.tasks is None:
        tasks, skipped = fresh_tasks(domain, "eval", cfg.seed, cfg.num_tasks)
        return HeldOut(tasks=tuple(tasks), skipped=skipped)
    return first_tasks(split_tasks(cfg.tasks, cfg.split), cfg.max_tasks)


def first_tasks(tasks: Sequence[Task], max_tasks: int | None) -> HeldOut:
    """A run split's tasks, the first `max_tasks` if set, and how many were left out."""
    kept = tasks[:max_tasks] if max_tasks is not None else tasks
    return HeldOut(tasks=tuple(kept), left_out=len(tasks) - len(kept))


def held_out_tasks(cfg: EvalConfig, domain: Domain) -> tuple[list[Task], dict[str, int]]:
    """(tasks, skipped by reason) of `select_tasks`, for callers that need no more."""
    held = select_tasks(cfg, domain)
    return list(held.tasks), held.skipped


@dataclass(frozen=True)
class SplitTasks:
    """A run's split read once: its tasks (each once, in file and row order) and the domain
    they carry (a dataclass: a domain is behaviour, not a record)."""

    domain: Domain
    tasks: tuple[Task, ...]


def read_split(run_dir: str | Path, split: str = "golden") -> SplitTasks:
    """Exactly `split` of a run, read once, and its tasks' domain: never a `domain` option
    (which picks the domain of fresh tasks) but the name the tasks carry, resolved through the
    run's own config.json, where a plug-in domain's import path lives (a directory without
    one: built-in domains only). Eval, OPD and the RL environments all take a run's tasks
    through here; each used to read the split once for the domain and again for the tasks."""
    domains = RunDomains.of_local_run(run_dir)
    tasks = split_tasks(run_dir, split)
    used = sorted({t.domain for t in tasks})
    if len(used) > 1:
        raise FinetuneConfigError(
            f"tasks: the {split} split of {run_dir} mixes domains ({', '.join(used)}); "
            "give a run of one domain"
        )
    if not used and not domains.configured:
        raise FinetuneConfigError(f"tasks: {run_dir} has no {split} tasks")
    domain = domains.get(used[0]) if used else domains.only()
    return SplitTasks(domain=domain, tasks=tuple(tasks))


def split_tasks(run_dir: str | Path, split: str) -> list[Task]:
    """The tasks of exactly `split` of a run, each once, in file and row order."""
    return [t.task for t in split_trajectories(run_dir, split)]


def fresh_tasks(
    domain: Domain, namespace: str, seed: int, count: int
) -> tuple[list[Task], dict[str, int]]:
    """(tasks, skipped by typed reason): verified tasks from seeds in their own namespace
    ("eval", "opd", ...), so evaluation and training never share a task."""

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
    task: Task,
    attempt: int,
    domain: Domain,
    agent: AgentPolicy,
    make_user: UserFactory,
    cfg: EvalConfig,
    label: str,
) -> AttemptResult:
    seed = derive_seed(task.id, "eval", attempt)
    try:
        trajectory: Trajectory = await run_rollout(
            task,
            domain,
            agent,
            make_user(task, domain),
            max_turns=cfg.max_turns,
            max_steps=cfg.max_steps,
            seed=seed,
            provenance=Provenance(models={"agent": label}, seeds={"eval": seed}),
        )
    except (LLMError, Rejected) as err:
        failure = err.reason if isinstance(err, Rejected) else "generation_failed"
        return AttemptResult(
            task_id=task.id, attempt=attempt, passed=False, reason=f"error: {err}",
            failures=(failure,),
        )  # fmt: skip
    verdict = gate_verdict(trajectory, domain, CHECKS)
    return AttemptResult(
        task_id=task.id,
        attempt=attempt,
        passed=verdict.kept,
        reason="; ".join(f"{r.reason}: {r.detail}" for r in verdict.reasons) or "passed",
        failures=tuple(r.reason for r in verdict.reasons),
        trajectory=trajectory,
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
            failures=_failure_counts(by_task[t.id]),
        )
        for t in tasks
    ]


def _failure_counts(attempts: Sequence[AttemptResult]) -> dict[str, int]:
    """Typed reason -> attempts failing it (each attempt counts a reason once)."""
    counts = Counter(reason for a in attempts for reason in set(a.failures))
    return dict(sorted(counts.items()))


def build_report(
    label: str,
    k: int,
    results: Sequence[TaskResult],
    skipped: dict[str, int] | None = None,
    user: str = "scripted",
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
        failures=dict(sorted(sum((Counter(r.failures) for r in results), Counter()).items())),
        user=user,
    )


def evaluate(
    cfg: EvalConfig,
    spec: AgentSpec,
    tasks: Sequence[Task],
    domain: Domain,
    skipped: dict[str, int] | None = None,
    left_out: int = 0,
) -> EvalReport:
    """k attempts of the agent on every task, concurrently; the scored report (`skipped`
    and `left_out` as `select_tasks` found them)."""
    attempts = run_attempts(cfg, spec, tasks, domain)
    return score_attempts(cfg, spec, tasks, attempts, skipped, left_out)


def run_attempts(
    cfg: EvalConfig, spec: AgentSpec, tasks: Sequence[Task], domain: Domain
) -> list[AttemptResult]:
    """k attempts of the agent on every task, run concurrently, each with its verdict and
    conversation, in task then attempt order."""
    sampling = SamplingParams(temperature=cfg.temperature, max_tokens=cfg.max_tokens)
    make_agent: Callable[[Task, Domain], AgentPolicy] = agent_factory(
        spec, sampling, cfg.family, cfg.base_url, cfg.max_batch_size
    )
    make_user = user_factory(_user_spec(cfg), cfg.family, cfg.base_url)
    works = [
        (
            lambda t=task, a=attempt: _attempt(
                t, a, domain, make_agent(t, domain), make_user, cfg, spec.label
            )
        )
        for task in tasks
        for attempt in range(cfg.k)
    ]
    return run_all(works, cfg.max_in_flight)


def score_attempts(
    cfg: EvalConfig,
    spec: AgentSpec,
    tasks: Sequence[Task],
    attempts: Sequence[AttemptResult],
    skipped: dict[str, int] | None = None,
    left_out: int = 0,
) -> EvalReport:
    """The scored report of `run_attempts`' attempts."""
    user_spec = _user_spec(cfg)
    user = "scripted" if user_spec is None else f"llm:{user_spec.label}"
    report = build_report(spec.label, cfg.k, _task_results(tasks, attempts), skipped, user)
    return report.model_copy(
        update={
            "baseline": baseline_score(cfg, tasks),
            "split": cfg.split if cfg.tasks is not None else None,
            "tasks_left_out": left_out,
        }
    )


def _user_spec(cfg: EvalConfig) -> AgentSpec | None:
    return None if cfg.user == "scripted" else parse_agent(cfg.user_model)


def write_transcripts(path: str | Path, attempts: Sequence[AttemptTranscript]) -> None:
    """Every attempt as one JSON line (`write_atomically`)."""
    write_atomically(path, "".join(a.model_dump_json() + "\n" for a in attempts))


def write_atomically(path: str | Path, text: str) -> None:
    """Write beside the target and rename onto it, so a reader sees the whole file or none
    of it (an interrupted run leaves no half file)."""
    path = Path(path)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        tmp.write_text(text)
        os.replace(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)


def transcripts_of(label: str, attempts: Sequence[AttemptResult]) -> list[AttemptTranscript]:
    """`--transcripts` lines of one agent's attempts."""
    return [
        AttemptTranscript(
            agent=label,
            task_id=a.task_id,
            attempt=a.attempt,
            passed=a.passed,
            failures=a.failures,
            reason=a.reason,
            trajectory=a.trajectory,
        )
        for a in attempts
    ]


def baseline_score(cfg: EvalConfig, tasks: Sequence[Task]) -> GroupScore | None:
    """The difficulty a build measured on these tasks (`rollout.attempts` > 1) as a score:
    how the build's own agent did, next to the evaluated one. pass^j up to the fewest attempts."""
    if cfg.tasks is None:
        return None

    measured = load_task_difficulty(cfg.tasks, cfg.split)
    pairs = [(d.attempts, d.successes) for t in tasks if (d := measured.get(t.id))]
    return score(pairs, min(n for n, _ in pairs)) if pairs else None


#: Width of a table cell: "0.533 [0.43,0.63]" (the score, then its 95% interval).
CELL = 18


def format_table(reports: Sequence[EvalReport]) -> str:
    """One row per group (overall, each task type, each complexity), one column block per agent;
    each cell is the score and its 95% interval. No `success` column: it is pass^1 (mean c/n)
    by definition, as pass@1 is (both stay in the JSON)."""
    k = reports[0].k
    metrics = [f"pass^{j}" for j in range(1, k + 1)] + ([f"pass@{k}"] if k > 1 else [])
    groups: dict[str, list[GroupScore | None]] = {"overall": [r.overall for r in reports]}
    for attr, prefix in (("by_task_type", "type: "), ("by_complexity", "complexity ")):
        keys = sorted({key for r in reports for key in getattr(r, attr)})
        for key in keys:
            groups[prefix + key] = [getattr(r, attr).get(key) for r in reports]
    width = CELL * len(metrics)
    head = f"{'group':<28}{'tasks':>6}" + "".join(f"  {r.agent[-width:]:>{width}}" for r in reports)
    sub = " " * 34 + "".join("  " + "".join(f"{m:>{CELL}}" for m in metrics) for _ in reports)
    lines = [head, sub, "-" * len(sub)]
    for name, scores in groups.items():
        tasks = next((s.tasks for s in scores if s is not None), 0)
        cells = [
            "".join(_cell(s, m) for m in metrics) if s and s.tasks else f"{'-':>{width}}"
            for s in scores
        ]
        lines.append(f"{name:<28}{tasks:>6}" + "".join("  " + c for c in cells))
    lines.append(
        "score [95% interval]: Wilson over attempts for pass^1, bootstrap over tasks for k > 1"
    )
    return "\n".join(lines + _failure_lines(reports))


def _cell(s: GroupScore, metric: str) -> str:
    """`0.533 [0.43,0.63]`, right-aligned; the bare score when the report has no interval."""
    value = _value(s, metric)
    ci = s.ci.get(metric)
    text = f"{value:.3f} [{ci[0]:.2f},{ci[1]:.2f}]" if ci else f"{value:.3f}"
    return f"{text:>{CELL}}"


def _value(s: GroupScore, metric: str) -> float:
    table = s.pass_hat if metric.startswith("pass^") else s.pass_at
    return table[int(metric[5:])]


def _failure_lines(reports: Sequence[EvalReport]) -> list[str]:
    """Failing attempts per typed reason (outcome parts, policy rules), one line per agent;
    then the build's baseline difficulty on these tasks, when it measured one."""
    lines = []
    base = reports[0].baseline
    if base is not None:
        hats = ", ".join(f"pass^{j} {_cell(base, f'pass^{j}').strip()}" for j in base.pass_hat)
        lines.append(
            f"build agent's baseline ({base.tasks} of these tasks, k attempts in the build): {hats}"
        )
    for r in reports:
        counts = ", ".join(f"{reason} {n}" for reason, n in r.failures.items()) or "none"
        lines.append(f"failing attempts by reason, {r.agent} (user {r.user}): {counts}")
    return ["", *lines]
