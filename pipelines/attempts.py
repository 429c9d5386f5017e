"""k attempts per task (`rollout.attempts`): the fan-out record, the per-task grouping, the
difficulty label and the build's accounting in attempts (pure functions, no Beam).

Why: APIGen-MT and tau2-bench roll each task out several times; the distinct passing attempts
are more training data, and the fraction that passes is the task's difficulty for the agent
that generated it, which trainers use to weight or filter rows and which the golden split
carries as a baseline. An attempt "passes" when it survives every gate of the build (outcome,
the judge when it gates, the shortcut filters). An attempt that errored (dead-lettered) counts
as a failure: K is the denominator, so a task's pass rate never rises because calls failed.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from trajforge.pipelines.manifest import Accounting, Outputs
from trajforge.pipelines.stages import exported_messages
from trajforge.schemas import Difficulty, Record, Rejection, Task, Trajectory, content_hash

STAGE = "attempts"
#: Stages that see a task before it fans out into K attempts: what they refuse counts K times.
TASK_STAGES = ("synthesize", "verify_task", "baseline")
NO_PASS = "no_passing_attempt"
DUPLICATE = "duplicate_attempt"


class TaskAttempt(Record):
    """One of the K rollouts of a task: the Generate stage's element when K > 1."""

    id: str
    task: Task
    attempt: int

    @classmethod
    def of(cls, task: Task, attempt: int) -> TaskAttempt:
        return cls(id=f"{task.id}/attempt-{attempt}", task=task, attempt=attempt)


class TaskDifficulty(Record):
    """A task and its difficulty: the payload of a `no_passing_attempt` rejection and the
    input of the build's difficulty summary (hard-task mining reads these)."""

    id: str  # the task id
    task: Task
    difficulty: Difficulty


class TaskDifficultyRow(Record):
    """One line of `difficulty/*.jsonl`: every rolled-out task's difficulty with what a
    trainer filters by (hard-task mining reads these; the full task is in the rows or in the
    `no_passing_attempt` rejection)."""

    task_id: str
    domain: str
    task_types: tuple[str, ...]
    complexity: int
    difficulty: Difficulty

    @classmethod
    def of(cls, labelled: TaskDifficulty) -> TaskDifficultyRow:
        intent = labelled.task.intent
        return cls(
            task_id=labelled.id,
            domain=labelled.task.domain,
            task_types=tuple(intent.task_types),
            complexity=intent.complexity,
            difficulty=labelled.difficulty,
        )


class AttemptGroup(Record):
    """What the grouping decided for one task: the distinct passing attempts (difficulty
    attached), the refused ones, and the task's difficulty."""

    task_difficulty: TaskDifficulty
    kept: tuple[Trajectory, ...] = ()
    rejections: tuple[Rejection, ...] = ()


def expand_attempts(task: Task, k: int) -> list[TaskAttempt]:
    return [TaskAttempt.of(task, attempt) for attempt in range(k)]


def attempt_of(trajectory: Trajectory) -> int:
    """The attempt index the Generate stage recorded in the provenance (0 when absent)."""
    return trajectory.provenance.seeds.get("attempt", 0)


def message_key(trajectory: Trajectory) -> str:
    """Content hash of the exported messages: two attempts are the same training row when
    their messages (control tokens stripped, as exported) are equal."""
    return content_hash(exported_messages(trajectory), 32)


def _rejection(record_id: str, reason: str, detail: str, payload: Record) -> Rejection:
    return Rejection(
        record_id=record_id,
        stage=STAGE,
        reason=reason,
        detail=detail,
        payload_json=payload.to_json(),
    )


def group_attempts(
    task: Task, passed: Iterable[Trajectory], k: int, copies: int = 1
) -> AttemptGroup:
    """Label the task with c-of-K difficulty; keep the first attempt of each distinct
    message content (by attempt index), refuse the repeats; refuse a task with no pass.

    `copies`: how many seed indices synthesised this same task (ids are content hashes, so
    two seeds can meet on one task); its attempts then number copies x K."""
    ordered = sorted(passed, key=lambda t: (attempt_of(t), t.id))
    difficulty = Difficulty.of(copies * k, len(ordered))
    labelled = TaskDifficulty(id=task.id, task=task, difficulty=difficulty)
    if not ordered:
        detail = (
            f"0 of {copies * k} attempts passed (pass_rate 0.0); see the attempts' own "
            "rejections and dead letters"
        )
        return AttemptGroup(
            task_difficulty=labelled, rejections=(_rejection(task.id, NO_PASS, detail, labelled),)
        )
    first_of: dict[str, Trajectory] = {}
    kept: list[Trajectory] = []
    rejections: list[Rejection] = []
    for trajectory in ordered:
        key = message_key(trajectory)
        if key in first_of:
            detail = (
                f"attempt {attempt_of(trajectory)} repeats the messages of attempt "
                f"{attempt_of(first_of[key])} ({first_of[key].id})"
            )
            rejections.append(_rejection(trajectory.id, DUPLICATE, detail, trajectory))
            continue
        first_of[key] = trajectory
        kept.append(trajectory.model_copy(update={"difficulty": difficulty}))
    return AttemptGroup(task_difficulty=labelled, kept=tuple(kept), rejections=tuple(rejections))


def difficulty_summary(labelled: Sequence[TaskDifficulty], k: int) -> dict[str, Any]:
    """The baseline difficulty of every task that was rolled out: mean pass rate and pass^j
    (j = 1..K) over tasks, with tasks no attempt passed included (they are the hardest)."""
    n = len(labelled)
    mean = lambda xs: round(sum(xs) / n, 4) if n else None  # noqa: E731
    return {
        "attempts_per_task": k,
        "tasks": n,
        "tasks_without_passing_attempt": sum(t.difficulty.successes == 0 for t in labelled),
        "mean_pass_rate": mean([t.difficulty.pass_rate for t in labelled]),
        "pass_hat_k": {
            str(j): mean([t.difficulty.pass_hat_k[j - 1] for t in labelled])
            for j in range(1, k + 1)
        },
        "pass_rate_histogram": _histogram([t.difficulty.successes for t in labelled], k),
    }


def _histogram(successes: Sequence[int], k: int) -> dict[str, int]:
    """Tasks per number of passing attempts (`"0"` .. `"K"`)."""
    return {str(c): sum(s == c for s in successes) for c in range(k + 1)}


def accounting(num_tasks: int, k: int, outputs: Outputs) -> Accounting:
    """The build's identity in attempts: num_tasks x K = kept + rejected + dead_lettered.

    A task refused (or dead-lettered) before it fans out takes its K attempts with it; every
    later record is one attempt (kept row, rejection, dead letter). The task-level
    `no_passing_attempt` rejections are not attempts (each of that task's K attempts already has
    its own rejection or dead letter) and are reported beside the identity. With K = 1 this is
    the familiar per-task identity."""
    rejected_by_stage = outputs.rejected_by_stage
    dead_by_stage = outputs.dead_letter_by_stage
    task_rejected = sum(sum(rejected_by_stage.get(s, {}).values()) for s in TASK_STAGES)
    task_dead = sum(dead_by_stage.get(s, 0) for s in TASK_STAGES)
    no_pass = rejected_by_stage.get(STAGE, {}).get(NO_PASS, 0)
    rejected = outputs.rejected - no_pass - task_rejected + k * task_rejected
    dead = outputs.dead_lettered - task_dead + k * task_dead
    inputs = num_tasks * k
    return Accounting(
        unit="attempt" if k > 1 else "task",
        attempts_per_task=k,
        inputs=inputs,
        kept=outputs.kept,
        rejected=rejected,
        dead_lettered=dead,
        tasks_refused_before_attempts=task_rejected + task_dead,
        tasks_without_passing_attempt=no_pass,
        holds=inputs == outputs.kept + rejected + dead,
    )
