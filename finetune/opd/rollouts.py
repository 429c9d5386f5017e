"""Student rollouts in the simulated environments, recorded as token sequences.

The rollout loop is the one every build and evaluation uses (generators.rollout.run_rollout):
the domain's tools on the live state, the scripted simulated user, the same terminations. OPD
(or an LLM user from a backend config, as builds use) only plugs in a `TokenAgent` (the student, or a Guided teacher turn) and the `TokenTranscript`
as the loop's observer. A rollout that fails (a rejected user turn, an LLM error) is dropped and
counted by its typed reason, never trained on.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from trajforge.finetune.opd.guided import GuidedSchedule
from trajforge.finetune.opd.sampling import TokenAgent, TokenSampler
from trajforge.finetune.opd.transcript import ChatRenderer, RolloutTokens, TokenTranscript
from trajforge.generators.llm.concurrency import run_all
from trajforge.generators.rollout import run_rollout
from trajforge.generators.tooling import Domain
from trajforge.generators.user import ScriptedUser, UserSimulator
from trajforge.schemas import LLMError, Provenance, Rejected, Task, Trajectory, derive_seed


@dataclass(frozen=True)
class RolloutJob:
    """One rollout to sample: which task, under which id and seed, at which training step."""

    task: Task
    record_id: str
    seed: int
    step: int


@dataclass(frozen=True)
class Rollout:
    tokens: RolloutTokens
    trajectory: Trajectory


@dataclass(frozen=True)
class Sampled:
    """A batch of finished rollouts and the typed reasons of the ones dropped."""

    rollouts: list[Rollout]
    dropped: Counter[str]


@dataclass(frozen=True)
class RolloutSetup:
    """Everything a rollout needs besides its job (shared by a whole step)."""

    domain: Domain
    renderer: ChatRenderer
    tokenizer: Any
    student: TokenSampler
    teacher: TokenSampler | None = None
    guided: GuidedSchedule | None = None
    max_turns: int = 8
    max_tool_steps: int = 16
    user_factory: Callable[[Task], UserSimulator] = ScriptedUser


def step_jobs(tasks: Sequence[Task], step: int, count: int, namespace: str) -> list[RolloutJob]:
    """The rollouts of a step: tasks taken in turn (the k-th rollout of the run gets task
    k mod len(tasks)), seeds from (task id, namespace, step, index)."""
    jobs = []
    for i in range(count):
        task = tasks[(step * count + i) % len(tasks)]
        record_id = f"{task.id}:{namespace}:{step}:{i}"
        jobs.append(RolloutJob(task, record_id, derive_seed(task.id, namespace, step, i), step))
    return jobs


async def _rollout(job: RolloutJob, setup: RolloutSetup) -> Rollout:
    transcript = TokenTranscript(setup.renderer, setup.domain.toolbox.specs)
    agent = TokenAgent(
        transcript,
        setup.tokenizer,
        setup.student,
        teacher=setup.teacher,
        guided=setup.guided,
        step=job.step,
        record_id=job.record_id,
    )
    trajectory = await run_rollout(
        job.task,
        setup.domain,
        agent,
        setup.user_factory(job.task),
        max_turns=setup.max_turns,
        max_steps=setup.max_tool_steps,
        seed=job.seed,
        provenance=Provenance(models={"agent": "opd-student"}, seeds={"rollout": job.seed}),
        observer=transcript,
    )
    return Rollout(transcript.finish(), trajectory)


def sample_rollouts(jobs: Sequence[RolloutJob], setup: RolloutSetup) -> Sampled:
    """Run the jobs one at a time (one model, one sampler) on the runtime's shared loop."""
    results = run_all(
        [(lambda j=job: _rollout(j, setup)) for job in jobs], 1, return_exceptions=True
    )
    rollouts, dropped = [], Counter()
    for result in results:
        if isinstance(result, Rejected):
            dropped[result.reason] += 1
        elif isinstance(result, LLMError):
            dropped["generation_failed"] += 1
        elif isinstance(result, BaseException):
            raise result
        else:
            rollouts.append(result)
    return Sampled(rollouts, dropped)
